/** Turning an operation step (parameters, request body, server, credentials) into a request. */
import { McpIdentityError } from '@mcp-identity/common';
import {
  type CompiledValue,
  compileValue,
  type ExchangeRequest,
  type ExpressionScope,
  evaluateValue,
  looksLikeExpression,
  parseTemplate,
  renderTemplate,
} from './expression.js';
import { setByPointer } from './json-pointer.js';
import { PerStep } from './memo.js';
import { type ArazzoModel, resolveParameters } from './model.js';
import type { Operation } from './openapi.js';
import type { AppliedCredentials } from './security.js';
import type { ParameterObject, RequestBodyObject, StepObject, WorkflowObject } from './types.js';

/** A step's request cannot be built (missing path value, bad replacement target, ...). */
export class RequestBuildError extends McpIdentityError {
  readonly code = 'ERR_ARAZZO_REQUEST_BUILD';
}

/**
 * `encodeURIComponent`, with each lone surrogate (not a Unicode scalar value: UTF-8 cannot
 * encode it) replaced by U+FFFD first, as the WHATWG URL Standard's percent-encoding does and
 * URLSearchParams does for the query: an odd argument reaches the API as it would in a query,
 * instead of failing the run before anything is sent.
 */
function percentEncode(text: string): string {
  return encodeURIComponent(text.replace(/\p{Cs}/gu, '\uFFFD'));
}

export interface BuiltRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  exchange: ExchangeRequest;
}

function parameterKey(parameter: ParameterObject): string {
  const name = parameter.in === 'header' ? parameter.name.toLowerCase() : parameter.name;
  return `${parameter.in}\u0000${name}`;
}

/** Workflow-level parameters, overridden by step parameters with the same name and location. */
export function stepParameters(
  model: ArazzoModel,
  workflow: WorkflowObject,
  step: StepObject,
): ParameterObject[] {
  const merged = new Map<string, ParameterObject>();
  for (const parameter of resolveParameters(model, workflow.parameters))
    merged.set(parameterKey(parameter), parameter);
  for (const parameter of resolveParameters(model, step.parameters))
    merged.set(parameterKey(parameter), parameter);
  return [...merged.values()];
}

function scalar(value: unknown): string {
  return typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value);
}

function appendQuery(search: URLSearchParams, name: string, value: unknown): void {
  if (value === undefined || value === null) return;
  if (Array.isArray(value)) for (const item of value) appendQuery(search, name, item);
  else if (typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) appendQuery(search, key, item);
  } else search.append(name, String(value));
}

interface Payload {
  value: unknown;
  /** the payload is document text to send as written, not a value to encode */
  text: boolean;
}

type CompiledPayload = (scope: ExpressionScope) => Payload;

function compilePayload(payload: unknown): CompiledPayload {
  if (typeof payload !== 'string' || looksLikeExpression(payload)) {
    const value = compileValue(payload);
    return (scope) => ({ value: value(scope), text: false });
  }
  if (!payload.includes('{$')) return () => ({ value: payload, text: true });
  try {
    // A JSON template: parse first so substituted values are encoded as JSON, not spliced in.
    const value = compileValue(JSON.parse(payload));
    return (scope) => ({ value: value(scope), text: false });
  } catch {
    const parts = parseTemplate(payload);
    return (scope) => ({ value: renderTemplate(parts, scope), text: true });
  }
}

function operationContentType(operation: Operation): string | undefined {
  const requestBody = operation.source.deref(operation.operation.requestBody) as
    | { content?: Record<string, unknown> }
    | undefined;
  const types = Object.keys(requestBody?.content ?? {});
  return types[0];
}

async function encodeBody(
  payload: Payload,
  contentType: string,
): Promise<{ body: string | Uint8Array; contentType: string }> {
  const { value } = payload;
  if (payload.text && typeof value === 'string') return { body: value, contentType };
  const type = contentType.toLowerCase();
  if (
    type.includes('application/x-www-form-urlencoded') &&
    value !== null &&
    typeof value === 'object'
  ) {
    const form = new URLSearchParams();
    for (const [key, item] of Object.entries(value))
      if (item !== undefined) form.append(key, scalar(item));
    return { body: form.toString(), contentType };
  }
  if (type.includes('multipart/form-data') && value !== null && typeof value === 'object') {
    const form = new FormData();
    for (const [key, item] of Object.entries(value))
      if (item !== undefined) form.append(key, scalar(item));
    const encoded = new Response(form);
    return {
      body: new Uint8Array(await encoded.arrayBuffer()),
      contentType: encoded.headers.get('content-type') ?? contentType,
    };
  }
  if (/[/+]json\b/.test(type)) return { body: JSON.stringify(value ?? null), contentType };
  return { body: typeof value === 'string' ? value : JSON.stringify(value ?? null), contentType };
}

function applyReplacements(
  payload: Payload,
  body: RequestBodyObject,
  scope: ExpressionScope,
): Payload {
  if (!body.replacements?.length) return payload;
  let value = payload.value;
  if (payload.text && typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      throw new RequestBuildError('payload replacements need a JSON payload');
    }
  }
  for (const replacement of body.replacements) {
    try {
      value = setByPointer(value, replacement.target, evaluateValue(replacement.value, scope));
    } catch (error) {
      throw new RequestBuildError(
        `payload replacement "${replacement.target}": ${(error as Error).message}`,
      );
    }
  }
  return { value, text: false };
}

/** What building a step's request needs of the document, worked out once per step. */
interface RequestPlan {
  parameters: readonly { in: ParameterObject['in']; name: string; value: CompiledValue }[];
  payload: CompiledPayload | undefined;
  /** the step's or else the operation's request media type, when either names one */
  contentType: string | undefined;
}

const plans = new PerStep<RequestPlan>();

function planRequest(
  model: ArazzoModel,
  workflow: WorkflowObject,
  step: StepObject,
  operation: Operation,
): RequestPlan {
  const body = step.requestBody;
  const hasPayload = body && (body.payload !== undefined || body.replacements?.length);
  return {
    parameters: stepParameters(model, workflow, step).map((parameter) => ({
      in: parameter.in,
      name: parameter.in === 'header' ? parameter.name.toLowerCase() : parameter.name,
      value: compileValue(parameter.value),
    })),
    payload: hasPayload ? compilePayload(body.payload) : undefined,
    contentType: hasPayload ? (body.contentType ?? operationContentType(operation)) : undefined,
  };
}

export async function buildRequest(
  model: ArazzoModel,
  workflow: WorkflowObject,
  step: StepObject,
  operation: Operation,
  scope: ExpressionScope,
  credentials: AppliedCredentials,
  baseUrl: string,
): Promise<BuiltRequest> {
  const plan =
    plans.get(workflow, step) ??
    plans.set(workflow, step, planRequest(model, workflow, step, operation));
  const exchange: ExchangeRequest = { headers: {}, query: {}, path: {}, body: undefined };
  const headers: Record<string, string> = { ...credentials.headers };
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(credentials.query)) search.append(name, value);
  const cookies: string[] = Object.entries(credentials.cookies).map(
    ([n, v]) => `${n}=${percentEncode(v)}`,
  );

  for (const parameter of plan.parameters) {
    const value = parameter.value(scope);
    switch (parameter.in) {
      case 'path':
        exchange.path[parameter.name] = value;
        break;
      case 'query':
        exchange.query[parameter.name] = value;
        appendQuery(search, parameter.name, value);
        break;
      case 'header': {
        if (value === undefined || value === null) break;
        const text = Array.isArray(value) ? value.map(scalar).join(',') : scalar(value);
        exchange.headers[parameter.name] = text;
        headers[parameter.name] = text;
        break;
      }
      case 'cookie':
        if (value !== undefined && value !== null)
          cookies.push(`${parameter.name}=${percentEncode(scalar(value))}`);
        break;
    }
  }

  const path = operation.path.replace(/\{([^}]+)\}/g, (_whole, name: string) => {
    const value = exchange.path[name];
    if (value === undefined || value === null) {
      throw new RequestBuildError(`path parameter "${name}" of ${operation.path} has no value`);
    }
    return percentEncode(scalar(value));
  });
  const query = search.toString();
  const url = `${baseUrl.replace(/\/+$/, '')}${path}${query ? `?${query}` : ''}`;
  if (cookies.length > 0) headers.cookie = cookies.join('; ');

  let body: string | Uint8Array | undefined;
  if (plan.payload && step.requestBody) {
    const payload = applyReplacements(plan.payload(scope), step.requestBody, scope);
    exchange.body = payload.value;
    const contentType = plan.contentType ?? (payload.text ? 'text/plain' : 'application/json');
    const encoded = await encodeBody(payload, contentType);
    body = encoded.body;
    headers['content-type'] = encoded.contentType;
  }
  return { method: operation.method.toUpperCase(), url, headers, body, exchange };
}
