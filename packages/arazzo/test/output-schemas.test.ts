import { fileURLToPath } from 'node:url';
import { loadArazzo, type WorkflowSummary } from '@mcp-identity/arazzo';
import { Ajv } from 'ajv';
import { beforeAll, describe, expect, it } from 'vitest';

const FIXTURE = fileURLToPath(new URL('./fixtures/typed-outputs.arazzo.yaml', import.meta.url));
let list: Record<string, Record<string, unknown>>;
let get: Record<string, Record<string, unknown>>;
let nested: Record<string, Record<string, unknown>>;

beforeAll(async () => {
  const loaded = await loadArazzo(FIXTURE);
  const schemas = (id: string) =>
    (loaded.workflows.find((w) => w.workflowId === id) as WorkflowSummary).outputSchemas ?? {};
  list = schemas('listItems');
  get = schemas('getItem');
  nested = schemas('nested');
});

describe('workflow output schemas, traced to the OpenAPI responses', () => {
  it('follows $steps and $response.body pointers into allOf members and array items', () => {
    expect(list.total).toEqual({ type: ['integer', 'null'] });
    expect(list.items).toMatchObject({
      type: ['array', 'null'],
      items: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
    });
    // OpenAPI 3.0's boolean exclusiveMinimum becomes the JSON Schema number form.
    expect(list.firstPrice).toEqual({ type: ['number', 'null'], exclusiveMinimum: 0 });
  });

  it('takes error members from the error responses, since outputs are read after a failure', () => {
    expect(list.detail).toEqual({ type: ['string', 'null'] });
    expect(get.lastDetail).toEqual({ type: ['string', 'null'] });
  });

  it('types $statusCode, headers and inputs', () => {
    expect(list.status).toEqual({ type: ['integer', 'null'] });
    expect(list.type).toEqual({ type: ['string', 'null'] });
    expect(list.limit).toEqual({ type: ['integer', 'null'] });
    expect(get.fromOtherWorkflow).toEqual({ type: ['integer', 'null'] });
    expect(nested.fromChildStep).toEqual({ type: ['integer', 'null'] });
  });

  it('unites every JSON response body of a whole-body output, and accepts null', () => {
    const item = get.item as { type: string[]; anyOf: Record<string, unknown>[] };
    expect(item.type).toEqual(['object', 'null']);
    const [bodies, empty] = item.anyOf;
    expect(empty).toEqual({ type: 'null' });
    expect((bodies as { anyOf: unknown[] }).anyOf).toEqual([
      expect.objectContaining({ required: ['id'] }),
      {
        type: 'object',
        properties: {
          detail: { type: 'string' },
          status: { oneOf: [{ type: 'string' }, { type: 'integer' }] },
        },
      },
    ]);
    expect(get.note).toEqual({ type: ['string', 'null'] });
    expect(get.kind).toEqual({
      anyOf: [{ type: 'string', enum: ['a', 'b'] }, { type: 'null' }],
      type: ['string', 'null'],
    });
  });

  it('falls back to the permissive schema only where the value cannot be traced', () => {
    expect(get.opaque).toEqual({}); // the response declares no schema
    expect(get.extraField).toEqual({}); // inside `type: object` with no properties
    expect(get.grandParent).toEqual({}); // the recursive reference is cut
    expect(list.missing).toEqual({}); // no response declares it
    expect(nested.lastResponse).toEqual({}); // the last step runs a workflow, not an operation
  });

  it('produces schemas that accept what the runner can yield, and refuse wrong types', () => {
    const ajv = new Ajv({ strict: false });
    const check = (schema: Record<string, unknown>, value: unknown) => ajv.validate(schema, value);
    expect(check(list.items as Record<string, unknown>, [{ id: 'i1', price: 2, note: null }])).toBe(
      true,
    );
    expect(check(list.items as Record<string, unknown>, null)).toBe(true);
    expect(check(list.items as Record<string, unknown>, [{ price: 2 }])).toBe(false);
    expect(check(list.total as Record<string, unknown>, '3')).toBe(false);
    expect(check(get.item as Record<string, unknown>, { detail: 'Not found', status: '404' })).toBe(
      true,
    );
    expect(check(get.item as Record<string, unknown>, null)).toBe(true);
    expect(check(get.kind as Record<string, unknown>, 'c')).toBe(false);
    expect(check(list.detail as Record<string, unknown>, 404)).toBe(false);
  });
});
