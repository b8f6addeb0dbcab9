/**
 * `GET /problems/<slug>` (contract §5, §16): the page a problem's `type` URI
 * names, saying what the problem means, when it happens and what to do,
 * from the texts of `src/problems/texts.ts`. HTML by default (a small,
 * self-contained page), `text/markdown` or `application/json` on request
 * through `Accept`; 406 when `Accept` allows none of the three. All
 * representations are rendered once, at start-up.
 */
import { createHash } from 'node:crypto';
import * as v from 'valibot';
import type { RouteSpec } from '../pipeline/context.ts';
import { JSON_TYPE } from '../http/negotiation.ts';
import { HttpError, PROBLEM_TITLES, type ProblemSlug } from '../http/problem.ts';
import { PROBLEM_TEXTS } from '../problems/texts.ts';
import { named, stringEnum } from '../openapi/atoms.ts';
import { preferredType } from './negotiate.ts';
import { HTML_TYPE, PAGE_CACHE, staticBody, staticResponse, type StaticBody } from './static.ts';

export const MARKDOWN_TYPE = 'text/markdown; charset=utf-8';

/** The media types offered, in the server's order of preference (the first when Accept allows anything). */
const OFFERS = ['text/html', 'text/markdown', JSON_TYPE] as const;
type Offer = (typeof OFFERS)[number];

/** The JSON representation of a problem type. */
export interface ProblemPage {
  readonly type: string;
  readonly slug: ProblemSlug;
  readonly title: string;
  readonly statuses: readonly number[];
  readonly meaning: string;
  readonly when: readonly string[];
  readonly whatToDo: readonly string[];
}

/** Every problem type's slug, in PROBLEM_TITLES' order. */
const SLUGS = Object.keys(PROBLEM_TITLES) as ProblemSlug[];

/** The schema of `ProblemPage`, for the document. */
const PROBLEM_PAGE = named(
  'ProblemPage',
  v.strictObject({
    type: v.pipe(v.string(), v.regex(/^\/problems\/[a-z-]+$/)),
    slug: v.picklist(SLUGS),
    title: v.string(),
    statuses: v.array(v.pipe(v.number(), v.integer(), v.minValue(400), v.maxValue(599))),
    meaning: v.pipe(v.string(), v.description('plain text with Markdown code spans, as every string here')),
    when: v.array(v.string()),
    whatToDo: v.array(v.string()),
  }),
);

/** The page of `slug`, from its title and text. */
export function problemPage(slug: ProblemSlug): ProblemPage {
  const text = PROBLEM_TEXTS[slug];
  return {
    type: `/problems/${slug}`,
    slug,
    title: PROBLEM_TITLES[slug],
    statuses: text.statuses,
    meaning: text.meaning,
    when: text.when,
    whatToDo: text.whatToDo,
  };
}

/** The style of the service's HTML pages (this one and the index at `/`), allowed by its hash in their CSP. */
export const STYLE =
  'body{font:1rem/1.5 system-ui,sans-serif;max-width:42rem;margin:0 auto;padding:1rem;color-scheme:light dark}' +
  'code{font-family:ui-monospace,monospace;font-size:.9em;' +
  'background:rgba(127,127,127,.15);padding:0 .2em;border-radius:.2em}' +
  'h1{font-size:1.6rem;line-height:1.2}h2{font-size:1.15rem;margin-top:1.5rem}footer{margin-top:2rem;font-size:.9rem}';
/** The page's only style, allowed by its hash: nothing else may load or run (CSP Level 3). */
export const PROBLEM_PAGE_CSP =
  `default-src 'none'; style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'; base-uri 'none'; ` +
  `form-action 'none'; frame-ancestors 'none'`;

export const escapeHtml = (text: string): string =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string,
  );
/** Plain text with Markdown code spans, as HTML. */
const inline = (text: string): string => escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>');
const statusWords = (statuses: readonly number[]): string =>
  `${statuses.length === 1 ? 'status' : 'statuses'} ${statuses.join(', ')}`;

/** The footer of every HTML page: what problem types are and where the rest of the API is described. */
const FOOTER =
  '<p>Every error of the Orders service is an RFC 9457 problem (<code>application/problem+json</code>) ' +
  'whose <code>type</code> names a page like this one. ' +
  'This page is also served as <code>text/markdown</code> and <code>application/json</code>: ' +
  'ask for them with <code>Accept</code>. Every problem type: <a href="/problems">/problems</a>. ' +
  'The whole API: <a href="/docs">API reference</a>.</p>';

/** The HTML page: self-contained, its only style inline (allowed by `PROBLEM_PAGE_CSP`). */
export function renderHtml(page: ProblemPage): string {
  const list = (items: readonly string[]) =>
    `<ul>\n${items.map((item) => `<li>${inline(item)}</li>`).join('\n')}\n</ul>`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(page.title)} (${page.statuses.join(', ')}): Orders service problem type</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<h1>${escapeHtml(page.title)}</h1>
<p>Problem type <code>${escapeHtml(page.type)}</code>, HTTP ${statusWords(page.statuses)}.</p>
<h2>What it means</h2>
<p>${inline(page.meaning)}</p>
<h2>When it happens</h2>
${list(page.when)}
<h2>What to do</h2>
${list(page.whatToDo)}
</main>
<footer>
${FOOTER}
</footer>
</body>
</html>
`;
}

/** The same as Markdown (CommonMark). */
export function renderMarkdown(page: ProblemPage): string {
  const list = (items: readonly string[]) => items.map((item) => `- ${item}`).join('\n');
  return `# ${page.title}

Problem type \`${page.type}\`, HTTP ${statusWords(page.statuses)}.

## What it means

${page.meaning}

## When it happens

${list(page.when)}

## What to do

${list(page.whatToDo)}
`;
}

const RENDERERS: Readonly<Record<Offer, { readonly type: string; render(page: ProblemPage): string }>> = {
  'text/html': { type: HTML_TYPE, render: renderHtml },
  'text/markdown': { type: MARKDOWN_TYPE, render: renderMarkdown },
  [JSON_TYPE]: { type: JSON_TYPE, render: (page) => JSON.stringify(page) },
};

const PAGES: ReadonlyMap<string, Readonly<Record<Offer, StaticBody>>> = new Map(
  (Object.keys(PROBLEM_TITLES) as ProblemSlug[]).map((slug) => {
    const page = problemPage(slug);
    const bodies = Object.fromEntries(
      OFFERS.map((offer) => [offer, staticBody(RENDERERS[offer].render(page), RENDERERS[offer].type)]),
    );
    return [slug, bodies as Record<Offer, StaticBody>];
  }),
);

export const problemRoute: RouteSpec = {
  method: 'GET',
  pattern: '/problems/{slug}',
  auth: 'public',
  versioned: false,
  cache: PAGE_CACHE,
  doc: {
    summary: 'What a problem type means and what to do about it',
    description: [
      'The page named by the `type` of every problem response (`/problems/<slug>`): what the problem means, when ' +
        'the service answers with it and what the client should do.',
      'Negotiated by `Accept` (with `q` weights): `text/html` (the default), `text/markdown`, or `application/json`',
      '`{"type", "slug", "title", "statuses": [int], "meaning": string, "when": [string], "whatToDo": ' +
        '[string]}`, whose strings are plain text with Markdown code spans.',
      '406 `not-acceptable` when `Accept` allows none of them; 404 for a slug that is not a problem type. Cached ' +
        'publicly for CACHE_MAX_AGE seconds, `Vary: Accept`.',
    ].join(' '),
    success: {
      status: 200,
      schema: PROBLEM_PAGE,
      media: { 'text/html': { type: 'string' }, 'text/markdown': { type: 'string' } },
      // The HTML page's policy; every representation varies by Accept.
      fields: { Vary: true, 'Content-Security-Policy': false, 'X-Content-Type-Options': true },
    },
    params: {
      slug: { description: 'The problem type: the last segment of its `type`.', schema: stringEnum(SLUGS) },
    },
    problems: [[406, 'not-acceptable']],
  },
  handler: async (ctx) => {
    const slug = ctx.params.slug as string;
    const bodies = PAGES.get(slug);
    if (bodies === undefined) throw new HttpError(404, 'not-found', { detail: `There is no problem type ${slug}.` });
    const offer = preferredType(ctx.header('accept'), OFFERS) as Offer | undefined;
    if (offer === undefined) {
      throw new HttpError(406, 'not-acceptable', {
        detail: `Nothing in Accept can be produced here; this page is available as ${OFFERS.join(', ')}.`,
        headers: { vary: 'Accept' },
      });
    }
    const body = bodies[offer];
    return staticResponse(body, {
      vary: 'Accept',
      ...(offer === 'text/html' ? { 'content-security-policy': PROBLEM_PAGE_CSP } : {}),
    });
  },
};
