import { hashSecret, storedHashProblem, verifySecret } from '@mcp-identity/common';
import { describe, expect, it } from 'vitest';

describe('stored secret hashes', () => {
  it('accepts what hashSecret makes, and verifies against it', async () => {
    const stored = await hashSecret('correct horse');
    expect(storedHashProblem(stored)).toBeUndefined();
    expect(await verifySecret('correct horse', stored)).toBe(true);
    expect(await verifySecret('wrong horse', stored)).toBe(false);
  });

  it('names what is wrong with a malformed hash, which never matches (and never throws)', async () => {
    const stored = await hashSecret('pw');
    const [, , , , salt, hash] = stored.split('$');
    const cases: [string, RegExp][] = [
      ['scrypt$...', /scrypt\$N\$r\$p\$salt\$hash/],
      ['pw', /scrypt\$N\$r\$p\$salt\$hash/],
      [`${stored}$extra`, /scrypt\$N\$r\$p\$salt\$hash/],
      [`scrypt$32768$8$x$${salt}$${hash}`, /positive whole numbers/],
      [`scrypt$1000$8$1$${salt}$${hash}`, /power of 2/],
      // Accepted by the old parser, then scrypt refused it: every login was an error.
      [`scrypt$1048576$8$1$${salt}$${hash}`, /too much memory/],
      [`scrypt$32768$8$1$short$${hash}`, /base64url/],
    ];
    for (const [malformed, problem] of cases) {
      expect(storedHashProblem(malformed)).toMatch(problem);
      expect(await verifySecret('pw', malformed)).toBe(false);
    }
  });
});
