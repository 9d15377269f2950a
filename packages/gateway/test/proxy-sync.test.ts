import { createLogger } from '@mcp-identity/common';
import { describe, expect, it } from 'vitest';
import type { McpProxyDefinition } from '../src/control-plane/definition.js';
import { ProxyMirror, type ProxyTarget } from '../src/control-plane/proxy-sync.js';

/** A routing table with the registry's rule: applying an id first unroutes that id's context. */
class ContextTable implements ProxyTarget {
  readonly byContext = new Map<string, string>();
  private readonly contextById = new Map<string, string>();
  applied = 0;

  apply(id: string, definition: McpProxyDefinition): void {
    this.remove(id);
    this.applied += 1;
    this.byContext.set(definition.spec.context, id);
    this.contextById.set(id, definition.spec.context);
  }

  remove(id: string): void {
    const context = this.contextById.get(id);
    if (context === undefined) return;
    this.byContext.delete(context);
    this.contextById.delete(id);
  }
}

const proxy = (id: string, context: string) => ({
  id,
  definition: { metadata: { name: id }, spec: { context } } as unknown as McpProxyDefinition,
});

describe('ProxyMirror', () => {
  const logger = createLogger({ level: 'silent', pretty: false });

  it('hands a context over from one proxy to another in a single change', () => {
    const table = new ContextTable();
    const mirror = new ProxyMirror(table, logger);
    mirror.replaceAll([proxy('a', '/x')]);
    // b takes /x while a moves to /y; b comes first in the stored order.
    mirror.replaceAll([proxy('b', '/x'), proxy('a', '/y')]);
    expect(Object.fromEntries(table.byContext)).toEqual({ '/x': 'b', '/y': 'a' });
  });

  it('touches only the proxies that changed', () => {
    const table = new ContextTable();
    const mirror = new ProxyMirror(table, logger);
    mirror.replaceAll([proxy('a', '/a'), proxy('b', '/b')]);
    expect(table.applied).toBe(2);
    mirror.replaceAll([proxy('a', '/a'), proxy('b', '/b2'), proxy('c', '/c')]);
    expect(table.applied).toBe(4);
    mirror.replaceAll([proxy('c', '/c')]);
    expect(Object.fromEntries(table.byContext)).toEqual({ '/c': 'c' });
    expect(table.applied).toBe(4);
  });
});
