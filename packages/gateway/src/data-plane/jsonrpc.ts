import type { IncomingHttpHeaders } from 'node:http';
import { FIELD_NAME_TOKEN, type JsonRpcId, jsonRpcError } from '@mcp-identity/common';

/** What an MCP server offers by name: its tools, prompts and resources. */
export type Capability = 'tools' | 'prompts' | 'resources';

/**
 * What a method addresses, as agentgateway's `mcp/rbac.rs` `ResourceType` does: the capability
 * it belongs to (`tools/call`, `tools/list` → tools; none for `initialize`, `ping`,
 * `resources/templates/list` or a notification), and whether it calls one item of it by name
 * or lists the items. One shared value per kind (`methodKind`), so classifying allocates nothing.
 */
export interface MethodKind {
  readonly capability: Capability | undefined;
  /** tools/call, prompts/get, resources/read: `McpCall.target` names the item. */
  readonly callsItem: boolean;
  /** tools/list, prompts/list, resources/list: the result's `<capability>` array lists items. */
  readonly listsItems: boolean;
}

/** The call an item of a list stands for: its method, kind, and the member that names it. */
export interface ItemCall {
  readonly method: string;
  readonly kind: MethodKind;
  readonly nameKey: 'name' | 'uri';
}

/** What the gateway needs to know about one MCP request posted to `/mcp`. */
export interface McpCall {
  id: JsonRpcId;
  method: string;
  /** What `method` addresses (`methodKind`). */
  kind: MethodKind;
  params: Record<string, unknown> | undefined;
  /** `params.name` for tools/call and prompts/get, `params.uri` for resources/read, else ''. */
  target: string;
  /**
   * `params._meta["io.modelcontextprotocol/protocolVersion"]` (undefined when absent), read by
   * the one pass over the body: the modern era's version check needs only it, and building
   * `params` to reach it cost more than deciding from the headers saved.
   */
  metaVersion: unknown;
}

const CAPABILITIES: readonly Capability[] = ['tools', 'prompts', 'resources'];

function kindOf(capability: Capability | undefined, callsItem: boolean, listsItems: boolean) {
  return Object.freeze({ capability, callsItem, listsItems }) as MethodKind;
}

const NO_CAPABILITY = kindOf(undefined, false, false);
const KINDS = new Map<string, MethodKind>();
const OTHER_OF_CAPABILITY = new Map<Capability, MethodKind>();
/** By capability: the call a listed item stands for (`tools/list` → `tools/call` by `name`). */
export const ITEM_CALL: Readonly<Record<Capability, ItemCall>> = {
  tools: { method: 'tools/call', kind: kindOf('tools', true, false), nameKey: 'name' },
  prompts: { method: 'prompts/get', kind: kindOf('prompts', true, false), nameKey: 'name' },
  resources: { method: 'resources/read', kind: kindOf('resources', true, false), nameKey: 'uri' },
};
for (const capability of CAPABILITIES) {
  KINDS.set(ITEM_CALL[capability].method, ITEM_CALL[capability].kind);
  KINDS.set(`${capability}/list`, kindOf(capability, false, true));
  OTHER_OF_CAPABILITY.set(capability, kindOf(capability, false, false));
}

/**
 * Which capability a method addresses, and how: the one place that says so. A method of a
 * capability is `<capability>/<name>` with a single slash.
 */
export function methodKind(method: string): MethodKind {
  const known = KINDS.get(method);
  if (known) return known;
  const slash = method.indexOf('/');
  if (slash < 0 || method.includes('/', slash + 1)) return NO_CAPABILITY;
  // A loop rather than `find`, which would take a new closure on every call.
  for (const capability of CAPABILITIES) {
    if (capability.length === slash && method.startsWith(capability)) {
      return OTHER_OF_CAPABILITY.get(capability) as MethodKind;
    }
  }
  return NO_CAPABILITY;
}

export type ParseResult =
  | { ok: true; call: McpCall }
  | { ok: false; code: -32700 | -32600; message: string; data?: string };

const PARSE_ERROR: ParseResult = { ok: false, code: -32700, message: 'Parse error' };
const INVALID: ParseResult = {
  ok: false,
  code: -32600,
  message: 'Invalid Request',
  data: 'Invalid MCP request format',
};

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;

/** A parsed message's members the gateway reads; every other one is only validated. */
enum Member {
  Other,
  Jsonrpc,
  Id,
  Method,
  Params,
  Name,
  Uri,
  Meta,
  /** `params._meta["io.modelcontextprotocol/protocolVersion"]`. */
  Version,
}

/** What a member's value starts with (its JSON type, told from its first byte). */
enum Kind {
  Absent,
  String,
  Number,
  Object,
  Array,
  Literal,
}

const EMPTY: Buffer = Buffer.alloc(0);

/** Where one member's value lies in the body. */
class Span {
  kind = Kind.Absent;
  start = 0;
  end = 0;
  /** A string value written with a backslash escape: decoded by JSON.parse. */
  escaped = false;
}

/** Whitespace between JSON tokens (RFC 8259 §2): space, tab, line feed, carriage return. */
function isJsonWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
}

function isDigit(code: number): boolean {
  return code >= ZERO && code <= NINE;
}

function isHexDigit(code: number): boolean {
  const lower = code | 0x20;
  return isDigit(code) || (lower >= 0x61 && lower <= 0x66);
}

/** Escapes RFC 8259 §7 allows after a backslash, besides `u` and four hex digits. */
function isSimpleEscape(code: number): boolean {
  // " \ / b f n r t
  return (
    code === QUOTE ||
    code === BACKSLASH ||
    code === 0x2f ||
    code === 0x62 ||
    code === 0x66 ||
    code === 0x6e ||
    code === 0x72 ||
    code === 0x74
  );
}

enum Spelling {
  None,
  Exact,
  OtherCase,
}

/**
 * How the bytes from `start` to `end` spell `name`, a lower-case ASCII member name: exactly, in
 * another case, or not. For these names "another case" is exactly `key.toLowerCase() === name`
 * of the decoded key: the only characters that lower-case to one of their ASCII letters are the
 * letter's own two cases (U+212A KELVIN SIGN becomes `k`, which none of them contains; U+0130
 * becomes two characters), and a character outside ASCII is written with bytes over 0x7f.
 * Where only the exact spelling counts, `isAsciiText` says so.
 */
function spellingOf(bytes: Buffer, start: number, end: number, name: string): Spelling {
  if (end - start !== name.length) return Spelling.None;
  let exact = true;
  for (let k = 0; k < name.length; k++) {
    const code = bytes[start + k] as number;
    const expected = name.charCodeAt(k);
    if (code !== expected) {
      // Setting bit 0x20 maps an ASCII capital to its small letter.
      if ((code | 0x20) !== expected) return Spelling.None;
      exact = false;
    }
  }
  return exact ? Spelling.Exact : Spelling.OtherCase;
}

/**
 * Whether the bytes from `start` to `end` are exactly `value`, each an ASCII character: a byte
 * over 0x7f belongs to a multi-byte UTF-8 sequence (or is invalid), so it never stands for the
 * one UTF-16 code unit of the same number.
 */
function isAsciiText(bytes: Buffer, start: number, end: number, value: string): boolean {
  if (end - start !== value.length) return false;
  for (let k = 0; k < value.length; k++) {
    const code = bytes[start + k] as number;
    if (code > 0x7f || code !== value.charCodeAt(k)) return false;
  }
  return true;
}

/** Names compared to the members; all lower-case ASCII letters. */
const TOP_NAMES: ReadonlyArray<readonly [string, Member]> = [
  ['jsonrpc', Member.Jsonrpc],
  ['id', Member.Id],
  ['method', Member.Method],
  ['params', Member.Params],
];
const PARAMS_NAMES: ReadonlyArray<readonly [string, Member]> = [
  ['name', Member.Name],
  ['uri', Member.Uri],
  ['_meta', Member.Meta],
];

/** `_meta` key that carries the request's version in the modern era. */
const VERSION_META = 'io.modelcontextprotocol/protocolVersion';

/**
 * One pass over a body: validates it as JSON (RFC 8259) without building it, and notes where
 * the members the gateway reads are (top level: `jsonrpc`, `id`, `method`, `params`, `result`,
 * `error`; in `params`: `name`, `uri`, `_meta`). JSON.parse keeps only the last of duplicated
 * keys, so a peer that keeps the first one would see a different request than we authorised:
 * every case spelling of `jsonrpc`, `id`, `method`, `params`, `params.name`, `params.uri` and
 * `params._meta` is counted, escapes decoded, so that such bodies can be refused. Iterative, so
 * nesting depth is bounded only by the body size limit, as with JSON.parse. One scanner serves
 * every body in turn (`reset`): a scan runs to its end synchronously, and what outlives it is
 * copied out of it.
 */
class BodyScan {
  readonly jsonrpc = new Span();
  readonly id = new Span();
  readonly method = new Span();
  readonly params = new Span();
  readonly name = new Span();
  readonly uri = new Span();
  readonly version = new Span();
  /** The spans by member; none for `Other`. */
  private readonly spans: ReadonlyArray<Span | undefined> = [
    undefined,
    this.jsonrpc,
    this.id,
    this.method,
    this.params,
    this.name,
    this.uri,
    undefined,
    this.version,
  ];
  hasResult = false;
  hasError = false;
  /** A name above was spelt more than once, in any case. */
  ambiguous = false;
  topIsObject = false;
  /** Spellings seen per member. */
  private readonly spellings = [0, 0, 0, 0, 0, 0, 0, 0, 0];
  private bytes = EMPTY;

  /** Drops the body scanned last. */
  release(): void {
    this.bytes = EMPTY;
  }

  /** Makes the scanner ready for `bytes`, forgetting the body before. */
  reset(bytes: Buffer): this {
    this.bytes = bytes;
    // A span's place (`start`, `end`, `escaped`) is written whenever its kind is, and read only
    // under a kind; `topIsObject`, `escaped` and `lastMember` are written before they are read.
    for (const span of this.spans) if (span) span.kind = Kind.Absent;
    // A loop the compiler inlines: `fill` is a call into the runtime on every body.
    for (let k = 0; k < this.spellings.length; k++) this.spellings[k] = 0;
    this.hasResult = false;
    this.hasError = false;
    this.ambiguous = false;
    return this;
  }

  /** Whether the body is one JSON value and nothing else. */
  run(): boolean {
    const b = this.bytes;
    const n = b.length;
    /** Per open container: 1 for an object, 0 for an array. */
    const objects: number[] = [];
    /** The top-level member being read, and whether its value is the `params` object. */
    let topMember = Member.Other;
    let inParams = false;
    /** The member of `params` being read. */
    let paramsMember = Member.Other;
    let span: Span | undefined;
    let i = this.skipWhitespace(0);
    this.topIsObject = b[i] === OPEN_BRACE;
    for (;;) {
      // A value starts at i. `span`, when set, records where it lies.
      if (i >= n) return false;
      const c = b[i] as number;
      if (span) span.start = i;
      if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        if (span) span.kind = c === OPEN_BRACE ? Kind.Object : Kind.Array;
        i = this.skipWhitespace(i + 1);
        const close = c === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET;
        if (b[i] !== close) {
          if (c === OPEN_BRACE) {
            if (objects.length === 1 && topMember === Member.Params) inParams = true;
            objects.push(1);
            i = this.member(i, objects.length, inParams, paramsMember);
            if (i < 0) return false;
            if (objects.length === 1) topMember = this.lastMember;
            else if (inParams && objects.length === 2) paramsMember = this.lastMember;
            span = this.spanOf(this.lastMember);
          } else {
            objects.push(0);
            span = undefined;
          }
          continue;
        }
        i += 1;
        if (span) span.end = i;
      } else {
        const end = c === QUOTE ? this.stringEnd(i) : this.scalarEnd(i);
        if (end < 0) return false;
        if (span) {
          span.kind =
            c === QUOTE ? Kind.String : isDigit(c) || c === MINUS ? Kind.Number : Kind.Literal;
          span.end = end;
          span.escaped = c === QUOTE && this.escaped;
        }
        i = end;
      }
      // After a value: close what it ends, or go on to the next member or item.
      span = undefined;
      for (;;) {
        i = this.skipWhitespace(i);
        const depth = objects.length;
        if (depth === 0) return i === n;
        const c2 = b[i];
        const inObject = objects[depth - 1] === 1;
        if (c2 === COMMA) {
          i = this.skipWhitespace(i + 1);
          if (inObject) {
            i = this.member(i, depth, inParams, paramsMember);
            if (i < 0) return false;
            if (depth === 1) topMember = this.lastMember;
            else if (inParams && depth === 2) paramsMember = this.lastMember;
            span = this.spanOf(this.lastMember);
          }
          break;
        }
        if (c2 !== (inObject ? CLOSE_BRACE : CLOSE_BRACKET)) return false;
        objects.pop();
        i += 1;
        if (depth === 2) {
          // A top-level member's container value ends here.
          inParams = false;
          const top = this.spanOf(topMember);
          if (top) top.end = i;
        }
      }
    }
  }

  /** Set by `stringEnd`: whether the string it last read has a backslash escape. */
  private escaped = false;
  /** Set by `member`: which member the name it last read is. */
  private lastMember = Member.Other;

  /**
   * Reads a member name at i (in an object at `depth`, of `params` when `inParams`, and then of
   * `paramsMember`'s value) and the colon after it: the position of its value (-1 when the JSON
   * is bad), and in `lastMember` which member it is.
   */
  private member(i: number, depth: number, inParams: boolean, paramsMember: Member): number {
    const b = this.bytes;
    if (b[i] !== QUOTE) return -1;
    const end = this.stringEnd(i);
    if (end < 0) return -1;
    this.lastMember = Member.Other;
    if (depth === 1) this.lastMember = this.classify(i, end, TOP_NAMES, true);
    else if (inParams && depth === 2) this.lastMember = this.classify(i, end, PARAMS_NAMES, false);
    else if (inParams && depth === 3 && paramsMember === Member.Meta) {
      this.lastMember = this.metaMember(i, end);
    }
    const colon = this.skipWhitespace(end);
    if (b[colon] !== COLON) return -1;
    return this.skipWhitespace(colon + 1);
  }

  /**
   * Which of `names` the key between `start` and `end` (its quotes included) is, counting every
   * case spelling of them; at the top level also notes `result` and `error`, which only matter
   * spelt exactly.
   */
  private classify(
    start: number,
    end: number,
    names: ReadonlyArray<readonly [string, Member]>,
    top: boolean,
  ): Member {
    const bytes = this.keyBytes(start, end);
    const from = this.keyFrom;
    const to = this.keyTo;
    let exact = Member.Other;
    for (const [name, member] of names) {
      const spelling = spellingOf(bytes, from, to, name);
      if (spelling === Spelling.None) continue;
      if (++(this.spellings[member] as number) > 1) this.ambiguous = true;
      if (spelling === Spelling.Exact) exact = member;
    }
    if (top && exact === Member.Other) {
      if (isAsciiText(bytes, from, to, 'result')) this.hasResult = true;
      else if (isAsciiText(bytes, from, to, 'error')) this.hasError = true;
    }
    return exact;
  }

  /** Set by `keyBytes`: where in the bytes it returned the key lies. */
  private keyFrom = 0;
  private keyTo = 0;

  /**
   * The bytes of the key between `start` and `end` (its quotes included), the key itself from
   * `keyFrom` to `keyTo` in them: a key with an escape is decoded first (rare); any other is
   * read where it is. Fields rather than a returned object: this runs for every key read.
   */
  private keyBytes(start: number, end: number): Buffer {
    if (!this.escaped) {
      this.keyFrom = start + 1;
      this.keyTo = end - 1;
      return this.bytes;
    }
    const bytes = Buffer.from(JSON.parse(this.text(start, end)) as string);
    this.keyFrom = 0;
    this.keyTo = bytes.length;
    return bytes;
  }

  /**
   * Whether the key between `start` and `end` (its quotes included) of `params._meta` is the
   * protocol version's, counting each time it is: `_meta` keys are names in a namespace, where
   * only the exact spelling is the version's, but two of them would be two meanings.
   */
  private metaMember(start: number, end: number): Member {
    const bytes = this.keyBytes(start, end);
    if (!isAsciiText(bytes, this.keyFrom, this.keyTo, VERSION_META)) return Member.Other;
    if (++(this.spellings[Member.Version] as number) > 1) this.ambiguous = true;
    return Member.Version;
  }

  /** Whether a string span holds exactly `value`, read without making a string of it. */
  holds(span: Span, value: string): boolean {
    if (span.escaped) return JSON.parse(this.text(span.start, span.end)) === value;
    return isAsciiText(this.bytes, span.start + 1, span.end - 1, value);
  }

  /** The value of a number span; a small whole number is read without making a string of it. */
  numberAt(span: Span): number {
    const b = this.bytes;
    if (span.end - span.start <= 9) {
      let value = 0;
      let i = span.start;
      for (; i < span.end && isDigit(b[i] as number); i++)
        value = value * 10 + (b[i] as number) - ZERO;
      if (i === span.end) return value;
    }
    // The JSON number grammar is a subset of Number's, with the same values.
    return Number(this.text(span.start, span.end));
  }

  /** The body's text from `start` to `end`. */
  text(start: number, end: number): string {
    // UTF-8 is the default: without an encoding name, Buffer skips looking one up.
    return this.bytes.toString(undefined, start, end);
  }

  private spanOf(member: Member): Span | undefined {
    return this.spans[member];
  }

  private skipWhitespace(i: number): number {
    const b = this.bytes;
    while (i < b.length && isJsonWhitespace(b[i] as number)) i++;
    return i;
  }

  /** The position after the string starting at i (a quote), or -1 when it is not valid JSON. */
  private stringEnd(i: number): number {
    const b = this.bytes;
    const n = b.length;
    this.escaped = false;
    for (i += 1; i < n; i++) {
      const c = b[i] as number;
      if (c === QUOTE) return i + 1;
      if (c < 0x20) return -1;
      if (c === BACKSLASH) {
        this.escaped = true;
        const next = b[i + 1] as number;
        if (next === 0x75) {
          for (let k = 2; k < 6; k++) if (!isHexDigit(b[i + k] as number)) return -1;
          i += 5;
        } else if (isSimpleEscape(next)) {
          i += 1;
        } else {
          return -1;
        }
      }
    }
    return -1;
  }

  /** The position after the number or literal starting at i, or -1 when it is not valid JSON. */
  private scalarEnd(i: number): number {
    const b = this.bytes;
    const c = b[i] as number;
    if (c === 0x74) return this.literalEnd(i, 'true');
    if (c === 0x66) return this.literalEnd(i, 'false');
    if (c === 0x6e) return this.literalEnd(i, 'null');
    // RFC 8259 §6: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
    if (c === MINUS) i++;
    if (b[i] === ZERO) i++;
    else if (isDigit(b[i] as number)) while (isDigit(b[i] as number)) i++;
    else return -1;
    if (b[i] === DOT) {
      i++;
      if (!isDigit(b[i] as number)) return -1;
      while (isDigit(b[i] as number)) i++;
    }
    if (((b[i] as number) | 0x20) === 0x65) {
      i++;
      if (b[i] === PLUS || b[i] === MINUS) i++;
      if (!isDigit(b[i] as number)) return -1;
      while (isDigit(b[i] as number)) i++;
    }
    return i;
  }

  private literalEnd(i: number, literal: string): number {
    const b = this.bytes;
    for (let k = 0; k < literal.length; k++) {
      if (b[i + k] !== literal.charCodeAt(k)) return -1;
    }
    return i + literal.length;
  }
}

/** The string value a span holds. */
function stringAt(scan: BodyScan, span: Span): string {
  return span.escaped
    ? (JSON.parse(scan.text(span.start, span.end)) as string)
    : scan.text(span.start + 1, span.end - 1);
}

/**
 * The string a span holds, for a member whose values recur from body to body (the method, the
 * tool or resource name): bytes that spell the last value again give back that same string, with
 * no decoding, no new string, and a hash every map that looks it up already knows.
 */
class RecurringString {
  private last = '';

  at(scan: BodyScan, span: Span): string {
    if (!span.escaped && scan.holds(span, this.last)) return this.last;
    this.last = stringAt(scan, span);
    return this.last;
  }
}

const recentMethod = new RecurringString();
const recentTarget = new RecurringString();
const recentVersion = new RecurringString();

/**
 * A request or notification as parsed: its `params` object is built only when something reads
 * it (the protocol version of an `initialize`), not for every call. `paramsEnd` is 0 when the
 * message has no `params`.
 */
class ParsedCall implements McpCall {
  private parsed: Record<string, unknown> | undefined | null = null;
  metaVersion: unknown = undefined;

  constructor(
    readonly id: JsonRpcId,
    readonly method: string,
    readonly kind: MethodKind,
    readonly target: string,
    private readonly body: Buffer,
    private readonly paramsStart: number,
    private readonly paramsEnd: number,
  ) {}

  get params(): Record<string, unknown> | undefined {
    if (this.parsed === null) {
      this.parsed =
        this.paramsEnd === 0
          ? undefined
          : (JSON.parse(this.body.toString(undefined, this.paramsStart, this.paramsEnd)) as Record<
              string,
              unknown
            >);
    }
    return this.parsed;
  }
}

const scanner = new BodyScan();

/**
 * Parses a POSTed MCP message strictly: one JSON-RPC request or notification object (no
 * batches), with unambiguous `method`, `params`, `params.name` and `params.uri` members.
 */
export function parseMcpBody(body: Buffer | string): ParseResult {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  try {
    return parseScanned(scanner.reset(bytes), bytes);
  } finally {
    // The scanner waits for the next body without holding on to this one.
    scanner.release();
  }
}

function parseScanned(scan: BodyScan, body: Buffer): ParseResult {
  if (!scan.run()) return PARSE_ERROR;
  if (!scan.topIsObject || scan.ambiguous) return INVALID;
  const { jsonrpc, id: idSpan, method: methodSpan, params, version } = scan;
  if (jsonrpc.kind !== Kind.String || !scan.holds(jsonrpc, '2.0')) return INVALID;
  let id: JsonRpcId | undefined;
  switch (idSpan.kind) {
    case Kind.Absent:
      id = undefined;
      break;
    case Kind.String:
      id = stringAt(scan, idSpan);
      break;
    case Kind.Number:
      id = scan.numberAt(idSpan);
      break;
    default:
      if (scan.text(idSpan.start, idSpan.end) !== 'null') return INVALID;
      id = null;
  }
  if (methodSpan.kind === Kind.Absent && id !== undefined && (scan.hasResult || scan.hasError)) {
    // A client's reply to a server-initiated request (sampling, elicitation, roots).
    return {
      ok: true,
      call: {
        id,
        method: '',
        kind: NO_CAPABILITY,
        params: undefined,
        target: '',
        metaVersion: undefined,
      },
    };
  }
  if (methodSpan.kind !== Kind.String) return INVALID;
  if (params.kind !== Kind.Absent && params.kind !== Kind.Object) return INVALID;
  const method = recentMethod.at(scan, methodSpan);
  const kind = methodKind(method);
  let target = '';
  if (kind.callsItem) {
    const span = kind.capability === 'resources' ? scan.uri : scan.name;
    if (span.kind !== Kind.String) return INVALID;
    target = recentTarget.at(scan, span);
  }
  const paramsEnd = params.kind === Kind.Absent ? 0 : params.end;
  const call = new ParsedCall(id ?? null, method, kind, target, body, params.start, paramsEnd);
  switch (version.kind) {
    case Kind.Absent:
      break;
    case Kind.String:
      call.metaVersion = recentVersion.at(scan, version);
      break;
    case Kind.Number:
    case Kind.Literal:
      call.metaVersion = JSON.parse(scan.text(version.start, version.end));
      break;
    default:
      // An object or array, which the scan does not delimit inside `params` (never valid).
      call.metaVersion = (call.params as { _meta: Record<string, unknown> })._meta[VERSION_META];
  }
  return { ok: true, call };
}

/** Best-effort request id for error replies when the body is not a usable request. */
export function requestIdOf(body: Buffer | undefined): JsonRpcId {
  if (!body || body.length === 0) return null;
  try {
    const value = JSON.parse(body.toString('utf8')) as { id?: unknown };
    const id = value?.id;
    return typeof id === 'string' || typeof id === 'number' ? id : null;
  } catch {
    return null;
  }
}

/*
 * Eras. The two eras of MCP a proxy serves at one URL (issue 39): the legacy one (2025-11-25 and
 * before: an `initialize` handshake, governance read from the body) and the modern one
 * (2026-07-28: every request carries its version, method and name in mirrored headers, which
 * the gateway authorizes on before it reads the body, then checks the body agrees with).
 */

/** The first version of the modern era; versions are ISO dates, ordered as text. */
export const FIRST_MODERN_VERSION = '2026-07-28';

/** Whether a version has the `initialize` handshake (a request without the header has). */
export function isLegacyVersion(version: string): boolean {
  return version < FIRST_MODERN_VERSION;
}

/** JSON-RPC codes of the 2026-07-28 transport (streamable-http.mdx, "Server Validation"). */
export const HEADER_MISMATCH = -32020;
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;

/**
 * A request's `MCP-Protocol-Version` when it names the modern era (2026-07-28 or later, as the
 * SDK's `isModernProtocolVersion` decides), else undefined: a later version the proxy does not
 * list gets the modern era's UnsupportedProtocolVersionError, an earlier one the legacy refusal.
 */
export function modernVersionOf(headers: IncomingHttpHeaders): string | undefined {
  const version = headers['mcp-protocol-version'];
  return typeof version === 'string' && !isLegacyVersion(version) ? version : undefined;
}

const SENTINEL_START = '=?base64?';
const SENTINEL_END = '?=';
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** Refuses a sentinel whose bytes are not UTF-8; one decoder for every header. */
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A mirrored header's value as the client meant it: a Base64 sentinel (`=?base64?…?=`) decoded
 * to its UTF-8 text, a plain value as it is. Undefined when the value has characters an HTTP
 * field value may not (RFC 9110 §5.5: visible ASCII, space, tab; Node lets bytes over 0x7f
 * through as latin1) or the sentinel is not valid Base64 of valid UTF-8.
 */
export function decodeMirrored(value: string): string | undefined {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code > 0x7e || (code < 0x20 && code !== 0x09)) return undefined;
  }
  if (!(value.startsWith(SENTINEL_START) && value.endsWith(SENTINEL_END))) return value;
  const encoded = value.slice(SENTINEL_START.length, value.length - SENTINEL_END.length);
  if (encoded.length % 4 !== 0 || !BASE64.test(encoded)) return undefined;
  try {
    return STRICT_UTF8.decode(Buffer.from(encoded, 'base64'));
  } catch {
    return undefined;
  }
}

/**
 * A refusal of the modern era's own: 400 with this JSON-RPC error, answered once the body is
 * read so that it carries the request's id (2026-07-28: every error response does).
 */
export class EraRefusal {
  constructor(
    readonly reason: string,
    private readonly code: number,
    private readonly message: string,
    private readonly data?: unknown,
  ) {}

  body(id: JsonRpcId): unknown {
    return jsonRpcError(id, this.code, this.message, this.data);
  }
}

const mismatch = (message: string) => new EraRefusal(message, HEADER_MISMATCH, message);

/**
 * 400 UnsupportedProtocolVersionError, with the versions a modern client may retry with: the
 * proxy's modern ones (what its `server/discover` can list); a proxy of the legacy era only
 * lists its legacy ones, which tells the client to fall back to `initialize`.
 */
export function unsupportedVersion(specVersions: ReadonlySet<string>, requested: string) {
  const all = [...specVersions];
  const modern = all.filter((version) => !isLegacyVersion(version));
  return new EraRefusal(
    'unsupported protocol version',
    UNSUPPORTED_PROTOCOL_VERSION,
    'Unsupported protocol version',
    { supported: modern.length > 0 ? modern : all, requested },
  );
}

/** The request's `_meta` lacks the version: the envelope is invalid (-32602, 2026-07-28). */
const NO_VERSION_META = new EraRefusal(
  'request _meta without its protocol version',
  -32602,
  'Invalid params: _meta["io.modelcontextprotocol/protocolVersion"] is required',
);

/**
 * The call a modern POST says it is, from its `Mcp-Method` and `Mcp-Name` headers alone: what
 * the policies decide on before the body is read. A refusal when a required header is missing
 * or has invalid characters, or an `Mcp-Param-*` header does.
 */
export function headerCall(headers: IncomingHttpHeaders): McpCall | EraRefusal {
  const method = headers['mcp-method'];
  if (typeof method !== 'string' || method === '') {
    return mismatch('Header mismatch: required header Mcp-Method is missing');
  }
  if (decodeMirrored(method) !== method || method.startsWith(SENTINEL_START)) {
    return mismatch('Header mismatch: Mcp-Method header has invalid characters');
  }
  const kind = methodKind(method);
  let target = '';
  if (kind.callsItem) {
    const name = headers['mcp-name'];
    if (typeof name !== 'string') {
      return mismatch(`Header mismatch: required header Mcp-Name is missing for ${method}`);
    }
    const decoded = decodeMirrored(name);
    if (decoded === undefined) {
      return mismatch('Header mismatch: Mcp-Name header has invalid characters');
    }
    target = decoded;
  }
  for (const name in headers) {
    if (!name.startsWith('mcp-param-')) continue;
    const value = headers[name];
    if (typeof value !== 'string' || decodeMirrored(value) === undefined) {
      return mismatch(`Header mismatch: ${name} header has invalid characters`);
    }
  }
  return { id: null, method, kind, params: undefined, target, metaVersion: undefined };
}

/**
 * Whether the body says what the headers said (the 2026-07-28 transport's "Server
 * Validation"): its `method` is `Mcp-Method`, its `params.name` / `params.uri` is the decoded
 * `Mcp-Name`, its `_meta` version is `MCP-Protocol-Version`. A refusal naming the header and
 * both values when not, so nothing the policies did not decide on reaches the upstream (a
 * `_meta` without the version is an invalid envelope, -32602, as the SDK answers it).
 */
export function bodyMismatch(
  fromHeaders: McpCall,
  body: McpCall,
  version: string,
): EraRefusal | undefined {
  const differs = (header: string, headerValue: string, bodyValue: unknown) =>
    mismatch(
      `Header mismatch: ${header} header value ${JSON.stringify(headerValue)} does not match body value ${JSON.stringify(bodyValue)}`,
    );
  if (body.method !== fromHeaders.method) {
    return differs('Mcp-Method', fromHeaders.method, body.method);
  }
  if (body.target !== fromHeaders.target) {
    return differs('Mcp-Name', fromHeaders.target, body.target);
  }
  const bodyVersion = body.metaVersion;
  if (bodyVersion === undefined) return NO_VERSION_META;
  if (bodyVersion !== version) return differs('MCP-Protocol-Version', version, bodyVersion);
  return undefined;
}

/** The newest legacy version a proxy lists: what the gateway counter-offers to `initialize`. */
export function newestLegacyVersion(specVersions: ReadonlySet<string>): string | undefined {
  let newest: string | undefined;
  for (const version of specVersions) {
    if (isLegacyVersion(version) && (newest === undefined || version > newest)) {
      newest = version;
    }
  }
  return newest;
}

/**
 * One `x-mcp-header` annotation of a tool's `inputSchema`: the `Mcp-Param-{Name}` header
 * (lower-cased, as Node names it) and the chain of `properties` keys to its argument.
 */
export interface ParamHeader {
  readonly header: string;
  readonly path: readonly string[];
  /** The annotated property's JSON Schema `type`, if it names one: how its header reads. */
  readonly type: string | undefined;
}

/**
 * common's `isJsonObject`, written here because it runs on every modern call: a call through the
 * gateway stays within the source files `test/call-path.test.ts` allows (ARCHITECTURE.md).
 */
function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** How deep a chain of `properties` is followed for `x-mcp-header` annotations. */
const MAX_PARAM_DEPTH = 8;

/**
 * The `x-mcp-header` annotations of a listed tool, on the chains of `properties` keys only
 * (2026-07-28 "Custom Headers from Tool Parameters": an annotation reached through `items`,
 * a composition or `$ref` is invalid, and not learnt here).
 */
export function paramHeadersOf(tool: Record<string, unknown>): ParamHeader[] {
  const found: ParamHeader[] = [];
  const walk = (schema: unknown, path: string[]) => {
    if (!isObject(schema) || !isObject(schema.properties) || path.length >= MAX_PARAM_DEPTH) return;
    for (const [key, property] of Object.entries(schema.properties)) {
      if (!isObject(property)) continue;
      const name = property['x-mcp-header'];
      const at = [...path, key];
      if (typeof name === 'string' && FIELD_NAME_TOKEN.test(name)) {
        const type = typeof property.type === 'string' ? property.type : undefined;
        found.push({ header: `mcp-param-${name.toLowerCase()}`, path: at, type });
      }
      walk(property, at);
    }
  };
  walk(tool.inputSchema, []);
  return found;
}

/** Whether a decoded header value stands for an argument's value (integers numerically). */
function mirrors(decoded: string, value: unknown): boolean {
  if (typeof value === 'string') return decoded === value;
  if (typeof value === 'boolean') return decoded === String(value);
  if (typeof value === 'number') return decoded.trim() !== '' && Number(decoded) === value;
  return false;
}

/**
 * Whether a tools/call's `Mcp-Param-*` headers mirror its arguments for the annotations the
 * gateway knows of the tool: a header present exactly when its argument is present and not
 * null, and then equal to it (2026-07-28 "Server Behavior for Custom Headers").
 */
export function paramMismatch(
  annotations: readonly ParamHeader[],
  headers: IncomingHttpHeaders,
  args: unknown,
): EraRefusal | undefined {
  for (const { header, path } of annotations) {
    let value: unknown = args;
    for (const key of path) value = isObject(value) ? value[key] : undefined;
    const sent = headers[header];
    if (value === undefined || value === null) {
      if (sent === undefined) continue;
      return mismatch(`Header mismatch: ${header} header sent without its argument`);
    }
    if (typeof sent !== 'string') {
      return mismatch(`Header mismatch: required header ${header} is missing`);
    }
    const decoded = decodeMirrored(sent);
    if (decoded === undefined || !mirrors(decoded, value)) {
      return mismatch(
        `Header mismatch: ${header} header value ${JSON.stringify(decoded ?? sent)} does not match body value ${JSON.stringify(value)}`,
      );
    }
  }
  return undefined;
}

/** Tools whose annotations a proxy keeps at most: a larger catalogue is validated in part. */
const MAX_ANNOTATED_TOOLS = 1024;

/**
 * What a proxy learnt of its upstream's `x-mcp-header` annotations from the modern tools/list
 * answers that passed through it, by tool name; bounded, and new with every deploy.
 */
export class ParamHeaderBook {
  private readonly byTool = new Map<string, readonly ParamHeader[]>();

  learn(tool: unknown): void {
    if (!isObject(tool) || typeof tool.name !== 'string') return;
    const found = paramHeadersOf(tool);
    if (found.length === 0) this.byTool.delete(tool.name);
    else if (this.byTool.has(tool.name) || this.byTool.size < MAX_ANNOTATED_TOOLS) {
      this.byTool.set(tool.name, found);
    }
  }

  of(tool: string): readonly ParamHeader[] | undefined {
    return this.byTool.get(tool);
  }
}
