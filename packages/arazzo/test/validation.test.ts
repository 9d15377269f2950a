import { writeFileSync } from 'node:fs';
import { type ArazzoProblem, ArazzoValidationError, loadArazzo } from '@mcp-identity/arazzo';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { materialize } from './fixtures/api.js';

let docs: ReturnType<typeof materialize>;

beforeAll(() => {
  docs = materialize(
    [
      'invalid.arazzo.yaml',
      'scim.openapi.yaml',
      'broken-source.arazzo.yaml',
      'broken.openapi.yaml',
    ],
    'http://127.0.0.1:9',
  );
});
afterAll(() => docs.remove());

async function problemsOf(name: string): Promise<ArazzoProblem[]> {
  try {
    await loadArazzo(docs.path(name));
  } catch (error) {
    expect(error).toBeInstanceOf(ArazzoValidationError);
    return (error as ArazzoValidationError).problems;
  }
  throw new Error(`${name} loaded without problems`);
}

describe('validation', () => {
  it('reports every problem of a document at once, each with file, JSON pointer and message', async () => {
    const problems = await problemsOf('invalid.arazzo.yaml');
    const file = docs.path('invalid.arazzo.yaml');
    for (const problem of problems) expect(problem.file).toBe(file);
    const at = (pointer: string) =>
      problems.filter((p) => p.pointer === pointer).map((p) => p.message);

    expect(at('/workflows/0/unexpected')).toEqual(['unknown property "unexpected"']);
    expect(at('/workflows/1/steps/1')).toEqual([
      'a step needs exactly one of operationId, operationPath or workflowId',
    ]);
    expect(at('/workflows/0/steps/0/operationId')).toEqual([
      'operationId "noSuchOperation" not found in any source description',
    ]);
    expect(at('/workflows/0/steps/1/operationPath')).toEqual([
      'operationPath pointer "/paths/~1nowhere/get" is not an operation in source "api"',
    ]);
    expect(at('/workflows/0/steps/2/stepId')).toEqual([
      'stepId "two" is used twice in workflow "first"',
    ]);
    expect(at('/workflows/0/dependsOn/1')).toEqual(['workflow "ghost" does not exist']);
    expect(
      problems.some((p) =>
        /dependsOn forms a cycle: (first -> second -> first|second -> first -> second)/.test(
          p.message,
        ),
      ),
    ).toBe(true);
    expect(at('/workflows/0/steps/2/parameters/0')).toEqual([
      'parameter "value" needs "in" (path, query, header or cookie)',
    ]);
    expect(at('/workflows/0/steps/2/parameters/1/reference')).toEqual([
      'reference "$components.parameters.missing" does not exist',
    ]);
    expect(at('/workflows/0/steps/2/parameters/0/value')).toEqual([
      '$inputs.undeclared: workflow "first" declares no input "undeclared"',
    ]);
    expect(at('/workflows/0/steps/2/successCriteria/0/condition')[0]).toMatch(
      /invalid simple condition/,
    );
    expect(at('/workflows/0/steps/2/successCriteria/1/type')).toEqual([
      'xpath criteria are not supported',
    ]);
    expect(at('/workflows/0/steps/2/onFailure/1/stepId')).toEqual([
      'step "nowhere" does not exist in workflow "first"',
    ]);
    expect(at('/workflows/0/steps/2/outputs/bad')[0]).toMatch(
      /invalid runtime expression "\$response.bogus"/,
    );
    expect(at('/workflows/1/steps/0/requestBody/replacements/0/target')).toEqual([
      'only JSON Pointer targets are supported (XPath is not)',
    ]);
    expect(at('/workflows/1/steps/0/outputs/ok')).toEqual([
      '$steps.body.outputs.nope: step "body" has no output "nope"',
    ]);
    // a plain retry action is valid (the corrected v1.0-dev schema)
    expect(
      problems.filter((p) => p.pointer.startsWith('/workflows/0/steps/2/onFailure/0')),
    ).toEqual([]);
  });

  it('accepts a JSON document and reports YAML/JSON syntax errors', async () => {
    const path = `${docs.dir}/syntax.arazzo.json`;
    writeFileSync(path, '{ "arazzo": "1.0.1", "info": ');
    await expect(loadArazzo(path)).rejects.toMatchObject({
      problems: [
        expect.objectContaining({
          file: path,
          pointer: '',
          message: expect.stringMatching(/^not valid YAML or JSON/),
        }),
      ],
    });
  });

  it('reports the version, missing sources and unusable OpenAPI descriptions', async () => {
    const problems = await problemsOf('broken-source.arazzo.yaml');
    const arazzo = docs.path('broken-source.arazzo.yaml');
    const openapi = docs.path('broken.openapi.yaml');
    expect(problems).toEqual(
      expect.arrayContaining([
        {
          file: arazzo,
          pointer: '/sourceDescriptions/0/url',
          message: `source "missing" (${docs.path('does-not-exist.yaml')}): cannot read the document: file not found`,
        },
        {
          file: openapi,
          pointer: '/openapi',
          message: 'only OpenAPI 3.0.x and 3.1.x descriptions are supported',
        },
        {
          file: openapi,
          pointer: '/paths/~1x/get/parameters/0/$ref',
          message:
            'external $ref "other.yaml#/components/parameters/p" is not supported (only local references)',
        },
        {
          file: openapi,
          pointer: '/paths/~1x/get/parameters/1/$ref',
          message: '$ref "#/components/parameters/absent" does not resolve',
        },
        {
          file: arazzo,
          pointer: '/workflows/0/steps/0',
          message:
            'source "broken" declares no server URL; add one or override it with sourceServers',
        },
      ]),
    );
  });

  it('asks for $sourceDescriptions.<name>.<operationId> when an operationId is in several sources', async () => {
    const path = `${docs.dir}/ambiguous.arazzo.yaml`;
    writeFileSync(
      path,
      [
        'arazzo: 1.0.1',
        'info: {title: t, version: v}',
        'sourceDescriptions:',
        '  - {name: scim, url: scim.openapi.yaml}',
        '  - {name: again, url: scim.openapi.yaml}',
        'workflows:',
        '  - workflowId: w',
        '    steps:',
        '      - {stepId: s, operationId: ping}',
        '      - {stepId: t, operationId: $sourceDescriptions.again.ping}',
        '',
      ].join('\n'),
    );
    const error = (await loadArazzo(path).catch((e) => e)) as ArazzoValidationError;
    expect(error.problems).toEqual([
      {
        file: path,
        pointer: '/workflows/0/steps/0/operationId',
        message:
          'operationId "ping" is ambiguous (in scim, again); write $sourceDescriptions.<name>.ping',
      },
    ]);
  });

  it('reports a wrong arazzo version and a missing file', async () => {
    const path = `${docs.dir}/version.arazzo.yaml`;
    writeFileSync(
      path,
      'arazzo: 2.0.0\ninfo: {title: t, version: v}\nsourceDescriptions: []\nworkflows: []\n',
    );
    const error = (await loadArazzo(path).catch((e) => e)) as ArazzoValidationError;
    expect(error.problems.map((p) => p.pointer).sort()).toEqual([
      '/arazzo',
      '/sourceDescriptions',
      '/workflows',
    ]);
    await expect(loadArazzo(`${docs.dir}/nothing.yaml`)).rejects.toMatchObject({
      problems: [
        {
          file: `${docs.dir}/nothing.yaml`,
          pointer: '',
          message: 'cannot read the document: file not found',
        },
      ],
    });
  });
});
