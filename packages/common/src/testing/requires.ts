import { describe, it } from 'vitest';
import { NotFoundError } from '../errors.js';

/**
 * A describe block that needs an installed tool. When `missing` explains what is absent, the
 * block is skipped with that message locally, and fails when CI is set, so a CI machine missing
 * the tool can never pass silently.
 */
export function describeRequiring(
  name: string,
  missing: string | undefined,
  body: () => void,
): void {
  if (missing === undefined) {
    describe(name, body);
    return;
  }
  if (process.env.CI) {
    describe(name, () => {
      it(`needs: ${missing}`, () => {
        throw new NotFoundError(`${missing}; CI requires these tests to run (see .ci/run)`);
      });
    });
    return;
  }
  console.warn(`Skipping "${name}": ${missing}`);
  describe.skip(name, () => it('needs a missing tool', () => undefined));
}
