import type { Logger } from '@mcp-identity/common';
import type { McpProxyDefinition } from './definition.js';
import type { ProxyStore } from './store.js';

/** What routes proxies: the registry of a process, or the workers of a `--workers` primary. */
export interface ProxyTarget {
  apply(id: string, definition: McpProxyDefinition): void;
  remove(id: string): void;
}

export interface ProxyEntry {
  id: string;
  definition: McpProxyDefinition;
}

/**
 * Keeps a target equal to a list of definitions, touching only the proxies that changed (a
 * changed proxy gets a fresh upstream pool; the others keep theirs). Local changes from the
 * management API go through `apply`/`remove` too, so the mirror always knows what is routed.
 */
export class ProxyMirror implements ProxyTarget {
  private readonly known = new Map<string, string>();
  private changes = 0;

  constructor(
    private readonly target: ProxyTarget,
    private readonly logger: Logger,
  ) {}

  /** Grows with every change; a reader compares it to tell whether it raced a local change. */
  get revision(): number {
    return this.changes;
  }

  apply(id: string, definition: McpProxyDefinition): void {
    this.changes += 1;
    this.known.set(id, JSON.stringify(definition));
    this.target.apply(id, definition);
  }

  remove(id: string): void {
    this.changes += 1;
    this.known.delete(id);
    this.target.remove(id);
  }

  replaceAll(entries: ProxyEntry[]): void {
    const wanted = new Map(entries.map((e) => [e.id, JSON.stringify(e.definition)]));
    const changed = entries.filter((e) => this.known.get(e.id) !== wanted.get(e.id));
    const changedIds = new Set(changed.map((e) => e.id));
    // Unroute first: a proxy may take over the context that another one leaves in this change.
    for (const id of [...this.known.keys()]) {
      if (!wanted.has(id) || changedIds.has(id)) this.remove(id);
    }
    for (const { id, definition } of changed) {
      try {
        this.apply(id, definition);
      } catch (error) {
        this.logger.error({ proxy: id, err: (error as Error).message }, 'MCP proxy not routed');
      }
    }
  }
}

/**
 * Keeps a mirror equal to the store: at start, on every change the store reports (PostgreSQL
 * NOTIFY from any instance), and every `intervalMs` so that a missed notification heals. While
 * the store is unreachable the proxies known so far keep being served.
 */
export class ProxySync {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private unreachable = false;

  constructor(
    private readonly store: ProxyStore,
    readonly mirror: ProxyMirror,
    private readonly logger: Logger,
    private readonly intervalMs: number,
  ) {}

  /** Loads the stored proxies (failing if the store cannot be read), then follows changes. */
  async start(): Promise<void> {
    await this.reconcile();
    if (this.again) await this.request();
    this.store.watch?.(() => void this.request());
    this.timer = setInterval(() => void this.request(), this.intervalMs);
    this.timer.unref();
  }

  /** Reconciles soon; calls during a reconcile coalesce into one more pass. */
  request(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.passes().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async passes(): Promise<void> {
    do {
      this.again = false;
      try {
        await this.reconcile();
        if (this.unreachable) this.logger.info('configuration database reachable again');
        this.unreachable = false;
      } catch (error) {
        if (!this.unreachable) {
          this.logger.warn(
            { err: (error as Error).message },
            'cannot read the configuration database; serving the MCP proxies known so far',
          );
        }
        this.unreachable = true;
      }
    } while (this.again);
  }

  private async reconcile(): Promise<void> {
    const before = this.mirror.revision;
    const stored = await this.store.list();
    // A local change landed while reading: the list may predate it, so read again.
    if (this.mirror.revision !== before) {
      this.again = true;
      return;
    }
    this.mirror.replaceAll(stored);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
