import {
  type CelInput,
  CelScalar,
  celEnv,
  isCelError,
  objectType,
  parse,
  plan,
} from '@bufbuild/cel';
import { type Timestamp, TimestampSchema, timestampFromMs } from '@bufbuild/protobuf/wkt';
import { McpIdentityError } from '@mcp-identity/common';

/*
 * CEL conditions of `mcp-authz` rules (`when:` / `unless:`): compiled and checked once, at
 * deploy, evaluated by @bufbuild/cel (a CEL evaluator tested against the cel-spec conformance
 * suite) over the context below. The library's own type checker does not cover the language
 * yet, so the checks are ours: this file is the one statement of what a condition may say, its
 * typed context, and its cost bound.
 *
 * Cost bound: at most MAX_CONDITION_LENGTH characters and MAX_CONDITION_NODES nodes, and no
 * macro that loops (`all`, `exists`, `exists_one`, `map`, `filter`): every node does work at
 * most linear in the values it reads (RE2 regular expressions included: linear time). The
 * caller's input is the arguments: they are read at most MAX_ARGUMENT_READS times, and only
 * when they hold at most MAX_CONDITION_VALUES JSON values, so an evaluation visits at most
 * MAX_ARGUMENT_READS × MAX_CONDITION_VALUES (8192) of them, twice for an `==` of two reads,
 * whatever the expression (measured: a few milliseconds at worst, cold; microseconds for a
 * condition as the examples write them). The claims are bounded by the token's size, signed by
 * the identity provider.
 */

/** The longest condition accepted. */
export const MAX_CONDITION_LENGTH = 1024;
/** The most nodes (identifiers, literals, operators, calls) a condition may hold. */
export const MAX_CONDITION_NODES = 128;
/** The most JSON values (members and items, nested ones too) of arguments a condition reads. */
export const MAX_CONDITION_VALUES = 1024;
/** The most places a condition may read `call.arguments` (or a member of it) at. */
export const MAX_ARGUMENT_READS = 8;

/**
 * The context a condition reads. `token`: the verified token's claims as they are (`dyn`),
 * with `sub` and `client_id` (`client_id`, else `azp`) strings, `scope` a `list<string>` and
 * `act` (RFC 8693 delegation) a map where present. `call`: `method`, `tool` (the item called:
 * tool or prompt name, resource URI, else ''), `arguments` (the JSON values of
 * `params.arguments`: numbers are doubles, as in `google.protobuf.Value`) and `era` (the MCP
 * protocol version of the request, '' when it names none). `proxy.name`, and `now` (timestamp).
 * The upstream credential is not in it: a condition cannot read what it is never given.
 */
export interface ConditionInput {
  token: Readonly<Record<string, unknown>>;
  call: {
    method: string;
    tool: string;
    /** Undefined before the body is read (a modern request's header stage). */
    arguments: unknown;
    era: string;
  };
  proxy: { name: string };
  /** Milliseconds since the epoch. */
  now: number;
}

type Ast = ReturnType<typeof parse>['expr'];
type Kind =
  | 'bool'
  | 'int'
  | 'uint'
  | 'double'
  | 'string'
  | 'bytes'
  | 'null'
  | 'list'
  | 'map'
  | 'timestamp'
  | 'duration'
  | 'type'
  | 'dyn';

/** The fields of the context's variables; `token` is open (any other claim is `dyn`). */
const FIELDS: Readonly<Record<string, Readonly<Record<string, Kind>>>> = {
  token: { sub: 'string', client_id: 'string', scope: 'list', act: 'map' },
  call: { method: 'string', tool: 'string', arguments: 'map', era: 'string' },
  proxy: { name: 'string' },
};
const OPEN_VARIABLES = new Set(['token']);

const ENV = celEnv({
  variables: {
    token: CelScalar.DYN,
    call: CelScalar.DYN,
    proxy: CelScalar.DYN,
    now: objectType(TimestampSchema),
  },
});

const NUMERIC = new Set<Kind>(['int', 'uint', 'double']);
const LOGICAL = new Set(['_&&_', '_||_', '!_']);
const ORDERING = new Set(['_<_', '_<=_', '_>_', '_>=_']);
const ARITHMETIC = new Set(['_-_', '_*_', '_/_', '_%_', '-_']);
const STRING_TESTS = new Set(['startsWith', 'endsWith', 'contains', 'matches']);
const CONVERSIONS: Readonly<Record<string, Kind>> = {
  int: 'int',
  uint: 'uint',
  double: 'double',
  string: 'string',
  bytes: 'bytes',
  bool: 'bool',
  timestamp: 'timestamp',
  duration: 'duration',
  type: 'type',
  dyn: 'dyn',
  size: 'int',
};

/** Why a condition was refused at deploy, and where (1-based line and column). */
export class ConditionProblem {
  constructor(
    readonly line: number,
    readonly column: number,
    readonly message: string,
  ) {}

  toString(): string {
    return `${this.line}:${this.column}: ${this.message}`;
  }
}

/** Stops the walk of a condition at its first problem (caught in `compileCondition`). */
class Refused extends McpIdentityError {
  readonly code = 'invalid_condition';

  constructor(
    readonly node: Ast | undefined,
    message: string,
  ) {
    super(message);
  }
}

/** What a walk over a condition learnt: its size so far, and the arguments it reads. */
interface Walk {
  nodes: number;
  /** Paths below `call.arguments` the condition reads; `[]` is all of them. */
  argumentPaths: string[][];
}

/** `call.arguments`, then members by name or by a string literal index: the path below it. */
function argumentPath(node: Ast): string[] | undefined {
  const kind = node.exprKind;
  if (kind.case === 'selectExpr' && kind.value.operand) {
    const { operand, field } = kind.value;
    const inner = operand.exprKind;
    if (inner.case === 'identExpr' && inner.value.name === 'call') {
      return field === 'arguments' ? [] : undefined;
    }
    const below = argumentPath(operand);
    return below && [...below, field];
  }
  if (kind.case === 'callExpr' && kind.value.function === '_[_]' && !kind.value.target) {
    const [operand, index] = kind.value.args;
    const key = index?.exprKind;
    if (!operand || key?.case !== 'constExpr') return undefined;
    if (key.value.constantKind.case !== 'stringValue') return undefined;
    const below = argumentPath(operand);
    return below && [...below, key.value.constantKind.value];
  }
  return undefined;
}

function constantKind(node: Ast & { exprKind: { case: 'constExpr' } }): Kind {
  switch (node.exprKind.value.constantKind.case) {
    case 'boolValue':
      return 'bool';
    case 'int64Value':
      return 'int';
    case 'uint64Value':
      return 'uint';
    case 'doubleValue':
      return 'double';
    case 'stringValue':
      return 'string';
    case 'bytesValue':
      return 'bytes';
    case 'nullValue':
      return 'null';
    default:
      return 'dyn';
  }
}

/** Whether two statically known kinds can meet in an ordering or an arithmetic operator. */
function compatible(a: Kind, b: Kind): boolean {
  if (a === 'dyn' || b === 'dyn') return true;
  if (NUMERIC.has(a) && NUMERIC.has(b)) return true;
  return a === b;
}

/** The kind of a node, refusing what cannot be right whatever the token and call. */
function kindOf(node: Ast | undefined, walk: Walk): Kind {
  if (!node) throw new Refused(node, 'incomplete expression');
  walk.nodes += 1;
  if (walk.nodes > MAX_CONDITION_NODES) {
    throw new Refused(node, `a condition may hold at most ${MAX_CONDITION_NODES} nodes`);
  }
  const path = argumentPath(node);
  if (path) {
    walk.argumentPaths.push(path);
    if (walk.argumentPaths.length > MAX_ARGUMENT_READS) {
      throw new Refused(
        node,
        `a condition may read call.arguments at most ${MAX_ARGUMENT_READS} times`,
      );
    }
    return path.length === 0 ? 'map' : 'dyn';
  }
  const { exprKind } = node;
  switch (exprKind.case) {
    case 'constExpr':
      return constantKind({ ...node, exprKind });
    case 'identExpr': {
      const { name } = exprKind.value;
      if (name === 'now') return 'timestamp';
      if (FIELDS[name]) return 'map';
      throw new Refused(node, `undeclared reference to '${name}' (use token, call, proxy or now)`);
    }
    case 'selectExpr': {
      const { operand, field, testOnly } = exprKind.value;
      const inner = operand?.exprKind;
      if (inner?.case === 'identExpr' && FIELDS[inner.value.name]) {
        walk.nodes += 1;
        const variable = inner.value.name;
        const known = FIELDS[variable]?.[field];
        if (known) return testOnly ? 'bool' : known;
        if (OPEN_VARIABLES.has(variable)) return testOnly ? 'bool' : 'dyn';
        throw new Refused(node, `${variable} has no field '${field}'`);
      }
      const operandKind = kindOf(operand, walk);
      if (operandKind !== 'map' && operandKind !== 'dyn') {
        throw new Refused(node, `a ${operandKind} has no field '${field}'`);
      }
      return testOnly ? 'bool' : 'dyn';
    }
    case 'callExpr':
      return callKind(node, exprKind.value, walk);
    case 'listExpr':
      for (const element of exprKind.value.elements) kindOf(element, walk);
      return 'list';
    case 'structExpr':
      if (exprKind.value.messageName !== '') {
        throw new Refused(node, 'messages cannot be built in a condition');
      }
      for (const entry of exprKind.value.entries) {
        if (entry.keyKind.case === 'mapKey') kindOf(entry.keyKind.value, walk);
        kindOf(entry.value, walk);
      }
      return 'map';
    case 'comprehensionExpr':
      throw new Refused(
        node,
        'macros that loop (all, exists, exists_one, map, filter) are not allowed: a condition costs at most linear time in what it reads',
      );
    default:
      throw new Refused(node, 'incomplete expression');
  }
}

type CallValue = Extract<Ast['exprKind'], { case: 'callExpr' }>['value'];

function callKind(node: Ast, call: CallValue, walk: Walk): Kind {
  const name = call.function;
  const target = call.target ? kindOf(call.target, walk) : undefined;
  const args = call.args.map((arg) => kindOf(arg, walk));
  const [left = 'dyn', right = 'dyn'] = args;
  if (LOGICAL.has(name)) {
    const wrong = args.find((kind) => kind !== 'bool' && kind !== 'dyn');
    if (wrong) throw new Refused(node, `a logical operator needs bool operands, not ${wrong}`);
    return 'bool';
  }
  if (name === '_==_' || name === '_!=_') return 'bool';
  if (ORDERING.has(name) || ARITHMETIC.has(name) || name === '_+_') {
    if (!compatible(left, right)) {
      throw new Refused(node, `no such overload: ${left} ${operatorSymbol(name)} ${right}`);
    }
    if (ORDERING.has(name)) return 'bool';
    return left === right ? left : 'dyn';
  }
  if (name === '@in') {
    if (!['list', 'map', 'dyn'].includes(right)) {
      throw new Refused(node, `'in' needs a list or a map on its right, not ${right}`);
    }
    return 'bool';
  }
  if (name === '_?_:_') {
    const [condition, whenTrue, whenFalse] = args;
    if (condition !== 'bool' && condition !== 'dyn') {
      throw new Refused(node, `a conditional needs a bool condition, not ${condition}`);
    }
    return whenTrue === whenFalse ? (whenTrue ?? 'dyn') : 'dyn';
  }
  if (name === '_[_]') {
    if (!['list', 'map', 'dyn'].includes(left)) {
      throw new Refused(node, `a ${left} cannot be indexed`);
    }
    return 'dyn';
  }
  if (STRING_TESTS.has(name)) {
    if (target !== undefined && target !== 'string' && target !== 'dyn') {
      throw new Refused(node, `${name} applies to a string, not ${target}`);
    }
    return 'bool';
  }
  if (ENV.funcs.find(name) === undefined) {
    throw new Refused(node, `undeclared reference to function '${name}'`);
  }
  return CONVERSIONS[name] ?? 'dyn';
}

function operatorSymbol(name: string): string {
  return name.replaceAll('_', '');
}

/** 1-based line and column of an offset into `source` (the parser's: UTF-16 code units). */
function position(source: string, offset: number): { line: number; column: number } {
  const lines = source.slice(0, offset).split('\n');
  return { line: lines.length, column: (lines.at(-1) ?? '').length + 1 };
}

/** A condition compiled at deploy: what it reads, and its evaluation. */
export interface Condition {
  readonly source: string;
  /** Whether it reads `call.arguments` (then it cannot be decided before the body is read). */
  readonly readsArguments: boolean;
  /** The paths below `call.arguments` it reads (`[]`: all of them). */
  readonly argumentPaths: readonly (readonly string[])[];
  /** True or false, or why it could not be evaluated (a missing claim, a type at run time). */
  evaluate(input: ConditionInput): boolean | ConditionError;
}

/** Why an evaluation produced no bool: for the audit line (never the values it read). */
export class ConditionError {
  constructor(readonly message: string) {}
}

const ARGUMENTS_TOO_LARGE = new ConditionError(
  `the call's arguments hold more than ${MAX_CONDITION_VALUES} values`,
);

/** Whether a JSON value holds at most `budget` values; stops counting once it does not. */
function withinValues(value: unknown, budget: { left: number }): boolean {
  budget.left -= 1;
  if (budget.left < 0) return false;
  if (Array.isArray(value)) return value.every((item) => withinValues(item, budget));
  if (value !== null && typeof value === 'object') {
    for (const key in value) {
      if (!withinValues((value as Record<string, unknown>)[key], budget)) return false;
    }
  }
  return true;
}

/**
 * What the audit line says of an evaluation error: CEL's own message may quote the values it
 * read (a claim, an argument), which are the caller's, so it is not repeated.
 */
const NOT_EVALUATED = new ConditionError(
  'the expression cannot be evaluated on this call (a missing field, or a value of another type)',
);
const NOT_BOOL = new ConditionError('the expression did not evaluate to a bool');

/**
 * Compiles a condition: parses it, checks it against the typed context and the cost bound,
 * and plans its evaluation; a problem with its position when it is refused.
 */
export function compileCondition(source: string): Condition | ConditionProblem {
  if (source.length > MAX_CONDITION_LENGTH) {
    return new ConditionProblem(1, 1, `a condition may be at most ${MAX_CONDITION_LENGTH} long`);
  }
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(source);
  } catch (error) {
    const { location, message } = error as {
      location?: { start: { line: number; column: number } };
      message: string;
    };
    const at = location?.start ?? { line: 1, column: 1 };
    // The parser's message starts with `<input>:line:col: `; the position is given apart.
    return new ConditionProblem(at.line, at.column, message.replace(/^<input>:\d+:\d+: /, ''));
  }
  const walk: Walk = { nodes: 0, argumentPaths: [] };
  try {
    const kind = kindOf(parsed.expr, walk);
    if (kind !== 'bool' && kind !== 'dyn') {
      throw new Refused(parsed.expr, `a condition must be a bool expression, not ${kind}`);
    }
  } catch (error) {
    if (!(error instanceof Refused)) throw error;
    const offset = error.node ? parsed.sourceInfo?.positions[error.node.id.toString()] : 0;
    const { line, column } = position(source, offset ?? 0);
    return new ConditionProblem(line, column, error.message);
  }
  const run = plan(ENV, parsed);
  const readsArguments = walk.argumentPaths.length > 0;
  return {
    source,
    readsArguments,
    argumentPaths: walk.argumentPaths,
    evaluate(input) {
      const args = input.call.arguments ?? {};
      if (readsArguments && !withinValues(args, { left: MAX_CONDITION_VALUES })) {
        return ARGUMENTS_TOO_LARGE;
      }
      // Claims and arguments are JSON.parse output: plain objects, arrays and scalars, which
      // the evaluator reads as CEL maps, lists and values (own members only).
      const result = run({
        token: input.token as CelInput,
        call: { ...input.call, arguments: args as CelInput },
        proxy: input.proxy,
        now: timestampOf(input.now),
      });
      if (isCelError(result)) return NOT_EVALUATED;
      return typeof result === 'boolean' ? result : NOT_BOOL;
    },
  };
}

let lastNow = Number.NaN;
let lastTimestamp: Timestamp = timestampFromMs(0);

/** The timestamp of `now`, made again only when the clock moved (calls share a millisecond). */
function timestampOf(ms: number): Timestamp {
  if (ms !== lastNow) {
    lastNow = ms;
    lastTimestamp = timestampFromMs(ms);
  }
  return lastTimestamp;
}
