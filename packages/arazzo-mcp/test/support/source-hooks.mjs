// Module resolution hooks for spawned test processes: `@mcp-identity/<package>` resolves to the
// package's TypeScript sources (compiled by tsx), as vitest's aliases do in-process, so a
// spawned bin never runs a stale build.
const PACKAGES = new URL('../../../', import.meta.url);

export async function resolve(specifier, context, nextResolve) {
  const match = /^@mcp-identity\/([a-z-]+)$/.exec(specifier);
  if (match) return nextResolve(new URL(`${match[1]}/src/index.ts`, PACKAGES).href, context);
  return nextResolve(specifier, context);
}
