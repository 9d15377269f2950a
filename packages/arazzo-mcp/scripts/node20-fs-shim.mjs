// Conformance ≥0.1.14 imports `globSync` from 'fs', which Node 20 lacks (only its tier-check
// command uses it). Registered with `node --import`, this lets the other commands start on
// Node 20: the conformance bundle gets node:fs plus a globSync that explains itself.
import fs from 'node:fs';
import { register } from 'node:module';

if (typeof fs.globSync !== 'function') {
  register(
    'data:text/javascript,' +
      encodeURIComponent(`
const SHIM = 'data:text/javascript,' + encodeURIComponent(
  "import fs from 'node:fs'; export * from 'node:fs'; export default fs;" +
  "export function globSync() { throw new Error('fs.globSync needs Node 22 (conformance tier-check)'); }"
);
export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') &&
      context.parentURL?.includes('/@modelcontextprotocol/conformance/')) {
    return { url: SHIM, shortCircuit: true };
  }
  return next(specifier, context);
}`),
  );
}
