/** The parts of an Arazzo 1.0 document the executor reads (after schema validation). */

export interface ReusableObject {
  reference: string;
  value?: unknown;
}

export interface ParameterObject {
  name: string;
  in?: 'path' | 'query' | 'header' | 'cookie';
  value: unknown;
}

export type CriterionType =
  | 'simple'
  | 'regex'
  | 'jsonpath'
  | 'xpath'
  | { type: 'jsonpath' | 'xpath'; version: string };

export interface CriterionObject {
  context?: string;
  condition: string;
  type?: CriterionType;
}

export interface ActionObject {
  name: string;
  type: 'end' | 'goto' | 'retry';
  workflowId?: string;
  stepId?: string;
  retryAfter?: number;
  retryLimit?: number;
  criteria?: CriterionObject[];
}

export interface RequestBodyObject {
  contentType?: string;
  payload?: unknown;
  replacements?: { target: string; value: unknown }[];
}

export interface StepObject {
  stepId: string;
  description?: string;
  operationId?: string;
  operationPath?: string;
  workflowId?: string;
  parameters?: (ParameterObject | ReusableObject)[];
  requestBody?: RequestBodyObject;
  successCriteria?: CriterionObject[];
  onSuccess?: (ActionObject | ReusableObject)[];
  onFailure?: (ActionObject | ReusableObject)[];
  outputs?: Record<string, string>;
}

export interface WorkflowObject {
  workflowId: string;
  summary?: string;
  description?: string;
  inputs?: Record<string, unknown>;
  dependsOn?: string[];
  steps: StepObject[];
  successActions?: (ActionObject | ReusableObject)[];
  failureActions?: (ActionObject | ReusableObject)[];
  outputs?: Record<string, string>;
  parameters?: (ParameterObject | ReusableObject)[];
}

export interface ComponentsObject {
  inputs?: Record<string, unknown>;
  parameters?: Record<string, ParameterObject>;
  successActions?: Record<string, ActionObject>;
  failureActions?: Record<string, ActionObject>;
}

export interface SourceDescriptionObject {
  name: string;
  url: string;
  type?: 'openapi' | 'arazzo';
}

export interface ArazzoDocument {
  arazzo: string;
  info: { title: string; version: string; summary?: string; description?: string };
  sourceDescriptions: SourceDescriptionObject[];
  workflows: WorkflowObject[];
  components?: ComponentsObject;
}

export function isReusable(value: unknown): value is ReusableObject {
  return value !== null && typeof value === 'object' && 'reference' in value;
}
