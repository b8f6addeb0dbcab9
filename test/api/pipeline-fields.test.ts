/**
 * The exchange's fields, each written by one stage (src/pipeline/exchange.ts,
 * docs/architecture.md): read from the sources, every assignment to a field
 * of the exchange (`x.name =`, `??=`, `||=`, `&&=`) in src/pipeline/, by file.
 * A second stage that writes a field another stage owns, or a writable
 * field no stage is said to own, fails here. `readonly` fields cannot be
 * written at all (TypeScript checks that).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const PIPELINE = join(import.meta.dirname, '..', '..', 'src', 'pipeline');

/** The one writer of each writable field: the stage's file (exchange.ts: `dbOf`, the handler's own handle). */
const OWNERS: Record<string, string> = {
  preflight: 'stages/cors.ts',
  deadline: 'stages/body.ts',
  body: 'stages/body.ts',
  version: 'stages/route.ts',
  contentType: 'stages/route.ts',
  principal: 'stages/authorize.ts',
  conditions: 'stages/conditional.ts',
  source: 'stages/replica.ts',
  tagSource: 'stages/replica.ts',
  handle: 'exchange.ts',
  savepoint: 'stages/idempotency.ts',
  respond: 'stages/idempotency.ts',
};

/** The fields of `interface Exchange` that are not `readonly`. */
function writableFields(): string[] {
  const source = readFileSync(join(PIPELINE, 'exchange.ts'), 'utf8');
  const body = /export interface Exchange \{([\s\S]*?)\n\}/.exec(source)?.[1];
  assert.ok(body !== undefined, 'interface Exchange in exchange.ts');
  return [...body.matchAll(/^ {2}(readonly )?(\w+)\??:/gm)]
    .filter((m) => m[1] === undefined)
    .map((m) => m[2] as string);
}

/** Each field assigned on an exchange (`x`, `inner`, `state`) in the files of src/pipeline/, with the files. */
function writers(): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  const files = readdirSync(PIPELINE, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  for (const file of files) {
    const text = readFileSync(join(PIPELINE, file), 'utf8');
    for (const m of text.matchAll(/\b(?:x|inner|state)\.(\w+)\s*(?:=(?!=)|\?\?=|\|\|=|&&=)/g)) {
      const field = m[1] as string;
      found.set(field, (found.get(field) ?? new Set()).add(file.split('\\').join('/')));
    }
  }
  return found;
}

describe('the exchange', () => {
  it('says which stage owns each writable field, and no other', () => {
    assert.deepEqual(writableFields().sort(), Object.keys(OWNERS).sort());
  });

  it('has each writable field written by its one stage, and no readonly field written', () => {
    const written = writers();
    for (const [field, files] of written) {
      assert.ok(field in OWNERS, `${field} is written (${[...files].join(', ')}) but is not a writable field`);
      assert.deepEqual([...files], [OWNERS[field]], `${field} is written by ${[...files].join(', ')}`);
    }
    // Every owner writes what it owns (a field nobody writes is a constant: it belongs among the readonly ones).
    assert.deepEqual([...written.keys()].sort(), Object.keys(OWNERS).sort());
  });

  it('finds assignments the way the stages write them, and not comparisons', () => {
    const probe = 'x.rate = a; x.handle ??= b; if (x.version === 1) {} x.aborted || y; inner.deadline = d;';
    const fields = [...probe.matchAll(/\b(?:x|inner|state)\.(\w+)\s*(?:=(?!=)|\?\?=|\|\|=|&&=)/g)].map((m) => m[1]);
    assert.deepEqual(fields, ['rate', 'handle', 'deadline']);
  });
});
