/**
 * GET /problems/<slug> (contract §5, §16): a page for every problem type, in
 * HTML, Markdown and JSON by `Accept`; and no drift between the types the
 * code can emit and the pages: every slug raised in src/ has a text whose
 * statuses include the one it is raised with.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PROBLEM_TITLES, type ProblemSlug } from '../../src/http/problem.ts';
import type { DomainRule } from '../../src/base/domain-error.ts';
import { DOMAIN_STATUS } from '../../src/http/domain-problem.ts';
import { PROBLEM_PAGE_CSP } from '../../src/pages/problems.ts';
import { PROBLEM_TEXTS } from '../../src/problems/texts.ts';
import { bearer, startTestServer, type TestServer } from '../support/server.ts';

let t: TestServer;
before(async () => {
  t = await startTestServer();
});
after(async () => {
  await t.close();
});

// Not t.fetch: its contract check validates bodies as JSON against the
// OpenAPI document, which can name no media type but JSON for a route yet.
// Identity unless a test asks for a coding: fetch() would ask for gzip, and decode it (test/api/compression.test.ts).
const get = (path: string, headers: Record<string, string> = {}, method = 'GET') =>
  fetch(`${t.url}${path}`, { method, headers: { 'accept-encoding': 'identity', ...headers } });

const SLUGS = Object.keys(PROBLEM_TITLES) as ProblemSlug[];
const SRC = new URL('../../src/', import.meta.url).pathname;

/** Every `.ts` file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/**
 * The slugs src/ raises, with the statuses they are raised with where the
 * status is a literal: `new HttpError(404, 'not-found'` (across lines too),
 * a store's `new DomainError('not-found'` and `invalidAt(` with the status
 * their rule is answered with, and the `problem: 'slug'` of a check whose
 * result is raised (src/orders/rules.ts).
 */
function raisedSlugs(): Map<string, Set<number | 'computed'>> {
  const raised = new Map<string, Set<number | 'computed'>>();
  const note = (slug: string, status: number | 'computed') =>
    raised.set(slug, (raised.get(slug) ?? new Set()).add(status));
  for (const file of sources(SRC)) {
    // Comments mention slugs without raising them.
    const text = readFileSync(file, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '');
    for (const m of text.matchAll(/new HttpError\(\s*([^,]+?)\s*,\s*'([a-z-]+)'/g))
      note(m[2] as string, /^\d{3}$/.test(m[1] as string) ? Number(m[1]) : 'computed');
    for (const m of text.matchAll(/\bproblem: '([a-z-]+)'/g)) note(m[1] as string, 'computed');
    // A store's refusal: its rule's status is the one src/http/domain-problem.ts gives it.
    for (const m of text.matchAll(/new DomainError\(\s*'([a-z-]+)'/g))
      note(m[1] as string, DOMAIN_STATUS[m[1] as DomainRule] ?? 'computed');
    if (/\binvalidAt\(/.test(text)) note('validation', DOMAIN_STATUS.validation);
  }
  return raised;
}

const escapeHtml = (text: string) =>
  text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');

describe('the texts of the problem types', () => {
  const raised = raisedSlugs();

  it('finds the slugs src/ raises (the scan works)', () => {
    assert.ok(raised.size >= 20, `only ${raised.size} slugs found`);
    assert.deepEqual([...(raised.get('not-found') ?? [])], [404]);
    assert.ok(raised.get('invalid-transition')?.has('computed'));
  });

  it('has a text for every slug src/ raises, listing the status it is raised with', () => {
    for (const [slug, statuses] of raised) {
      assert.ok(Object.hasOwn(PROBLEM_TITLES, slug), `src/ raises ${slug}, which PROBLEM_TITLES does not have`);
      const text = PROBLEM_TEXTS[slug as ProblemSlug];
      assert.ok(text, `no text for ${slug}`);
      for (const status of statuses)
        if (status !== 'computed')
          assert.ok(text.statuses.includes(status), `${slug} is raised with ${status}, which its text does not list`);
    }
  });

  it('documents only problem types src/ raises', () => {
    assert.deepEqual(
      SLUGS.filter((slug) => !raised.has(slug)),
      [],
    );
  });

  it('says for every slug of PROBLEM_TITLES what it means, when it happens and what to do', () => {
    assert.deepEqual(Object.keys(PROBLEM_TEXTS).sort(), [...SLUGS].sort());
    for (const slug of SLUGS) {
      const text = PROBLEM_TEXTS[slug];
      assert.ok(text.statuses.length > 0 && text.statuses.every((s) => s >= 400 && s <= 599), slug);
      assert.ok(text.meaning.length > 30, `${slug}: meaning`);
      assert.ok(text.when.length > 0 && text.when.every((w) => w.length > 20), `${slug}: when`);
      assert.ok(text.whatToDo.length > 0 && text.whatToDo.every((w) => w.length > 20), `${slug}: what to do`);
      // Code spans are balanced, so every rendering shows them as code.
      for (const line of [text.meaning, ...text.when, ...text.whatToDo])
        assert.equal((line.match(/`/g) ?? []).length % 2, 0, `${slug}: ${line}`);
    }
  });
});

describe('GET /problems/<slug>', () => {
  for (const slug of SLUGS) {
    describe(slug, () => {
      const text = PROBLEM_TEXTS[slug];
      const title = PROBLEM_TITLES[slug];
      const statusLine = `HTTP ${text.statuses.length === 1 ? 'status' : 'statuses'} ${text.statuses.join(', ')}.`;

      it('is HTML by default: a self-contained page, public, Vary: Accept, a Content-Security-Policy', async () => {
        const response = await get(`/problems/${slug}`);
        assert.equal(response.status, 200);
        assert.equal(response.headers.get('content-type'), 'text/html; charset=utf-8');
        assert.equal(response.headers.get('cache-control'), 'public, max-age=60');
        assert.equal(response.headers.get('vary'), 'Accept, Accept-Encoding');
        assert.equal(response.headers.get('content-security-policy'), PROBLEM_PAGE_CSP);
        assert.match(response.headers.get('etag') ?? '', /^"[A-Za-z0-9_-]{43}"$/);
        const html = await response.text();
        assert.match(html, /^<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">/);
        assert.ok(html.includes(`<h1>${escapeHtml(title)}</h1>`));
        assert.ok(html.includes(`<p>Problem type <code>/problems/${slug}</code>, ${statusLine}</p>`));
        assert.ok(
          html.includes('<h2>What it means</h2>') &&
            html.includes('<h2>When it happens</h2>') &&
            html.includes('<h2>What to do</h2>'),
        );
        assert.equal((html.match(/<li>/g) ?? []).length, text.when.length + text.whatToDo.length);
        // Nothing to load: no script, no stylesheet, no image, no other host.
        assert.ok(!/<script|<link|<img|https?:\/\//.test(html));
      });

      it('is Markdown on Accept: text/markdown', async () => {
        const response = await get(`/problems/${slug}`, { accept: 'text/markdown' });
        assert.equal(response.status, 200);
        assert.equal(response.headers.get('content-type'), 'text/markdown; charset=utf-8');
        assert.equal(response.headers.get('vary'), 'Accept, Accept-Encoding');
        assert.equal(response.headers.get('cache-control'), 'public, max-age=60');
        assert.equal(
          await response.text(),
          [
            `# ${title}`,
            '',
            `Problem type \`/problems/${slug}\`, ${statusLine}`,
            '',
            '## What it means',
            '',
            text.meaning,
            '',
            '## When it happens',
            '',
            ...text.when.map((w) => `- ${w}`),
            '',
            '## What to do',
            '',
            ...text.whatToDo.map((w) => `- ${w}`),
            '',
          ].join('\n'),
        );
      });

      it('is JSON on Accept: application/json', async () => {
        const response = await get(`/problems/${slug}`, { accept: 'application/json' });
        assert.equal(response.status, 200);
        assert.equal(response.headers.get('content-type'), 'application/json');
        assert.equal(response.headers.get('vary'), 'Accept, Accept-Encoding');
        assert.equal(response.headers.get('cache-control'), 'public, max-age=60');
        assert.deepEqual(await response.json(), {
          type: `/problems/${slug}`,
          slug,
          title,
          statuses: text.statuses,
          meaning: text.meaning,
          when: text.when,
          whatToDo: text.whatToDo,
        });
      });
    });
  }
});

describe('negotiation on /problems/<slug>', () => {
  const cases: [string, string][] = [
    ['', 'text/html; charset=utf-8'],
    ['*/*', 'text/html; charset=utf-8'],
    ['text/*', 'text/html; charset=utf-8'],
    ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'text/html; charset=utf-8'],
    ['TEXT/MARKDOWN', 'text/markdown; charset=utf-8'],
    ['text/markdown;variant=GFM', 'text/markdown; charset=utf-8'],
    ['text/markdown, text/html;q=0.9', 'text/markdown; charset=utf-8'],
    ['text/html;q=0, */*', 'text/markdown; charset=utf-8'],
    ['application/json;q=0.5, text/markdown;q=0.4', 'application/json'],
    ['application/*', 'application/json'],
    ['application/json, text/*', 'application/json'],
    ['text/plain, application/json;q=0.1', 'application/json'],
    ['nonsense, text/markdown;q=oops, application/json', 'application/json'],
  ];
  for (const [accept, type] of cases) {
    it(`answers ${type} to Accept: ${JSON.stringify(accept)}`, async () => {
      const response = await get('/problems/validation', { accept });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('content-type'), type);
    });
  }

  for (const accept of [
    'application/problem+json',
    'text/plain',
    'image/*',
    '*/*;q=0',
    'text/html;q=0, text/markdown;q=0, application/json;q=0',
    'nonsense',
  ]) {
    it(`answers 406 not-acceptable to Accept: ${JSON.stringify(accept)}`, async () => {
      const response = await get('/problems/validation', { accept });
      assert.equal(response.status, 406);
      assert.equal(response.headers.get('content-type'), 'application/problem+json');
      assert.equal(response.headers.get('cache-control'), 'no-store');
      assert.equal(response.headers.get('vary'), 'Accept, Accept-Encoding');
      const body = (await response.json()) as Record<string, unknown>;
      assert.equal(body.type, '/problems/not-acceptable');
      assert.equal(body.status, 406);
      assert.equal(
        body.detail,
        'Nothing in Accept can be produced here; this page is available as text/html, text/markdown, application/json.',
      );
      assert.equal(body.instance, '/problems/validation');
    });
  }

  it('gives each representation its own tag, and answers 304 with Vary for the one asked for', async () => {
    const tags = await Promise.all(
      ['text/html', 'text/markdown', 'application/json'].map(async (accept) =>
        (await get('/problems/forbidden', { accept })).headers.get('etag'),
      ),
    );
    assert.equal(new Set(tags).size, 3);
    const [html, , json] = tags as [string, string, string];
    const unchanged = await get('/problems/forbidden', { accept: 'application/json', 'if-none-match': json });
    assert.equal(unchanged.status, 304);
    assert.equal(unchanged.headers.get('etag'), json);
    assert.equal(unchanged.headers.get('vary'), 'Accept, Accept-Encoding');
    assert.equal(unchanged.headers.get('cache-control'), 'public, max-age=60');
    assert.equal(await unchanged.text(), '');
    const other = await get('/problems/forbidden', { accept: 'application/json', 'if-none-match': html });
    assert.equal(other.status, 200);
    assert.equal(other.headers.get('etag'), json);
  });

  it('answers HEAD with the fields of GET and no body', async () => {
    const full = await get('/problems/rate-limited', { accept: 'text/markdown' });
    const head = await get('/problems/rate-limited', { accept: 'text/markdown' }, 'HEAD');
    assert.equal(head.status, 200);
    for (const name of ['content-type', 'content-length', 'etag', 'vary', 'cache-control'])
      assert.equal(head.headers.get(name), full.headers.get(name), name);
    assert.equal(await head.text(), '');
  });

  it('escapes the texts in HTML: a `<slug>` is text, not markup', async () => {
    const html = await (await get('/problems/not-found')).text();
    assert.ok(html.includes('<code>/problems/&lt;slug&gt;</code>'));
    assert.ok(!html.includes('<slug>'));
  });
});

describe('GET /problems: the index of every problem type', () => {
  it("lists every type in JSON, each with its page, slug, title and statuses, in the titles' order", async () => {
    const response = await get('/problems', { accept: 'application/json' });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'application/json');
    assert.equal(response.headers.get('vary'), 'Accept, Accept-Encoding');
    const { data } = (await response.json()) as { data: { type: string; slug: string; statuses: number[] }[] };
    assert.deepEqual(
      data,
      SLUGS.map((slug) => ({
        type: `/problems/${slug}`,
        slug,
        title: PROBLEM_TITLES[slug],
        statuses: PROBLEM_TEXTS[slug].statuses,
      })),
    );
    assert.match(response.headers.get('cache-control') ?? '', /^public, max-age=\d+$/);
    const again = await get('/problems', {
      accept: 'application/json',
      'if-none-match': response.headers.get('etag') as string,
    });
    assert.deepEqual([again.status, again.headers.get('vary')], [304, 'Accept, Accept-Encoding']);
    // Each link leads to its page.
    for (const entry of data.slice(0, 3)) assert.equal((await get(entry.type)).status, 200, entry.type);
  });

  it("is an HTML list of links by default, under the pages' policy, and Markdown on request", async () => {
    const html = await get('/problems');
    assert.equal(html.status, 200);
    assert.equal(html.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.equal(html.headers.get('content-security-policy'), PROBLEM_PAGE_CSP);
    const page = await html.text();
    for (const slug of SLUGS)
      assert.ok(
        page.includes(`<li><a href="/problems/${slug}">${PROBLEM_TITLES[slug]}</a> (<code>${slug}</code>, `),
        slug,
      );
    const markdown = await get('/problems', { accept: 'text/markdown' });
    assert.equal(markdown.headers.get('content-type'), 'text/markdown; charset=utf-8');
    const text = await markdown.text();
    assert.ok(text.startsWith('# Problem types\n'));
    assert.ok(text.includes(`- [${PROBLEM_TITLES['not-found']}](/problems/not-found) (\`not-found\`, 404)`), text);
  });

  it('answers 406 not-acceptable when Accept allows none of its types', async () => {
    const response = await get('/problems', { accept: 'image/png' });
    assert.equal(response.status, 406);
    assert.equal(((await response.json()) as { type: string }).type, '/problems/not-acceptable');
  });

  it('is linked from every problem page', async () => {
    assert.ok((await (await get('/problems/not-found')).text()).includes('<a href="/problems">/problems</a>'));
  });
});

describe('a slug that is no problem type', () => {
  for (const path of [
    '/problems/nope',
    '/problems/VALIDATION',
    '/problems/validation.json',
    '/problems/validation/x',
    '/problems/',
    '/v1/problems/validation',
    '/v2/problems/validation',
  ]) {
    it(`answers 404 not-found for ${path}`, async () => {
      const response = await get(path);
      assert.equal(response.status, 404);
      assert.equal(response.headers.get('content-type'), 'application/problem+json');
      assert.equal(((await response.json()) as { type: string }).type, '/problems/not-found');
    });
  }

  it('says which slug it does not know', async () => {
    const body = (await (await get('/problems/nope')).json()) as { detail: string };
    assert.equal(body.detail, 'There is no problem type nope.');
  });
});

describe('the type of a problem the service answers', () => {
  it('resolves to its page, for problems the service really emits', async () => {
    const customer = await t.user('customer');
    const problems = await Promise.all([
      t.fetch('/v2/orders'), // 401
      t.fetch('/v2/orders/999999', { headers: bearer(customer.token) }), // 404
      t.fetch('/v2/orders', { method: 'PUT', headers: bearer(customer.token) }), // 405
      t.fetch('/v2/products', { headers: { accept: 'text/csv' } }), // 406
      t.fetch('/v2/orders', {
        method: 'POST',
        headers: { ...bearer(customer.token), 'content-type': 'application/json' },
        body: '{"items": []}',
      }), // 422
      t.fetch('/v2/orders?colour=red', { headers: bearer(customer.token) }), // 400
    ]);
    const types = await Promise.all(problems.map(async (p) => ((await p.json()) as { type: string }).type));
    assert.deepEqual(types, [
      '/problems/unauthorized',
      '/problems/not-found',
      '/problems/method-not-allowed',
      '/problems/not-acceptable',
      '/problems/validation',
      '/problems/invalid-query',
    ]);
    for (const type of types) {
      const page = await get(type, { accept: 'application/json' });
      assert.equal(page.status, 200, type);
      assert.equal(((await page.json()) as { type: string }).type, type);
    }
  });
});
