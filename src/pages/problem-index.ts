/**
 * `GET /problems`: the index of every problem type the API answers with, each linked to its page
 * (problems.ts), with its title and statuses. HTML by default, `text/markdown` or `application/json`
 * (`{"data": [{"type", "slug", "title", "statuses"}]}`) through `Accept`, as the pages are; 406 when
 * `Accept` allows none. Rendered once, at start-up.
 */
import * as v from 'valibot';
import type { RouteSpec } from '../pipeline/context.ts';
import { JSON_TYPE } from '../http/negotiation.ts';
import { HttpError, PROBLEM_TITLES, type ProblemSlug } from '../http/problem.ts';
import { named } from '../openapi/atoms.ts';
import { preferredType } from './negotiate.ts';
import { escapeHtml, MARKDOWN_TYPE, PROBLEM_PAGE_CSP, problemPage, STYLE } from './problems.ts';
import { HTML_TYPE, PAGE_CACHE, staticBody, staticResponse } from './static.ts';

const OFFERS = ['text/html', 'text/markdown', JSON_TYPE] as const;

/** Every problem type, in PROBLEM_TITLES' order. */
export const PROBLEM_INDEX = (Object.keys(PROBLEM_TITLES) as ProblemSlug[]).map((slug) => {
  const { type, title, statuses } = problemPage(slug);
  return { type, slug, title, statuses };
});

const statuses = (list: readonly number[]) => list.join(', ');

const html = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Problem types: Orders service</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<h1>Problem types</h1>
<p>Every error of the Orders service is an RFC 9457 problem whose <code>type</code> is one of these pages.</p>
<ul>
${PROBLEM_INDEX.map(
  (p) =>
    `<li><a href="${escapeHtml(p.type)}">${escapeHtml(p.title)}</a> (<code>${p.slug}</code>, ` +
    `${statuses(p.statuses)})</li>`,
).join('\n')}
</ul>
</main>
</body>
</html>
`;

const markdown = `# Problem types

Every error of the Orders service is an RFC 9457 problem whose \`type\` is one of these pages.

${PROBLEM_INDEX.map((p) => `- [${p.title}](${p.type}) (\`${p.slug}\`, ${statuses(p.statuses)})`).join('\n')}
`;

const BODIES = {
  'text/html': staticBody(html, HTML_TYPE),
  'text/markdown': staticBody(markdown, MARKDOWN_TYPE),
  [JSON_TYPE]: staticBody(JSON.stringify({ data: PROBLEM_INDEX }), JSON_TYPE),
};

const ENTRY = named(
  'ProblemIndexEntry',
  v.strictObject({
    type: v.pipe(v.string(), v.regex(/^\/problems\/[a-z-]+$/), v.description('the path of its page')),
    slug: v.string(),
    title: v.string(),
    statuses: v.array(v.pipe(v.number(), v.integer(), v.minValue(400), v.maxValue(599))),
  }),
);

export const problemIndexRoute: RouteSpec = {
  method: 'GET',
  pattern: '/problems',
  auth: 'public',
  versioned: false,
  cache: PAGE_CACHE,
  doc: {
    summary: 'Every problem type, linked to its page',
    description:
      'The index of the problem types the API answers with: for each, its page (`type`), slug, title and ' +
      'statuses. Negotiated by `Accept` as the pages are: `text/html` (the default, a list of links), ' +
      '`text/markdown`, or `application/json` (`{"data": [{"type", "slug", "title", "statuses"}]}`); 406 ' +
      '`not-acceptable` when `Accept` allows none. Cached publicly for CACHE_MAX_AGE seconds, `Vary: Accept`.',
    success: {
      status: 200,
      schema: named('ProblemIndex', v.strictObject({ data: v.array(ENTRY.schema) }), [ENTRY]),
      media: { 'text/html': { type: 'string' }, 'text/markdown': { type: 'string' } },
      fields: { Vary: true, 'Content-Security-Policy': false, 'X-Content-Type-Options': true },
    },
    problems: [[406, 'not-acceptable']],
  },
  handler: async (ctx) => {
    const offer = preferredType(ctx.header('accept'), OFFERS) as (typeof OFFERS)[number] | undefined;
    if (offer === undefined) {
      throw new HttpError(406, 'not-acceptable', {
        detail: `Nothing in Accept can be produced here; this page is available as ${OFFERS.join(', ')}.`,
        headers: { vary: 'Accept' },
      });
    }
    return staticResponse(BODIES[offer], {
      vary: 'Accept',
      ...(offer === 'text/html' ? { 'content-security-policy': PROBLEM_PAGE_CSP } : {}),
    });
  },
};
