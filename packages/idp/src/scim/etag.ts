import { ScimError } from './errors.js';

/**
 * Resource versions as weak entity tags (RFC 7644 §3.14): `meta.version` and the `ETag` header
 * carry `W/"<n>"`, n being the resource's version counter in the database.
 */
export const etagOf = (version: number): string => `W/"${version}"`;

/** The opaque tags of an `If-Match`/`If-None-Match` value, or `*` (RFC 7232 §3.1, §3.2). */
function listedTags(header: string): '*' | string[] {
  if (header.trim() === '*') return '*';
  return (header.match(/(W\/)?"[^"]*"/g) ?? []).map((tag) => tag.replace(/^W\//, ''));
}

/**
 * Whether `header` names the resource's current version. Weak comparison for both headers:
 * SCIM's versions are weak tags and RFC 7644 §3.14 sends them in `If-Match` as they were given.
 */
export function tagMatches(header: string, etag: string): boolean {
  const tags = listedTags(header);
  return tags === '*' || tags.includes(etag.replace(/^W\//, ''));
}

/**
 * A write's precondition: without `If-Match` anything goes; otherwise the version read inside
 * the write's transaction must be one it names (412 when not, RFC 7232 §4.2).
 */
export function assertIfMatch(ifMatch: string | undefined, version: number): void {
  if (ifMatch === undefined || tagMatches(ifMatch, etagOf(version))) return;
  throw new ScimError(
    412,
    `The resource has changed: its current version is ${etagOf(version)}, not ${ifMatch.slice(0, 80)}.`,
  );
}
