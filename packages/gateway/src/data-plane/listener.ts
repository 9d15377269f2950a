const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '[::1]'];

/**
 * The addresses one listener answers to. A proxy's resource URL must equal the URL a client
 * connected to (RFC 9728 §3.3), so it is built from the request's Host when that Host is one
 * of this listener's own (loopback names on its port, or the configured public address);
 * any other Host gets the listener's default address and never chooses the URL.
 */
export class Listener {
  private readonly bases = new Map<string, string>();
  private fallback = '';

  constructor(readonly scheme: 'http' | 'https') {}

  /** Called once the port is known; `publicUrl` is `gatewayurl` (HTTPS listener only). */
  bind(port: number, publicUrl: string | undefined): void {
    this.bases.clear();
    const defaultPort = this.scheme === 'https' ? 443 : 80;
    for (const host of LOOPBACK_HOSTS) {
      this.bases.set(`${host}:${port}`, `${this.scheme}://${host}:${port}`);
      if (port === defaultPort) this.bases.set(host, `${this.scheme}://${host}`);
    }
    this.fallback = `${this.scheme}://localhost:${port}`;
    if (publicUrl) {
      this.bases.set(new URL(publicUrl).host, publicUrl);
      this.fallback = publicUrl;
    }
  }

  /** The base URL (`scheme://host[:port]`) for a request's Host header. */
  baseFor(host: string | undefined): string {
    if (host === undefined) return this.fallback;
    return this.bases.get(host) ?? this.bases.get(host.toLowerCase()) ?? this.fallback;
  }

  /** Origins of this listener (`scheme://host:port`), for the Origin allow list. */
  origins(): string[] {
    return [...new Set(this.bases.values())];
  }
}
