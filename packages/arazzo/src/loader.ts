/** Loading an Arazzo document and its OpenAPI source descriptions, then validating them. */

import { readFile } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { UnexpectedResponseError } from '@mcp-identity/common';
import { parseDocument } from 'yaml';
import { type ArazzoProblem, ArazzoValidationError } from './errors.js';
import {
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_TIMEOUT_MS,
  HttpClient,
  tlsVerifyFromEnv,
} from './http.js';
import type { ArazzoModel, SourceEntry } from './model.js';
import { OpenApiSource } from './openapi.js';
import { schemaProblems } from './schema.js';
import type { ArazzoDocument, WorkflowObject } from './types.js';
import { resolveLocalRefs, semanticProblems } from './validate.js';

export interface LoadOptions {
  /** source description name -> server URL that replaces the OpenAPI servers[0] URL */
  sourceServers?: Record<string, string>;
  /** default true; false when ARAZZO_DISABLE_TLS_VERIFY=1 */
  tlsVerify?: boolean;
  /** per-request timeout for fetching http(s) documents, default 30000 */
  timeoutMs?: number;
}

const isUrl = (location: string) => /^https?:\/\//i.test(location);

/** Absolute path or URL of a reference, resolved against the document that contains it. */
export function resolveLocation(reference: string, base: string): string {
  if (isUrl(reference)) return reference;
  if (isUrl(base)) return new URL(reference, base).href;
  if (reference.startsWith('file:')) return fileURLToPath(reference);
  return fileURLToPath(new URL(reference, pathToFileURL(base)));
}

interface Parsed {
  value?: Record<string, unknown>;
  problems: ArazzoProblem[];
}

async function readText(location: string, http: HttpClient): Promise<string> {
  if (!isUrl(location)) return readFile(location, 'utf8');
  const response = await http.send({
    method: 'GET',
    url: location,
    headers: { accept: 'application/yaml, application/json, text/yaml, */*' },
  });
  if (response.status !== 200)
    throw new UnexpectedResponseError(`GET answered HTTP ${response.status}`);
  return response.body.toString('utf8');
}

async function readDocument(location: string, http: HttpClient): Promise<Parsed> {
  let text: string;
  try {
    text = await readText(location, http);
  } catch (error) {
    const err = error as NodeJS.ErrnoException;
    const why = err.code === 'ENOENT' ? 'file not found' : err.message;
    return {
      problems: [{ file: location, pointer: '', message: `cannot read the document: ${why}` }],
    };
  }
  const document = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  if (document.errors.length > 0) {
    return {
      problems: document.errors.map((error) => ({
        file: location,
        pointer: '',
        message: `not valid YAML or JSON: ${error.message.split('\n')[0]}`,
      })),
    };
  }
  const value = document.toJS({ maxAliasCount: 1000 });
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return {
      problems: [
        { file: location, pointer: '', message: 'the document is not a YAML or JSON object' },
      ],
    };
  }
  return { value, problems: [] };
}

async function loadSource(
  entry: SourceEntry,
  index: number,
  arazzoLocation: string,
  http: HttpClient,
): Promise<ArazzoProblem[]> {
  if (entry.type !== 'openapi') return [];
  const parsed = await readDocument(entry.location, http);
  if (!parsed.value) {
    return parsed.problems.map((problem) => ({
      ...problem,
      file: arazzoLocation,
      pointer: `/sourceDescriptions/${index}/url`,
      message: `source "${entry.name}" (${entry.location}): ${problem.message}`,
    }));
  }
  const doc = parsed.value;
  const problems: ArazzoProblem[] = [];
  if (typeof doc.openapi !== 'string' || !/^3\.[01]\.\d+/.test(doc.openapi)) {
    problems.push({
      file: entry.location,
      pointer: '/openapi',
      message: 'only OpenAPI 3.0.x and 3.1.x descriptions are supported',
    });
  }
  if (doc.paths !== undefined && (doc.paths === null || typeof doc.paths !== 'object')) {
    problems.push({ file: entry.location, pointer: '/paths', message: 'paths must be an object' });
  }
  const source = new OpenApiSource(entry.name, entry.location, doc);
  for (const { pointer, ref } of source.unresolvedRefs()) {
    problems.push({
      file: entry.location,
      pointer,
      message: ref.startsWith('#')
        ? `$ref "${ref}" does not resolve`
        : `external $ref "${ref}" is not supported (only local references)`,
    });
  }
  entry.openapi = source;
  return problems;
}

function buildSources(doc: ArazzoDocument, location: string): SourceEntry[] {
  const list = Array.isArray(doc.sourceDescriptions) ? doc.sourceDescriptions : [];
  return list.map((sd) => ({
    name: String(sd?.name),
    url: String(sd?.url),
    type: sd?.type === 'arazzo' ? 'arazzo' : 'openapi',
    location: resolveLocation(String(sd?.url), location),
  }));
}

/** Loads, parses and validates; throws ArazzoValidationError listing every problem found. */
export async function loadModel(location: string, options: LoadOptions = {}): Promise<ArazzoModel> {
  const absolute = isUrl(location) ? location : isAbsolute(location) ? location : resolve(location);
  const http = new HttpClient({
    tlsVerify: options.tlsVerify ?? tlsVerifyFromEnv(process.env),
    timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    maxResponseBytes: DEFAULT_MAX_RESPONSE_BYTES,
  });
  try {
    const main = await readDocument(absolute, http);
    if (!main.value) throw new ArazzoValidationError(main.problems);
    const doc = main.value as unknown as ArazzoDocument;
    const problems: ArazzoProblem[] = schemaProblems(doc).map((p) => ({ file: absolute, ...p }));
    const entries = buildSources(doc, absolute);
    const loaded = await Promise.all(
      entries.map((entry, i) => loadSource(entry, i, absolute, http)),
    );
    problems.push(...loaded.flat());
    const model: ArazzoModel = {
      location: absolute,
      doc,
      sources: new Map(entries.map((entry) => [entry.name, entry])),
      workflows: new Map(
        (Array.isArray(doc.workflows) ? doc.workflows : [])
          .filter((w): w is WorkflowObject => w !== null && typeof w === 'object')
          .map((w) => [w.workflowId, w]),
      ),
      sourceServers: options.sourceServers ?? {},
    };
    try {
      problems.push(...semanticProblems(model));
    } catch (error) {
      // A structurally broken document can trip a semantic check; its schema problems say why.
      if (problems.length === 0) throw error;
    }
    if (problems.length > 0) throw new ArazzoValidationError(problems);
    return model;
  } finally {
    await http.close();
  }
}

/** The workflow's inputs schema with component references resolved. */
export function inputsSchema(
  model: ArazzoModel,
  workflow: WorkflowObject,
): Record<string, unknown> | undefined {
  if (workflow.inputs === undefined) return undefined;
  return resolveLocalRefs(model, workflow.inputs) as Record<string, unknown>;
}
