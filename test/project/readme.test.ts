/**
 * The README's walkthrough, run line by line against a fresh server: each
 * `curl` command is sent as written (variables substituted), its answer
 * must have the status the comment after it states, and "set X from
 * Header" captures a value for the commands that follow
 * (test/support/walkthrough.ts; test/ops/executable.test.ts runs it against the
 * single executable too).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type TestServer } from '../support/server.ts';
import { runWalkthrough, steps } from '../support/walkthrough.ts';

describe('the README walkthrough', () => {
  let t: TestServer;
  const vars: Record<string, string> = {};
  before(async () => {
    t = await startTestServer();
    vars.API = t.url;
    const admin = await t.user('admin');
    const customer = await t.user('customer');
    vars.ADMIN = admin.token;
    vars.CUSTOMER = customer.token;
  });
  after(async () => {
    await t.close();
  });

  it('has at least the eight documented steps', () => {
    assert.ok(steps().length >= 8);
  });

  it('answers every step as the README says', async () => {
    await runWalkthrough(t.url, vars);
  });

  it('answers every step as the README says a second time, on the same database', async () => {
    // Each run creates its own order, and the payment's Idempotency-Key names it: no 422 on a run again.
    await runWalkthrough(t.url, { ...vars });
  });
});
