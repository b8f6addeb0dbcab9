/**
 * The HTTP rules applied to every successful response, in one place (contract §8, §9): `Content-Type`, a strong
 * `ETag`, `Cache-Control` by route, 304 for `If-None-Match` (early when the route knows its tag), and version 1's
 * deprecation fields. Routes cannot opt out: the pipeline calls this once per answer. Pure.
 */
import { type Conditions, etagOf, noneMatchHits } from './conditional.ts';
import { JSON_TYPE } from './negotiation.ts';
import { HttpError } from './problem.ts';
import { bufferedResponse, type Fields, heldOf } from './response.ts';

/** `private`: orders and items; `public`: the catalog; `no-store`: users, payments, anything sensitive. */
export type CachePolicy = 'private' | 'public' | 'no-store';

export interface FinishOptions {
  readonly cache: CachePolicy;
  /** The negotiated media type, for JSON bodies; `undefined` outside the API versions. */
  readonly contentType: string | undefined;
  readonly cacheMaxAge: number;
}

/**
 * RFC 9110 §15.4.5: a 304 carries those of these fields a 200 would have sent; the handler's own Vary too (the
 * pipeline sets Vary afterwards on the routes that vary, as on every response).
 */
const KEPT_ON_304 = ['cache-control', 'content-location', 'etag', 'expires', 'vary'];

/**
 * `response` as the client receives it, for a request of `method` with `conditions` (parsed once by the pipeline):
 * at once when its bytes are in memory (every JSON answer), else once its stream is read.
 */
export function finish(
  method: string,
  conditions: Conditions,
  response: Response,
  options: FinishOptions,
): Response | Promise<Response> {
  // A buffered response is finished in place: its bytes are hashed as they are, never copied, and only when no tag
  // was set (a text's are made for it then).
  const held = heldOf(response);
  if (held !== undefined)
    return finished(
      method,
      conditions,
      response,
      held.empty ? null : () => held.content as Uint8Array,
      options,
      held.fields(),
      true,
    );
  const headers = new Headers(response.headers);
  // Only a 200 or 201 is tagged: any other answer's stream passes through unread.
  if (response.body === null || (response.status !== 200 && response.status !== 201))
    return finished(method, conditions, response, null, options, headers, false);
  return response.arrayBuffer().then((read) => {
    const bytes = new Uint8Array(read);
    return finished(method, conditions, response, () => bytes, options, headers, false);
  });
}

/**
 * `finish()` of a response whose `bytes` are at hand (`null`: none, or not to tag), with `headers`: a buffered
 * response's own fields when `inPlace`, else a copy for a new response.
 */
function finished(
  method: string,
  conditions: Conditions,
  response: Response,
  bytes: (() => Uint8Array) | null,
  options: FinishOptions,
  headers: Fields,
  inPlace: boolean,
): Response {
  if (options.contentType !== undefined && headers.get('content-type') === JSON_TYPE)
    headers.set('content-type', options.contentType);
  const safe = method === 'GET' || method === 'HEAD';
  if (bytes === null || (response.status !== 200 && response.status !== 201)) {
    headers.set('cache-control', safe ? cacheControl(options) : 'no-store');
    return inPlace ? response : withHeaders(response, headers as Headers);
  }
  // A handler that knows a tag of its representation (an order's revision) sets it; else the bytes make it.
  const etag = headers.get('etag') ?? etagOf(bytes());
  headers.set('etag', etag);
  // A write's response is the new state, with the tag a later If-Match needs; never cached.
  headers.set('cache-control', safe ? cacheControl(options) : 'no-store');
  if (safe && conditions.ifNoneMatch !== null && noneMatchHits(conditions.ifNoneMatch, etag)) {
    return notModified(headers);
  }
  return inPlace ? response : bufferedResponse(bytes(), { status: response.status, headers });
}

/**
 * `If-None-Match` on a GET or HEAD answered before the handler runs, from `currentTag`, found without building the
 * representation: the 304 `finish()` would send, or `undefined` for the handler to build the 200.
 */
export async function notModifiedEarly(
  method: string,
  conditions: Conditions,
  currentTag: () => Promise<string>,
  options: FinishOptions,
): Promise<Response | undefined> {
  const condition = conditions.ifNoneMatch;
  if ((method !== 'GET' && method !== 'HEAD') || condition === null) return undefined;
  const etag = await currentTag();
  if (!noneMatchHits(condition, etag)) return undefined;
  return bufferedResponse(null, { status: 304, headers: { etag, 'cache-control': cacheControl(options) } });
}

/** A streamed response with new `headers`, its body left unread. */
function withHeaders(response: Response, headers: Headers): Response {
  return new Response(response.body, { status: response.status, headers });
}

/** A 304 with those fields of `headers` (the 200's) that `KEPT_ON_304` names. */
function notModified(headers: Fields): Response {
  const kept: Record<string, string> = {};
  for (const name of KEPT_ON_304) {
    const value = headers.get(name);
    if (value !== null) kept[name] = value;
  }
  return bufferedResponse(null, { status: 304, headers: kept });
}

function cacheControl(options: FinishOptions): string {
  return options.cache === 'no-store' ? 'no-store' : `${options.cache}, max-age=${options.cacheMaxAge}`;
}

export interface VersionPolicy {
  /** Adds `Deprecation`, `Sunset` and the successor link to a version 1 response. */
  decorate(headers: Fields, path: string): void;
  /** Throws 410 `version-sunset` once version 1 is past its sunset. */
  refuseWhenSunset(path: string): void;
}

/** Version 1's dates (contract §8; RFC 9745, RFC 8594), read once. */
export function versionPolicy(
  config: { readonly v1DeprecatedAt: Date; readonly v1SunsetAt: Date },
  now: () => number = Date.now,
): VersionPolicy {
  const deprecation = `@${Math.floor(config.v1DeprecatedAt.getTime() / 1000)}`;
  const sunset = config.v1SunsetAt.toUTCString();
  const successor = (path: string) => `/v2${path.startsWith('/v1/') ? path.slice(3) : path}`;
  const link = (path: string) => `<${successor(path)}>; rel="successor-version"`;
  return {
    decorate(headers, path) {
      headers.set('deprecation', deprecation);
      headers.set('sunset', sunset);
      headers.append('link', link(path));
    },
    refuseWhenSunset(path) {
      if (now() < config.v1SunsetAt.getTime()) return;
      throw new HttpError(410, 'version-sunset', {
        detail:
          `Version 1 of this API was retired on ${sunset}; use version 2: ${successor(path)} (see ` +
          'docs/versioning.md).',
      });
    },
  };
}
