import { isJsonObject, type JsonObject } from '@mcp-identity/common';
/** A loaded OpenAPI 3.0/3.1 source description: operations, servers, security schemes. */
import { getByPointer, joinPointer, parsePointer } from './json-pointer.js';

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

export interface Operation {
  source: OpenApiSource;
  /** path template, e.g. /users/{id} */
  path: string;
  method: string;
  operation: JsonObject;
  /** JSON pointer of the operation object inside the source document */
  pointer: string;
  servers: unknown[];
}

export type SecurityRequirement = Record<string, string[]>;

export class OpenApiSource {
  readonly operations: Operation[] = [];
  readonly byOperationId = new Map<string, Operation>();

  constructor(
    readonly name: string,
    /** absolute path or URL the document was loaded from */
    readonly location: string,
    readonly doc: JsonObject,
  ) {
    const paths = isJsonObject(doc.paths) ? doc.paths : {};
    for (const [path, rawItem] of Object.entries(paths)) {
      const item = this.deref(rawItem);
      if (!isJsonObject(item)) continue;
      for (const method of HTTP_METHODS) {
        const operation = this.deref(item[method]);
        if (!isJsonObject(operation)) continue;
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
    return isJsonObject(this.doc.info) && typeof this.doc.info.title === 'string'
      ? this.doc.info.title
      : '';
  }

  /** Follows local `$ref`s ("#/..."); an external or dangling reference gives undefined. */
  deref(node: unknown, seen: Set<string> = new Set()): unknown {
    if (!isJsonObject(node) || typeof node.$ref !== 'string') return node;
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
      } else if (isJsonObject(node)) {
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

  private serversOf(operation: JsonObject, item: JsonObject): unknown[] {
    for (const candidate of [operation.servers, item.servers, this.doc.servers]) {
      if (Array.isArray(candidate) && candidate.length > 0) return candidate;
    }
    return [];
  }

  /** Security alternatives for an operation: operation, else path item, else root. */
  securityFor(op: Operation): SecurityRequirement[] {
    const item = this.deref((this.doc.paths as JsonObject)[op.path]) as JsonObject;
    for (const candidate of [op.operation.security, item.security, this.doc.security]) {
      if (Array.isArray(candidate)) return candidate.filter(isJsonObject) as SecurityRequirement[];
    }
    return [];
  }

  securityScheme(name: string): JsonObject | undefined {
    const components = isJsonObject(this.doc.components) ? this.doc.components : {};
    const schemes = isJsonObject(components.securitySchemes) ? components.securitySchemes : {};
    const scheme = this.deref(schemes[name]);
    return isJsonObject(scheme) ? scheme : undefined;
  }
}
