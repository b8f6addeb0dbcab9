/**
 * Idempotency keys (contract §7), one module and one SQL store for every POST. A keyed request runs in one
 * transaction that tries an advisory lock on (user, key) and reads the stored result (`answerClaimed()`); the
 * handler runs in a savepoint of it, so its effect and the stored result commit together or not at all.
 */
import type { Principal } from '../auth/authenticator.ts';
import type { Db, RowOf } from '../db/database.ts';
import { HttpError, problemResponse } from '../http/problem.ts';
import { refusalOf } from '../http/domain-problem.ts';
import { isStored, STORED_HEADERS } from '../http/idempotency-key.ts';
import { bufferedResponse, contentOf, fieldsOf } from '../http/response.ts';

export interface IdempotentRequest {
  readonly principal: Principal;
  readonly key: string;
  readonly fingerprint: string;
  /** For a problem response built here: the path and the request id. */
  readonly instance: string;
  readonly requestId: string;
}

interface StoredRow {
  fingerprint: string;
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
}

/** ClaimIdempotencyKey's one row: the lock, and the stored result or, without one, NULLs. */
export type ClaimRow = { locked: boolean } & (StoredRow | { fingerprint: null });

/** The claim of a row of ClaimIdempotencyKey or CreateOrderKeyed: a stored result when it has one. */
export function claimOf(row: RowOf<'ClaimIdempotencyKey'>): ClaimRow {
  const { locked, fingerprint, status, headers, body } = row;
  if (fingerprint === null || status === null || body === null) return { locked, fingerprint: null };
  return { locked, fingerprint, status, headers: headers as Record<string, string>, body };
}

export const REPLAYED_HEADER = 'idempotent-replayed';

/** Runs `handler` once per (user, key), storing its finished response; `inSavepoint` false: in the transaction. */
export async function runIdempotent(
  db: Db,
  request: IdempotentRequest,
  handler: (savepoint: Db) => Promise<Response>,
  inSavepoint = true,
): Promise<Response> {
  const { principal, key } = request;
  return db.begin(async (tx) => {
    // One statement, the read's snapshot taken after the lock is tried: a first request that committed before
    // the lock came free is always seen (sql/migrations/0009_idempotency_claim.sql).
    const claim = claimOf(await tx.one('ClaimIdempotencyKey', [principal.userId, key]));
    const earlier = answerClaimed(claim, request);
    if (earlier !== undefined) return earlier;
    let response: Response;
    try {
      response = await (inSavepoint ? tx.savepoint(handler) : handler(tx));
    } catch (error) {
      // A business-rule refusal (409, 422) is a result too; its partial effects are rolled back with the savepoint.
      const refusal = refusalOf(error);
      if (refusal === undefined || !isStored(refusal.status)) throw error;
      response = problemResponse(refusal, request.instance, request.requestId);
    }
    if (!isStored(response.status)) return response;
    // Finished and problem responses hold their bytes: stored as they are, sent as they are.
    const buffered = contentOf(response);
    const body = buffered ?? Buffer.from(await response.arrayBuffer());
    const headers: Record<string, string> = {};
    for (const name of STORED_HEADERS) {
      const value = fieldsOf(response).get(name);
      if (value !== null) headers[name] = value;
    }
    await tx.exec('StoreIdempotencyKey', [
      principal.userId,
      key,
      request.fingerprint,
      response.status,
      JSON.stringify(headers),
      body,
    ]);
    if (buffered !== undefined) return response;
    return bufferedResponse(body, { status: response.status, headers: response.headers });
  });
}

/**
 * The answer to a key from its claim. A stored result is replayed when the fingerprint matches (else 422),
 * whoever holds the lock (another repeat reading it). No result and the lock taken: 409, the first request is
 * still running. No result and the lock held: `undefined`, this is the first request.
 */
export function answerClaimed(claim: ClaimRow, request: IdempotentRequest): Response | undefined {
  const stored = claim.fingerprint === null ? undefined : claim;
  if (!claim.locked && stored === undefined) {
    throw new HttpError(409, 'idempotency-key-in-use', {
      detail: 'A request with this Idempotency-Key is still being processed; retry shortly.',
      headers: { 'retry-after': '1' },
    });
  }
  if (stored === undefined) return undefined;
  if (stored.fingerprint !== request.fingerprint) {
    throw new HttpError(422, 'idempotency-key-mismatch', {
      detail: 'This Idempotency-Key was used with another method, path or body; use a new key for a new request.',
    });
  }
  // Never cached, like the first answer (a write's result, or a problem).
  return bufferedResponse(stored.body, {
    status: stored.status,
    headers: { ...stored.headers, 'cache-control': 'no-store', [REPLAYED_HEADER]: 'true' },
  });
}
