/** Liveness and readiness (contract §1): public, never behind a version prefix. */
import * as v from 'valibot';
import type { RouteSpec } from '../pipeline/context.ts';
import { jsonResponse } from '../http/json.ts';
import { unavailableError } from '../http/problem.ts';
import { withDeadline } from '../db/errors.ts';
import { named } from '../openapi/atoms.ts';

/** contract §1: `/readyz` answers within 2 s, whatever the database does. */
export const READY_TIMEOUT_MS = 1_500;

/** Why the database the writes go to is not ready for them. */
export const CANNOT_WRITE = {
  standby: 'The database (DATABASE_URL) is a standby in recovery: it cannot take writes.',
  readOnly: 'The database (DATABASE_URL) is read-only (default_transaction_read_only): it cannot take writes.',
};

const HEALTH = named('Health', v.strictObject({ status: v.literal('ok') }));
const READY = named(
  'Ready',
  v.strictObject({
    status: v.literal('ready'),
    // contract §17: with DATABASE_READ_URL, the replica's state; readiness never fails on it.
    replica: v.optional(
      v.strictObject({
        state: v.picklist(['in-use', 'lagging', 'unreachable']),
        lagSeconds: v.optional(v.number()),
        reason: v.optional(
          v.pipe(
            v.string(),
            v.description(
              'Why the replica serves no reads, when it does not: it lags, it cannot be reached (the error), or ' +
                'it is no standby (after a failover, DATABASE_READ_URL may name the new primary).',
            ),
          ),
        ),
      }),
    ),
  }),
);

export const healthRoutes: readonly RouteSpec[] = [
  {
    method: 'GET',
    pattern: '/healthz',
    auth: 'public',
    versioned: false,
    // contract §10: a load balancer's probes are never rate limited, so they never take a backend out.
    rateLimited: 'never',
    overload: 'exempt',
    doc: {
      summary: 'Liveness: 200 while the process runs',
      description:
        'Answers without touching the database, so a slow or lost database never makes the process look dead. ' +
        'Public, never cached, never rate limited (a load balancer may poll it as often as it likes).',
      success: { status: 200, schema: HEALTH },
    },
    handler: async () => jsonResponse({ status: 'ok' }, 200, { 'cache-control': 'no-store' }),
  },
  {
    method: 'GET',
    pattern: '/readyz',
    auth: 'public',
    versioned: false,
    rateLimited: 'never',
    overload: 'exempt',
    doc: {
      summary: 'Readiness: 200 when the database answers and can take writes, else 503',
      description:
        'Asks the database and answers within 2 s whatever it does: 503 unavailable (with Retry-After) when it ' +
        'does not answer in time, or when it cannot take writes (a standby, a read-only server: the detail ' +
        "says which). Its query never waits behind the requests' statements (a connection of its own on a real " +
        'server), so a process busy with requests stays ready. Public, never cached, never rate limited. With a ' +
        'read replica ' +
        '(DATABASE_READ_URL), the body says its state (in-use, lagging, unreachable) and lag; readiness never ' +
        'fails on it: the primary answers the reads a replica cannot.',
      success: { status: 200, schema: READY },
    },
    handler: async (ctx) => {
      let found: { recovery: boolean; read_only: boolean } | undefined;
      try {
        found = await withDeadline(ctx.db.one('Readiness'), READY_TIMEOUT_MS);
      } catch {
        // Whatever the cause, the answer is "not ready"; the pipeline logs nothing for it.
        throw unavailableError();
      }
      // contract §17: a server that cannot write is no primary for the writes (a standby, after a failover).
      if (found?.recovery === true) throw unavailableError(CANNOT_WRITE.standby);
      if (found?.read_only === true) throw unavailableError(CANNOT_WRITE.readOnly);
      const replica = ctx.services.reads?.replica.status();
      return jsonResponse(
        replica === undefined
          ? { status: 'ready' }
          : {
              status: 'ready',
              replica: {
                state: replica.state,
                ...(replica.lagSeconds === undefined
                  ? {}
                  : { lagSeconds: Math.round(replica.lagSeconds * 1000) / 1000 }),
                ...(replica.reason === undefined ? {} : { reason: replica.reason }),
              },
            },
        200,
        { 'cache-control': 'no-store' },
      );
    },
  },
];
