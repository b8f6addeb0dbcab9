/**
 * A rule of the domain that a request breaks, as the stores say it, knowing nothing of HTTP: the rule (named as its
 * problem type, contract §5) and what to tell the client. src/http/domain-problem.ts gives it its status.
 */

/** The rules a store refuses a request by. */
export type DomainRule =
  | 'not-found'
  | 'forbidden'
  | 'invalid-transition'
  | 'order-not-editable'
  | 'order-has-payments'
  | 'order-not-payable'
  | 'validation';

/** A place in the request's body (`/items/0/productId`) and what is wrong with it there. */
export interface Misplaced {
  readonly pointer: string;
  readonly detail: string;
}

export class DomainError extends Error {
  override name = 'DomainError';
  readonly rule: DomainRule;
  /** For `validation`: each place in the body that breaks the rule (the message then names them). */
  readonly errors: readonly Misplaced[] | undefined;

  constructor(rule: Exclude<DomainRule, 'validation'>, detail: string);
  constructor(rule: 'validation', errors: readonly Misplaced[]);
  constructor(rule: DomainRule, detail: string | readonly Misplaced[]) {
    super(typeof detail === 'string' ? detail : detail.map((e) => `${e.pointer} ${e.detail}`).join('; '));
    this.rule = rule;
    this.errors = typeof detail === 'string' ? undefined : detail;
  }
}

/** The `validation` refusal of these places in the body. */
export function invalidAt(...errors: Misplaced[]): DomainError {
  return new DomainError('validation', errors);
}
