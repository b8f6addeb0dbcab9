/**
 * The README's walkthrough as data: each `curl` line of its walkthrough block,
 * the status the comment after it states, and the values it captures ("set X
 * from Header"). `runWalkthrough()` sends each step as written (variables
 * substituted) to a running service, wherever it runs.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** Splits a shell command line into words: single quotes, double quotes with \\" escapes, variables expanded. */
export function shellWords(line: string, vars: Record<string, string>): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  const expand = (text: string) =>
    text.replace(/\$\{?([A-Z_]+)\}?/g, (_, name: string) => {
      if (!(name in vars)) throw new Error(`the walkthrough uses $${name} before setting it`);
      return vars[name] as string;
    });
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string;
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      word += line.slice(i + 1, end);
      i = end;
      inWord = true;
    } else if (c === '"') {
      let text = '';
      for (i += 1; line[i] !== '"'; i++) text += line[i] === '\\' ? line[++i] : line[i];
      word += expand(text);
      inWord = true;
    } else if (c === ' ') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else if (c === '#' && !inWord) {
      break;
    } else {
      let text = '';
      while (i < line.length && !` '"`.includes(line[i] as string)) text += line[i++];
      i -= 1;
      word += expand(text);
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

export interface Step {
  readonly command: string;
  readonly status: number;
  readonly captures: [string, string][];
  readonly replayed: boolean;
}

export function steps(): Step[] {
  const block = /<!-- walkthrough:start -->\n```sh\n([\s\S]*?)```\n<!-- walkthrough:end -->/.exec(README);
  assert.ok(block, 'README.md has the walkthrough block');
  const lines = (block[1] as string).split('\n');
  const result: Step[] = [];
  lines.forEach((line, i) => {
    if (!line.startsWith('curl ')) return;
    const expectation = /^# → (\d{3})(.*)$/.exec(lines[i + 1] ?? '');
    assert.ok(expectation, `the line after "${line.slice(0, 40)}…" states the answer`);
    const captures = [...(expectation[2] as string).matchAll(/set ([A-Z_]+) from ([A-Za-z-]+)/g)].map(
      (m) => [m[1], m[2]] as [string, string],
    );
    result.push({
      command: line,
      status: Number(expectation[1]),
      captures,
      replayed: /Idempotent-Replayed: true/.test(expectation[2] as string),
    });
  });
  return result;
}

/**
 * Sends every step to the service at `base` (the walkthrough's `$API`) with
 * `vars` (ADMIN and CUSTOMER tokens, API), checking each status and
 * capturing what the steps say; then checks the walkthrough's end state: the
 * order shipped and paid once.
 */
export async function runWalkthrough(base: string, vars: Record<string, string>): Promise<void> {
  for (const step of steps()) {
    const words = shellWords(step.command, vars);
    let method = 'GET';
    const headers: Record<string, string> = {};
    let body: string | undefined;
    let url = '';
    for (let i = 1; i < words.length; i++) {
      const word = words[i] as string;
      if (word === '-X') method = words[++i] as string;
      else if (word === '-H') {
        const [name, ...value] = (words[++i] as string).split(':');
        headers[(name as string).trim()] = value.join(':').trim();
      } else if (word === '-d') body = words[++i];
      else if (word.startsWith('-')) continue;
      else url = word;
    }
    assert.ok(url.startsWith(base), step.command);
    const response = await fetch(url, { method, headers, ...(body === undefined ? {} : { body }) });
    assert.equal(response.status, step.status, `${step.command}\n${await response.clone().text()}`);
    if (step.replayed) assert.equal(response.headers.get('idempotent-replayed'), 'true');
    for (const [name, header] of step.captures) {
      const value = response.headers.get(header);
      assert.ok(value, `${header} to set ${name}`);
      vars[name] = header === 'Location' ? (value.split('/').pop() as string) : value;
    }
  }
  const admin = { authorization: `Bearer ${vars.ADMIN}` };
  const order = (await (await fetch(`${base}/v2/orders/${vars.ORDER}`, { headers: admin })).json()) as {
    status: string;
  };
  assert.equal(order.status, 'shipped');
  const payments = (await (await fetch(`${base}/v2/payments?orderId=${vars.ORDER}`, { headers: admin })).json()) as {
    meta: { total: number };
  };
  assert.equal(payments.meta.total, 1);
}
