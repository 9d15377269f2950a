import { describe, expect, it } from 'vitest';
import type { StackState } from '../src/stack/state.js';
import { renderStatus, type ServiceRow } from '../src/stack/status-report.js';

const NOW = Date.parse('2026-12-01T10:00:30.000Z');

const state: StackState = {
  supervisorPid: 4242,
  detached: true,
  startedAt: '2026-12-01T09:00:00.000Z',
  ports: { idp: 1, mcp: 2, gatewayHttps: 3, gatewayHttp: 4, gatewayManagement: 5, areaA: 6 },
  health: { intervalMs: 5_000, unhealthyAfterMs: 30_000 },
  services: [],
};

function row(overrides: Partial<ServiceRow> & Pick<ServiceRow, 'name'>): ServiceRow {
  return { state: 'running', pid: 100, restarts: 0, health: 'healthy', ...overrides };
}

describe('status', () => {
  it('shows a table only while every service is running without trouble', () => {
    const text = renderStatus(
      '/data',
      state,
      [row({ name: 'idp' }), row({ name: 'gateway' })],
      NOW,
    );
    expect(text).toBe(
      [
        'Stack in /data: supervisor pid 4242 (background), started 2026-12-01T09:00:00.000Z',
        '',
        'SERVICE  STATE    PID  RESTARTS  HEALTH',
        'idp      running  100  0         healthy',
        'gateway  running  100  0         healthy',
        '',
      ].join('\n'),
    );
  });

  it('says how long a service has failed its health checks, why, and when it is replaced', () => {
    const text = renderStatus(
      '/data',
      state,
      [
        row({
          name: 'scim-mcp',
          health: 'unreachable',
          unhealthy: { since: '2026-12-01T10:00:18.000Z', problem: 'no answer within 5 s' },
        }),
      ],
      NOW,
    );
    expect(text).toContain(
      '\nscim-mcp: unhealthy for 12 s (no answer within 5 s); restarted once that reaches 30 s\n',
    );
  });

  it('says how often a service was restarted and why the last time', () => {
    const text = renderStatus(
      '/data',
      state,
      [
        row({
          name: 'gateway',
          restarts: 1,
          lastRestart: {
            reason: 'unhealthy',
            detail: 'unhealthy for 30 s (no answer within 5 s)',
            at: '2026-12-01T09:59:00.000Z',
          },
        }),
        row({
          name: 'idp',
          state: 'restarting',
          restarts: 2,
          lastRestart: {
            reason: 'exited',
            detail: 'exited (SIGKILL)',
            at: '2026-12-01T10:00:29.000Z',
          },
        }),
      ],
      NOW,
    );
    expect(text).toMatch(/^gateway\s+running\s+100\s+1\s+healthy$/m);
    expect(text).toContain(
      '\ngateway: restarted 1×, last at 2026-12-01T09:59:00.000Z: unhealthy for 30 s (no answer within 5 s)\n',
    );
    expect(text).toContain('\nidp: restarting (exited (SIGKILL) at 2026-12-01T10:00:29.000Z)\n');
  });
});
