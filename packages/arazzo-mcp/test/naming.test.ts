import { camelToSnake, TOOL_NAME_PATTERN, toParameterName } from '@mcp-identity/arazzo-mcp';
import { describe, expect, it } from 'vitest';

describe('camelToSnake (tool names)', () => {
  it.each([
    ['listUsers', 'list_users'],
    ['getUserByID', 'get_user_by_id'],
    ['SCIMUsers', 'scim_users'],
    ['searchUsers', 'search_users'],
    ['addUserToGroup', 'add_user_to_group'],
    ['getV2Roles', 'get_v2_roles'],
    ['getUser2FA', 'get_user2_fa'],
    ['already_snake', 'already_snake'],
    ['apply-coupon', 'apply-coupon'],
    ['HTTPServerStatus', 'http_server_status'],
  ])('%s → %s', (id, name) => {
    expect(camelToSnake(id)).toBe(name);
  });

  it('accepts only names MCP clients accept', () => {
    expect(TOOL_NAME_PATTERN.test('list_users')).toBe(true);
    expect(TOOL_NAME_PATTERN.test('list.users')).toBe(false);
    expect(TOOL_NAME_PATTERN.test('x'.repeat(65))).toBe(false);
  });
});

describe('toParameterName (argument names)', () => {
  it.each([
    ['userId', 'userId'],
    ['user_name', 'userName'],
    ['X-Api-Key', 'xApiKey'],
    ['first name', 'firstName'],
    ['Count', 'count'],
    ['a.b$c', 'abc'],
    ['_user', 'uSer'],
    ['$$$', 'param'],
  ])('%s → %s', (input, name) => {
    expect(toParameterName(input)).toBe(name);
  });
});
