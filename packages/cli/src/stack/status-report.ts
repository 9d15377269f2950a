import type { ServiceStatus } from '../supervisor.js';
import type { StackState } from './state.js';

/** One service as `status` shows it: what the supervisor recorded, and its health probed now. */
export interface ServiceRow extends ServiceStatus {
  health: string;
}

/**
 * `mcp-identity status`: the supervisor, a table of the services, then one
 * line for each service that is failing its health checks or was restarted,
 * saying why (the state file's `unhealthy` and `lastRestart`).
 */
export function renderStatus(
  dataDir: string,
  state: StackState,
  rows: ServiceRow[],
  now = Date.now(),
): string {
  const header = `Stack in ${dataDir}: supervisor pid ${state.supervisorPid}${state.detached ? ' (background)' : ''}, started ${state.startedAt}`;
  const table = [
    ['SERVICE', 'STATE', 'PID', 'RESTARTS', 'HEALTH'],
    ...rows.map((row) => [
      row.name,
      row.state,
      row.pid === undefined ? '-' : String(row.pid),
      String(row.restarts),
      row.health,
    ]),
  ];
  const widths = table[0]?.map((_, column) =>
    Math.max(...table.map((r) => r[column]?.length ?? 0)),
  );
  const lines = table.map((row) =>
    row
      .map((cell, i) => cell.padEnd(widths?.[i] ?? 0))
      .join('  ')
      .trimEnd(),
  );
  const notes = rows.flatMap((row) => notesOf(row, state, now));
  return [header, '', ...lines, ...(notes.length > 0 ? ['', ...notes] : []), ''].join('\n');
}

function notesOf(service: ServiceStatus, state: StackState, now: number): string[] {
  const notes: string[] = [];
  if (service.unhealthy) {
    const seconds = Math.round((now - Date.parse(service.unhealthy.since)) / 1000);
    const limit = state.health
      ? `; restarted once that reaches ${state.health.unhealthyAfterMs / 1000} s`
      : '';
    notes.push(
      `${service.name}: unhealthy for ${seconds} s (${service.unhealthy.problem})${limit}`,
    );
  }
  const last = service.lastRestart;
  if (last && service.state === 'restarting') {
    notes.push(`${service.name}: restarting (${last.detail} at ${last.at})`);
  } else if (last && service.restarts > 0) {
    notes.push(
      `${service.name}: restarted ${service.restarts}×, last at ${last.at}: ${last.detail}`,
    );
  }
  return notes;
}
