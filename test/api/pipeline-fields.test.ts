/**
 * The exchange's fields, each written by one stage (src/pipeline/exchange.ts,
 * docs/architecture.md): read from the sources, every assignment to a field
 * of the exchange (`x.name =`, `??=`, `||=`, `&&=`) in src/pipeline/, by stage:
 * the exported function of a file that makes the stage, with the helpers it
 * calls. A second stage that writes a field another stage owns (of the same
 * file or another), or a writable field no stage is said to own, fails here. `readonly` fields cannot be
 * written at all (TypeScript checks that).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const PIPELINE = join(import.meta.dirname, '..', '..', 'src', 'pipeline');

/**
 * The one writer of each writable field: the stage, as `file#function` (the function that makes it: a helper of
 * the stage's file counts as the stage's). exchange.ts#dbOf takes the handler's own handle; compose() says where
 * the request is among the stages.
 */
const OWNERS: Record<string, string> = {
  preflight: 'stages/cors.ts#cors',
  deadline: 'stages/body.ts#databaseDeadline',
  body: 'stages/body.ts#requestBody',
  version: 'stages/route.ts#negotiation',
  contentType: 'stages/route.ts#negotiation',
  principal: 'stages/authorize.ts#authorize',
  conditions: 'stages/conditional.ts#preconditions',
  source: 'stages/replica.ts#replicaReads',
  tagSource: 'stages/replica.ts#replicaReads',
  handle: 'exchange.ts#dbOf',
  savepoint: 'stages/idempotency.ts#idempotency',
  respond: 'stages/idempotency.ts#idempotency',
  stage: 'compose.ts#compose',
};

/** The fields of `interface Exchange` that are not `readonly`. */
function writableFields(): string[] {
  const source = readFileSync(join(PIPELINE, 'exchange.ts'), 'utf8');
  const body = /export interface Exchange extends Passage \{([\s\S]*?)\n\}/.exec(source)?.[1];
  assert.ok(body !== undefined, 'interface Exchange in exchange.ts');
  return [...body.matchAll(/^ {2}(readonly )?(\w+)\??:/gm)]
    .filter((m) => m[1] === undefined)
    .map((m) => m[2] as string);
}

const ASSIGNMENT = /\b(?:x|inner|state)\.(\w+)\s*(?:=(?!=)|\?\?=|\|\|=|&&=)/g;

/**
 * The top-level functions of a source (`function name` at the start of a line, to the next one), each with the
 * exported functions it belongs to: itself when exported, else those of the file that call it, through helpers.
 */
function functionsOf(text: string): { name: string; body: string; stages: Set<string> }[] {
  const starts = [...text.matchAll(/^(export )?(?:async )?function (\w+)/gm)];
  const functions = starts.map((m, i) => ({
    name: m[2] as string,
    exported: m[1] !== undefined,
    body: text.slice(m.index, starts[i + 1]?.index ?? text.length),
  }));
  const stagesOf = (name: string, seen: Set<string>): string[] => {
    const found = functions.find((f) => f.name === name);
    if (found === undefined || seen.has(name)) return [];
    if (found.exported) return [name];
    seen.add(name);
    const callers = functions.filter((f) => f.name !== name && new RegExp(`\\b${name}\\(`).test(f.body));
    return callers.flatMap((f) => stagesOf(f.name, seen));
  };
  return functions.map((f) => ({ name: f.name, body: f.body, stages: new Set(stagesOf(f.name, new Set())) }));
}

/** Each field assigned on an exchange (`x`, `inner`, `state`) in src/pipeline/, with the stages (`file#stage`). */
function writers(): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  const files = readdirSync(PIPELINE, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  for (const file of files) {
    const text = readFileSync(join(PIPELINE, file), 'utf8');
    const path = file.split('\\').join('/');
    for (const f of functionsOf(text)) {
      for (const m of f.body.matchAll(ASSIGNMENT)) {
        const field = m[1] as string;
        const stages = f.stages.size === 0 ? [`${f.name} (called by no stage of its file)`] : [...f.stages];
        for (const stage of stages) found.set(field, (found.get(field) ?? new Set()).add(`${path}#${stage}`));
      }
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
    const fields = [...probe.matchAll(ASSIGNMENT)].map((m) => m[1]);
    assert.deepEqual(fields, ['rate', 'handle', 'deadline']);
  });

  it('tells the stages of a file apart, a helper counting as the stage that calls it', () => {
    const text = [
      'export function one() {\n  return (x) => help(x);\n}',
      'async function help(x) {\n  deeper(x);\n}',
      'function deeper(x) {\n  x.a = 1;\n}',
      'export function two() {\n  return (x) => { x.b = 2; };\n}',
      'function shared(x) {\n  x.c = 3;\n}',
      'export function three() {\n  return (x) => shared(x);\n}',
      'export function four() {\n  return (x) => shared(x);\n}',
    ].join('\n');
    const stages = Object.fromEntries(functionsOf(text).map((f) => [f.name, [...f.stages].sort()]));
    assert.deepEqual(stages, {
      one: ['one'],
      help: ['one'],
      deeper: ['one'],
      two: ['two'],
      shared: ['four', 'three'],
      three: ['three'],
      four: ['four'],
    });
  });
});
