import { isJsonObject } from '@mcp-identity/common';
import type { FastifyRequest } from 'fastify';
import { failure } from './failures.js';

function mediaType(request: FastifyRequest): string {
  return (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

/** The body of a form post (RFC 6749 §3.2: token and authorize posts are form-encoded). */
export function readForm(request: FastifyRequest): URLSearchParams {
  if (mediaType(request) !== 'application/x-www-form-urlencoded') {
    throw failure.notForm();
  }
  return new URLSearchParams(typeof request.body === 'string' ? request.body : '');
}

/** The JSON object of a registration request (RFC 7591 §3.1). */
export function readJsonObject(request: FastifyRequest): Record<string, unknown> {
  if (mediaType(request) !== 'application/json') {
    throw failure.notJson();
  }
  try {
    const body = JSON.parse(typeof request.body === 'string' ? request.body : '') as unknown;
    if (isJsonObject(body)) return body;
  } catch {
    // answered below
  }
  throw failure.notJsonObject();
}

/** The form's fields, repeated ones as arrays (as the query string parser gives them). */
export function formFields(form: URLSearchParams): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const name of new Set(form.keys())) {
    const values = form.getAll(name);
    fields[name] = values.length > 1 ? values : values[0];
  }
  return fields;
}

export function readCookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie ?? '';
  for (const part of header.split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return rest.join('=');
  }
  return undefined;
}
