/** The problem each domain rule (src/base/domain-error.ts) is answered with: where a store's refusal becomes HTTP. */
import { DomainError, type DomainRule } from '../base/domain-error.ts';
import { validationError } from './json-body.ts';
import { HttpError } from './problem.ts';

/** The status of each rule's problem (contract §5). */
export const DOMAIN_STATUS: Readonly<Record<DomainRule, number>> = {
  'not-found': 404,
  forbidden: 403,
  'invalid-transition': 409,
  'order-not-editable': 409,
  'order-has-payments': 409,
  'order-not-payable': 409,
  validation: 422,
};

/** The problem `error` is answered with when it is a refusal (an `HttpError`, a `DomainError`); else `undefined`. */
export function refusalOf(error: unknown): HttpError | undefined {
  if (error instanceof HttpError) return error;
  if (!(error instanceof DomainError)) return undefined;
  if (error.errors !== undefined) return validationError(error.errors);
  return new HttpError(DOMAIN_STATUS[error.rule], error.rule, { detail: error.message });
}
