/** A loaded OpenAPI 3.0/3.1 source description: operations, servers, security schemes. */
import { getByPointer, joinPointer, parsePointer } from './json-pointer.js';

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

type Json = Record<string, unknown>;

export interface Operation {
  source: OpenApiSource;
  /** path template, e.g. /users/{id} */
  path: string;
  method: string;
  operation: Json;
  /** JSON pointer of the operation object inside the source document */
  pointer: string;
  servers: unknown[];
}

export type SecurityRequirement = Record<string, string[]>;

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export class OpenApiSource {
  readonly operations: Operation[] = [];
  readonly byOperationId = new Map<string, Operation>();

  constructor(
    readonly name: string,
    /** absolute path or URL the document was loaded from */
    readonly location: string,
    readonly doc: Json,
  ) {
    const paths = isObject(doc.paths) ? doc.paths : {};
    for (const [path, rawItem] of Object.entries(paths)) {
      const item = this.deref(rawItem);
      if (!isObject(item)) continue;
      for (const method of HTTP_METHODS) {
        const operation = this.deref(item[method]);
        if (!isObject(operation)) continue;
        const op: Operation = {
          source: this,
          path,
          method,
          operation,
          pointer: joinPointer('paths', path, method),
          servers: this.serversOf(operation, item),
        };
        this.operations.push(op);
        if (
          typeof operation.operationId === 'string' &&
          !this.byOperationId.has(operation.operationId)
        ) {
          this.byOperationId.set(operation.operationId, op);
        }
      }
    }
  }

  get title(): string {
    return isObject(this.doc.info) && typeof this.doc.info.title === 'string'
      ? this.doc.info.title
      : '';
  }

  /** Follows local `$ref`s ("#/..."); an external or dangling reference gives undefined. */
  deref(node: unknown, seen: Set<string> = new Set()): unknown {
    if (!isObject(node) || typeof node.$ref !== 'string') return node;
    const ref = node.$ref;
    if (!ref.startsWith('#') || seen.has(ref)) return undefined;
    seen.add(ref);
    let target: unknown;
    try {
      target = getByPointer(this.doc, decodeURIComponent(ref.slice(1)));
    } catch {
      return undefined;
    }
    return this.deref(target, seen);
  }

  /** Every `$ref` in the document that does not resolve locally, with its pointer. */
  unresolvedRefs(): { pointer: string; ref: string }[] {
    const found: { pointer: string; ref: string }[] = [];
    const walk = (node: unknown, pointer: string) => {
      if (Array.isArray(node)) {
        node.forEach((item, i) => {
          walk(item, `${pointer}/${i}`);
        });
      } else if (isObject(node)) {
        if (typeof node.$ref === 'string' && this.deref(node) === undefined) {
          found.push({ pointer: `${pointer}/$ref`, ref: node.$ref });
        }
        for (const [key, value] of Object.entries(node)) {
          if (key !== '$ref') walk(value, `${pointer}${joinPointer(key)}`);
        }
      }
    };
    walk(this.doc, '');
    return found;
  }

  /** The operation a JSON pointer (from an operationPath) designates, if any. */
  operationAt(pointer: string): Operation | undefined {
    let tokens: string[];
    try {
      tokens = parsePointer(pointer);
    } catch {
      return undefined;
    }
    if (tokens.length !== 3 || tokens[0] !== 'paths') return undefined;
    const method = tokens[2]!.toLowerCase();
    return this.operations.find((op) => op.path === tokens[1] && op.method === method);
  }

  private serversOf(operation: Json, item: Json): unknown[] {
    for (const candidate of [operation.servers, item.servers, this.doc.servers]) {
      if (Array.isArray(candidate) && candidate.length > 0) return candidate;
    }
    return [];
  }

  /** Security alternatives for an operation: operation, else path item, else root. */
  securityFor(op: Operation): SecurityRequirement[] {
    const item = this.deref((this.doc.paths as Json)[op.path]) as Json;
    for (const candidate of [op.operation.security, item.security, this.doc.security]) {
      if (Array.isArray(candidate)) return candidate.filter(isObject) as SecurityRequirement[];
    }
    return [];
  }

  securityScheme(name: string): Json | undefined {
    const components = isObject(this.doc.components) ? this.doc.components : {};
    const schemes = isObject(components.securitySchemes) ? components.securitySchemes : {};
    const scheme = this.deref(schemes[name]);
    return isObject(scheme) ? scheme : undefined;
  }
}
