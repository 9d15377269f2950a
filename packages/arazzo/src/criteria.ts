/** Evaluation of Criterion Objects: simple, regex and jsonpath (RFC 9535). */
import { type JsonValue, query as jsonPathQuery } from 'jsonpath-rfc9535';
import { type ConditionNode, evaluateConditionNode, parseCondition, truthy } from './condition.js';
import {
  type ExpressionScope,
  evaluateExpression,
  parseExpression,
  parseTemplate,
  renderTemplate,
} from './expression.js';
import type { CriterionObject } from './types.js';

const parsedConditions = new Map<string, ConditionNode>();

function simpleCondition(text: string): ConditionNode {
  let node = parsedConditions.get(text);
  if (!node) {
    node = parseCondition(text);
    parsedConditions.set(text, node);
  }
  return node;
}

function criterionKind(criterion: CriterionObject): string {
  const { type } = criterion;
  if (type === undefined) return 'simple';
  return typeof type === 'string' ? type : type.type;
}

/** True when the criterion passes. Validation has already rejected unparsable criteria. */
export function criterionPasses(criterion: CriterionObject, scope: ExpressionScope): boolean {
  const kind = criterionKind(criterion);
  if (kind === 'simple') {
    return truthy(evaluateConditionNode(simpleCondition(criterion.condition), scope));
  }
  const context =
    criterion.context === undefined
      ? undefined
      : evaluateExpression(parseExpression(criterion.context), scope);
  if (context === undefined || context === null) return false;
  const condition = criterion.condition.includes('{$')
    ? renderTemplate(parseTemplate(criterion.condition), scope)
    : criterion.condition;
  try {
    if (kind === 'regex') {
      const text = typeof context === 'string' ? context : JSON.stringify(context);
      return new RegExp(condition).test(text);
    }
    if (kind === 'jsonpath') {
      const document = typeof context === 'string' ? JSON.parse(context) : context;
      return jsonPathQuery(document as JsonValue, condition).length > 0;
    }
  } catch {
    // An invalid pattern or path (only possible once expressions are embedded) fails.
    return false;
  }
  return false;
}

export function allPass(criteria: CriterionObject[] | undefined, scope: ExpressionScope): boolean {
  return (criteria ?? []).every((criterion) => criterionPasses(criterion, scope));
}
