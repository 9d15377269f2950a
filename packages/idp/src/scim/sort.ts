import { isJsonObject, type JsonObject } from '@mcp-identity/common';
import { badRequest } from './errors.js';

/**
 * A resolved `sortBy`/`sortOrder` (RFC 7644 §3.4.2.3). `path` is the attribute's canonical
 * path in the stored or rendered resource: `[name]`, `[name, sub]` or `[urn, name(, sub)]`;
 * `multiValued`: the attribute's value is a list, sorted by its primary entry, else its first.
 */
export type Sort = {
  path: readonly string[];
  multiValued: boolean;
  /** caseExact:false strings sort case-insensitively. */
  caseExact: boolean;
  descending: boolean;
};

/** What an endpoint's schema says of a `sortBy` value, or undefined when it is not sortable. */
export type SortAttribute = Omit<Sort, 'descending'>;

// charon's texts for a sortBy outside the schema and a sortOrder that is neither value.
export const UNKNOWN_SORT_ATTRIBUTE =
  'Given sortby attribute is not found in the attribute schemas.';
const INVALID_SORT_ORDER = 'Invalid sortOrder value is specified';

/** Reads the query's sort, or undefined when it asks for none (`sortOrder` alone sorts nothing). */
export function readSort(
  sortBy: unknown,
  sortOrder: unknown,
  resolve: (attribute: string) => SortAttribute | undefined,
): Sort | undefined {
  let descending = false;
  if (sortOrder !== undefined && sortOrder !== null && sortOrder !== '') {
    const order = String(sortOrder).toLowerCase();
    if (order !== 'ascending' && order !== 'descending') throw badRequest(INVALID_SORT_ORDER);
    descending = order === 'descending';
  }
  if (sortBy === undefined || sortBy === null || sortBy === '') return undefined;
  const attribute = typeof sortBy === 'string' ? resolve(sortBy.trim()) : undefined;
  if (!attribute) throw badRequest(UNKNOWN_SORT_ATTRIBUTE);
  return { ...attribute, descending };
}

/** The value a resource sorts by (undefined when it has none), folded unless caseExact. */
export function sortValue(resource: JsonObject, sort: Sort): string | number | undefined {
  let value: unknown = resource;
  const [first, ...rest] = sort.path;
  value = (value as JsonObject)[first!];
  if (sort.multiValued) value = primaryOrFirst(value);
  for (const key of rest) value = isJsonObject(value) ? value[key] : undefined;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'number') return value;
  if (typeof value !== 'string') return undefined;
  return sort.caseExact ? value : value.toLowerCase();
}

/** RFC 7644 §3.4.2.3: a multi-valued attribute sorts by its primary value, else its first. */
function primaryOrFirst(value: unknown): unknown {
  if (!Array.isArray(value)) return undefined;
  return value.find((v) => isJsonObject(v) && v.primary === true) ?? value[0];
}

/**
 * Orders two sort values: resources without a value last when ascending (first when descending,
 * the reverse order); strings by code point, as SQLite's BINARY collation does.
 */
export function compareSortValues(
  a: string | number | undefined,
  b: string | number | undefined,
  descending: boolean,
): number {
  let order: number;
  if (a === undefined || b === undefined) order = a === b ? 0 : a === undefined ? 1 : -1;
  else if (typeof a === 'number' && typeof b === 'number') order = a - b;
  else {
    const [x, y] = [String(a), String(b)];
    order = x < y ? -1 : x > y ? 1 : 0;
  }
  return descending ? -order : order;
}

/** Sorts resources (stable: ties keep their order, the id order of the lists). */
export function sortResources<T>(
  items: readonly T[],
  sort: Sort,
  view: (item: T) => JsonObject,
): T[] {
  const keyed = items.map((item) => ({ item, key: sortValue(view(item), sort) }));
  keyed.sort((x, y) => compareSortValues(x.key, y.key, sort.descending));
  return keyed.map(({ item }) => item);
}

/**
 * The SQL expression (over the `users` row `u`) of a user's sort value, the same as
 * `sortValue` of its stored record. `scim_fold` is JavaScript's lower-casing (SQLite's `lower`
 * folds ASCII only), registered on every connection that sorts.
 */
function userSortSql(sort: Sort): string {
  const [first, ...rest] = sort.path;
  const column = SORT_COLUMNS[sort.path.join('.')];
  let value: string;
  if (column) {
    value = `u.${column}`;
  } else if (sort.multiValued) {
    const sub = jsonPath(rest);
    const entries = `json_each(u.doc, ${jsonPath([first!])})`;
    value = `coalesce(
      (SELECT json_extract(e.value, ${sub}) FROM ${entries} e
        WHERE json_extract(e.value, '$.primary') = 1 LIMIT 1),
      (SELECT json_extract(e.value, ${sub}) FROM ${entries} e ORDER BY e.key LIMIT 1))`;
  } else {
    value = `json_extract(u.doc, ${jsonPath(sort.path)})`;
  }
  return sort.caseExact ? value : `scim_fold(${value})`;
}

/**
 * The ORDER BY terms of a user sort over the row `u`: the value, without one last when
 * ascending (first when descending), ties in id order.
 */
export function userOrderSql(sort: Sort): string {
  const value = userSortSql(sort);
  const dir = sort.descending ? 'DESC' : 'ASC';
  return `(${value}) IS NULL ${dir}, (${value}) ${dir}, u.id ${dir}`;
}

/** Registers `scim_fold` on a connection (JavaScript's `toLowerCase` of text, else the value). */
export const FOLD_FUNCTION = {
  name: 'scim_fold',
  fold: (value: unknown) => (typeof value === 'string' ? value.toLowerCase() : value),
} as const;

/** Sort values kept in columns of `users` rather than in the document. */
const SORT_COLUMNS: Record<string, string> = {
  id: 'id',
  userName: 'user_name',
  'meta.created': 'created_at',
  'meta.lastModified': 'modified_at',
};

/** A JSON path literal (`'$."a"."b"'`), quoted for SQL. */
function jsonPath(keys: readonly string[]): string {
  const path = `$${keys.map((k) => `."${k.replace(/"/g, '')}"`).join('')}`;
  return `'${path.replace(/'/g, "''")}'`;
}
