/**
 * The OpenAPI document lints clean under Redocly's `recommended` ruleset
 * (contract §16): no problem of severity error or warn, no rule configured
 * away. Where a rule asked for something the project lacks, the document
 * says so honestly (the licence: none is granted) rather than the rule
 * being turned off.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createConfig, lintFromString, type NormalizedProblem } from '@redocly/openapi-core';
import pkg from '../../package.json' with { type: 'json' };
import { buildOpenApi, LICENSE } from '../../src/openapi/document.ts';
import { routes } from '../../src/service/routes.ts';

/** One line per problem: severity, rule, message and where (a JSON pointer into the document). */
function describeProblem(problem: NormalizedProblem): string {
  const where = problem.location.map((l) => l.pointer ?? '').join(', ');
  return `${problem.severity} ${problem.ruleId}: ${problem.message} at ${where}`;
}

/** The problems of severity error or warn in `document`, one line each. */
async function lint(document: Record<string, unknown>): Promise<string[]> {
  const config = await createConfig({ extends: ['recommended'] });
  const problems = await lintFromString({
    source: JSON.stringify(document, null, 2),
    absoluteRef: 'openapi.json',
    config,
  });
  return problems.filter((p) => p.severity === 'error' || p.severity === 'warn').map(describeProblem);
}

describe("the OpenAPI document under Redocly's recommended rules", () => {
  it('has no problem of severity error or warn', async () => {
    assert.deepEqual(await lint(buildOpenApi(routes)), []);
  });

  it('would report a problem: the same document without its licence warns, with the place', async () => {
    const document = buildOpenApi(routes);
    const { license: _, ...info } = document.info as Record<string, unknown>;
    assert.deepEqual(await lint({ ...document, info }), [
      'warn info-license: Info object should contain `license` field. at #/info',
    ]);
  });

  it('states the licence package.json gives: none', () => {
    // A change of licence in package.json must change the document's too.
    assert.equal(pkg.license, 'UNLICENSED');
    assert.deepEqual((buildOpenApi(routes).info as Record<string, unknown>).license, LICENSE);
    assert.deepEqual(LICENSE, {
      name: 'Proprietary: no licence is granted (UNLICENSED)',
      identifier: 'LicenseRef-UNLICENSED',
    });
  });
});
