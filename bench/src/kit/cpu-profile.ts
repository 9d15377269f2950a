import { readFileSync } from 'node:fs';

/**
 * Summarises a V8 `.cpuprofile` (written by `node --cpu-prof`): self time per function and per
 * module (npm package, Node.js core module, or workspace file), and inclusive time per module
 * (samples with that module anywhere on the stack), as shares of the busy time. A native frame
 * (a V8 builtin or a binding such as `writev`) is named with the JavaScript function that called
 * it, since "writev" alone does not say whose socket was written.
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  /** Microseconds on the monotonic clock, as `process.hrtime` reads it. */
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTime {
  name: string;
  ms: number;
  share: number;
}

export interface ProfileSummary {
  busyMs: number;
  idleMs: number;
  /** True when a window was asked for and samples fell in it. */
  windowed: boolean;
  functions: SelfTime[];
  modules: SelfTime[];
  inclusiveModules: SelfTime[];
  /** Self time charged to the nearest frame outside Node.js core: who asked for the work. */
  callers: SelfTime[];
}

/** V8's pseudo-frames: not code, but where the time went anyway. */
const PSEUDO_FRAMES = new Set(['(garbage collector)', '(program)', '(idle)', '(root)']);
const NATIVE = '(native)';

/** The module a frame belongs to: `npm:<package>`, `node:<module>`, `<workspace package>/<file>`. */
export function moduleOf(frame: CallFrame): string {
  if (PSEUDO_FRAMES.has(frame.functionName)) return frame.functionName;
  const { url } = frame;
  if (url === '') return NATIVE;
  if (url.startsWith('node:')) return url;
  const path = url.replace(/^file:\/\//, '');
  const inModules = path.lastIndexOf('/node_modules/');
  if (inModules >= 0) {
    const [scope, name] = path.slice(inModules + '/node_modules/'.length).split('/');
    return `npm:${scope?.startsWith('@') ? `${scope}/${name}` : scope}`;
  }
  const workspace = /\/packages\/([^/]+)\/(?:dist|src)\/(.+)$/.exec(path);
  if (workspace) return `${workspace[1]}/${workspace[2]}`;
  return path;
}

function ranked(totals: Map<string, number>, busyMs: number, top: number): SelfTime[] {
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, ms]) => ({ name, ms, share: busyMs > 0 ? ms / busyMs : 0 }));
}

function add(totals: Map<string, number>, key: string, ms: number): void {
  totals.set(key, (totals.get(key) ?? 0) + ms);
}

/**
 * @param window only samples taken in [fromUs, toUs] (monotonic microseconds, e.g.
 *   `process.hrtime.bigint() / 1000n` around the load), so start-up and shutdown do not count.
 */
export function summariseCpuProfile(
  file: string,
  options: { top?: number; window?: { fromUs: number; toUs: number } } = {},
): ProfileSummary {
  const top = options.top ?? 20;
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) {
    for (const child of node.children ?? []) parents.set(child, node.id);
  }
  const jsCaller = (id: number): CallFrame | undefined => {
    for (let at = parents.get(id); at !== undefined; at = parents.get(at)) {
      const frame = (nodes.get(at) as ProfileNode).callFrame;
      if (frame.url !== '') return frame;
    }
    return undefined;
  };
  const label = (node: ProfileNode): string => {
    const frame = node.callFrame;
    if (PSEUDO_FRAMES.has(frame.functionName)) return frame.functionName;
    if (frame.url === '') {
      const caller = jsCaller(node.id);
      const from = caller ? ` ← ${caller.functionName || '(anonymous)'} ${moduleOf(caller)}` : '';
      return `${frame.functionName || '(anonymous)'} ${NATIVE}${from}`;
    }
    return `${frame.functionName || '(anonymous)'} ${moduleOf(frame)}:${frame.lineNumber + 1}`;
  };
  const isCore = (frame: CallFrame) => frame.url === '' || frame.url.startsWith('node:');
  const callerOf = new Map<number, string>();
  const applicationCaller = (id: number): string => {
    let name = callerOf.get(id);
    if (name !== undefined) return name;
    const node = nodes.get(id) as ProfileNode;
    const parent = parents.get(id);
    if (PSEUDO_FRAMES.has(node.callFrame.functionName)) name = node.callFrame.functionName;
    else if (!isCore(node.callFrame)) name = label(node);
    else name = parent === undefined ? '(Node.js core only)' : applicationCaller(parent);
    if (name === '(root)') name = '(Node.js core only)';
    callerOf.set(id, name);
    return name;
  };
  const stackModules = new Map<number, Set<string>>();
  const modulesOnStack = (id: number): Set<string> => {
    let set = stackModules.get(id);
    if (set) return set;
    const parent = parents.get(id);
    set = new Set(parent === undefined ? [] : modulesOnStack(parent));
    const module = moduleOf((nodes.get(id) as ProfileNode).callFrame);
    if (module !== NATIVE && module !== '(root)') set.add(module);
    stackModules.set(id, set);
    return set;
  };

  // Every sample weighs the median sampling interval rather than its own time delta: a process
  // preempted on a busy machine resumes with one long delta, which would otherwise be charged to
  // whatever frame it resumed in (usually a system call such as writev).
  const sortedDeltas = [...profile.timeDeltas].sort((a, b) => a - b);
  const sampleMs = (sortedDeltas[Math.floor(sortedDeltas.length / 2)] ?? 0) / 1000;
  const summarise = (window: { fromUs: number; toUs: number } | undefined) => {
    const byFunction = new Map<string, number>();
    const byModule = new Map<string, number>();
    const inclusive = new Map<string, number>();
    const callers = new Map<string, number>();
    let idleMs = 0;
    let totalMs = 0;
    let at = profile.startTime;
    for (let i = 0; i < profile.samples.length; i++) {
      const deltaUs = profile.timeDeltas[i] ?? 0;
      at += deltaUs;
      if (window && (at < window.fromUs || at > window.toUs)) continue;
      const node = nodes.get(profile.samples[i] as number);
      if (!node) continue;
      const ms = sampleMs;
      totalMs += ms;
      if (node.callFrame.functionName === '(idle)') {
        idleMs += ms;
        continue;
      }
      add(byFunction, label(node), ms);
      add(byModule, moduleOf(node.callFrame), ms);
      for (const module of modulesOnStack(node.id)) add(inclusive, module, ms);
      add(callers, applicationCaller(node.id), ms);
    }
    const busyMs = totalMs - idleMs;
    return {
      busyMs,
      idleMs,
      functions: ranked(byFunction, busyMs, top),
      modules: ranked(byModule, busyMs, top),
      inclusiveModules: ranked(inclusive, busyMs, top),
      callers: ranked(callers, busyMs, top),
    };
  };
  const windowed = options.window ? summarise(options.window) : undefined;
  if (windowed && windowed.busyMs > 0) return { ...windowed, windowed: true };
  return { ...summarise(undefined), windowed: false };
}

/** The summary as Markdown tables. */
export function formatProfileSummary(summary: ProfileSummary): string {
  const rows = (items: SelfTime[]) =>
    items.map(
      (item) => `| ${item.name} | ${item.ms.toFixed(0)} | ${(item.share * 100).toFixed(1)}% |`,
    );
  const table = (title: string, items: SelfTime[]) => [
    '',
    `| ${title} | ms | share |`,
    '|---|---:|---:|',
    ...rows(items),
  ];
  return [
    `${summary.windowed ? 'samples taken under load only' : 'whole process lifetime (start-up included)'}: busy ${summary.busyMs.toFixed(0)} ms, idle ${summary.idleMs.toFixed(0)} ms (samples × median interval); shares are of busy time`,
    ...table('module, self time', summary.modules),
    ...table('module, inclusive (anywhere on the stack)', summary.inclusiveModules),
    ...table('function, self time', summary.functions),
    ...table('nearest frame outside Node.js core, self time below it', summary.callers),
  ].join('\n');
}
