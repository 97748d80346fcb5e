import { END_REASONS, EndReason } from './calls';
import type { FieldProblem } from './problems';

/*
 * What counts as a successful call: a workflow's `success` and an agent's `post_call.success` share this definition,
 * its checks and its evaluation (the workflows service decides its recipients with it, the calls service each call's
 * `successful`).
 */

export interface SuccessCriteria {
  /** The call's end reasons that count as success. Default `["completed", "hangup", "transferred"]`. */
  end_reasons?: string[];
  /**
   * A post-call extracted field (the agent's `post_call.extraction`) that decides success: present and truthy, or equal
   * to `equals` when given. The verdict then waits for the call's analysis.
   */
  extracted_field?: { name: string; equals?: string | number | boolean };
}

export const DEFAULT_SUCCESS_END_REASONS: readonly EndReason[] = ['completed', 'hangup', 'transferred'];

/**
 * Whether a call that ended with `endReason` met `success`: its end reason is one of `end_reasons` and, with an
 * `extracted_field`, that field of the call's post-call analysis (`extracted`) is present and truthy, or equal to
 * `equals` (compared as text: a model may answer `"true"` for true). Null: not decided yet, the end reason counts and
 * the analysis has not been written (`extracted` absent).
 */
export function callSucceeded(success: SuccessCriteria, endReason: string, extracted?: Record<string, unknown> | null): boolean | null {
  const reasons: readonly string[] = success.end_reasons ?? DEFAULT_SUCCESS_END_REASONS;
  if (!reasons.includes(endReason)) return false;
  const field = success.extracted_field;
  if (!field) return true;
  if (!extracted) return null;
  const value = extracted[field.name];
  if (field.equals === undefined) return Boolean(value);
  return value !== undefined && value !== null && String(value) === String(field.equals);
}

/**
 * The problems of success criteria, under `at` (`success`, `post_call.success`): end reasons must be known ones (at
 * least one when the list is given); the extracted field must be one of `extraction` (the agent's
 * `post_call.extraction`), checked only when that is given.
 */
export function successCriteriaProblems(success: SuccessCriteria, at: string, extraction?: readonly { name: string }[]): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const reasons = success.end_reasons;
  if (reasons?.length === 0) problems.push({ field: `${at}.end_reasons`, message: 'must name at least one end reason' });
  reasons?.forEach((reason, i) => {
    if (!END_REASONS.includes(reason as EndReason)) problems.push({ field: `${at}.end_reasons[${i}]`, message: `must be one of ${END_REASONS.join(', ')}` });
  });
  const field = success.extracted_field;
  if (field && extraction && !extraction.some((e) => e.name === field.name)) {
    problems.push({ field: `${at}.extracted_field.name`, message: `is not a field the agent's post_call.extraction extracts` });
  }
  return problems;
}
