import { buildTools, cleanDocstring, ToolShapeError } from '@mcp-identity/arazzo-mcp';
import { describe, expect, it } from 'vitest';

const searchUsers = {
  workflowId: 'searchUsers',
  summary: 'Search users with a SCIM filter. When error is set the call failed.',
  description: 'Longer text that must not be used',
  inputs: {
    type: 'object',
    required: ['filter'],
    properties: {
      filter: { type: 'string', description: 'SCIM filter' },
      count: { type: 'integer', description: 'maximum users' },
      user_options: { type: 'object' },
      tags: { type: 'array', items: { type: 'string' } },
      ratio: { type: 'number' },
      active: { type: 'boolean' },
      anything: {},
    },
  },
  outputs: ['users', 'error', 'errorStatus'],
};

describe('buildTools', () => {
  it('shapes a tool as the reference does: snake name, sorted typed params, all required', () => {
    const [tool] = buildTools([searchUsers]);
    expect(tool?.name).toBe('search_users');
    expect(tool?.description).toBe(searchUsers.summary);
    expect(tool?.inputSchema).toEqual({
      type: 'object',
      properties: {
        active: { type: 'boolean' },
        anything: { type: 'string' },
        count: { type: 'integer' },
        filter: { type: 'string' },
        ratio: { type: 'number' },
        tags: { type: 'string' },
        userOptions: { type: 'string' },
      },
      required: ['active', 'anything', 'count', 'filter', 'ratio', 'tags', 'userOptions'],
    });
    expect(Object.keys(tool?.inputSchema.properties ?? {})).toEqual([
      'active',
      'anything',
      'count',
      'filter',
      'ratio',
      'tags',
      'userOptions',
    ]);
    expect(tool?.outputSchema).toEqual({
      type: 'object',
      properties: { users: {}, error: {}, errorStatus: {} },
      additionalProperties: false,
    });
    expect(tool?.parameters.find((p) => p.name === 'userOptions')).toMatchObject({
      inputName: 'user_options',
      jsonKind: 'object',
    });
  });

  it('honours required and sends descriptions only when asked to', () => {
    const [tool] = buildTools([searchUsers], { honorRequired: true, paramDescriptions: true });
    expect(tool?.inputSchema.required).toEqual(['filter']);
    expect(tool?.inputSchema.properties.filter).toEqual({
      type: 'string',
      description: 'SCIM filter',
    });
  });

  it('falls back from summary to description to a generated text', () => {
    const tools = buildTools([
      { workflowId: 'a', description: '  Described\n  on two lines\n', outputs: [] },
      { workflowId: 'b', summary: '', outputs: [] },
    ]);
    expect(tools.map((t) => t.description)).toEqual([
      'Described\non two lines',
      'Execute the b workflow',
    ]);
    expect(tools[1]?.inputSchema).toEqual({ type: 'object', properties: {} });
  });

  it('refuses colliding and invalid names, listing every problem', () => {
    const attempt = () =>
      buildTools([
        { workflowId: 'listUsers', outputs: [] },
        { workflowId: 'list_users', outputs: [] },
        { workflowId: 'bad.name', outputs: [] },
        {
          workflowId: 'twins',
          inputs: { type: 'object', properties: { user_name: {}, userName: {} } },
          outputs: [],
        },
      ]);
    expect(attempt).toThrow(ToolShapeError);
    try {
      attempt();
    } catch (error) {
      expect((error as ToolShapeError).problems).toEqual([
        "workflows 'listUsers' and 'list_users' both become tool 'list_users'",
        "workflow 'bad.name': tool name 'bad.name' does not match ^[A-Za-z0-9_-]{1,64}$",
        "workflow 'twins': inputs 'user_name' and 'userName' both become argument 'userName'",
      ]);
    }
  });
});

describe('cleanDocstring', () => {
  it('trims like inspect.getdoc', () => {
    expect(cleanDocstring('\n  First\n    indented\n  back\n\n')).toBe('First\n  indented\nback');
    expect(cleanDocstring('Tab\tstop')).toBe('Tab     stop');
  });
});
