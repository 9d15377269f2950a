import { createRequire } from 'node:module';

export interface AutocannonResult {
  requests: { total: number; average: number };
  latency: { p50: number; p99: number };
  duration: number;
  non2xx: number;
  errors: number;
}

/** autocannon ships no type declarations; this is the slice of its API the benches use. */
export const autocannon = createRequire(import.meta.url)('autocannon') as (options: {
  url: string;
  method: string;
  connections: number;
  duration: number;
  headers?: Record<string, string>;
  body?: string;
}) => Promise<AutocannonResult>;
