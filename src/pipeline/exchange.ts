/**
 * One request's state as it passes the stages: what the request says, set when it arrives (its route included:
 * matching needs only the method and path), and what each stage hands inward. Each writable field has one writer,
 * named first in its comment (test/api/pipeline-fields.test.ts checks the sources).
 */
import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/authenticator.ts';
import type { Db } from '../db/database.ts';
import type { RequestClock } from '../db/errors.ts';
import { RequestScope } from '../db/cancellation.ts';
import { NO_CONDITIONS, type Conditions } from '../http/conditional.ts';
import { clientAddress, type ProxyHeader } from '../http/client-address.ts';
import { JSON_TYPE, type Version } from '../http/negotiation.ts';
import { fieldOf } from '../http/incoming-request.ts';
import type { ClientInfo } from '../http/client-info.ts';
import type { Params, Router, RouteMatch } from '../http/router.ts';
import type { Passage } from './compose.ts';
import type { PlannedRoute } from './plan.ts';
import type { Handler, HandlerServices, RequestContext } from './context.ts';

export interface Exchange extends Passage {
  readonly request: Request;
  /** Field `name` (lower case) of the request, read from the node bridge without building `Headers`. */
  readonly header: (name: string) => string | null;
  readonly started: number;
  /** contract §13: the client's `X-Request-Id` when well formed, else a new UUID. */
  readonly requestId: string;
  /** Parsed when first read: a GET by id never reads its query. */
  readonly url: URL;
  /** The path as the client sent it (routing and the log): URL parsing resolves `..` and `\`. */
  readonly path: string;
  /** `url.pathname`, without parsing the URL when the path has nothing for it to resolve or encode. */
  readonly pathname: string;
  /** contract §16: the forwarded address only from a trusted proxy; what rate limits and the log see. */
  readonly address: string;
  readonly services: HandlerServices;
  /** cors: a CORS preflight from a listed origin. */
  preflight: boolean;
  /** deadline: the request's time for the database, which the body stage stops while it reads. */
  deadline: RequestClock | undefined;
  /** What the request has under way in the database, to cancel when it gives up. */
  readonly scope: RequestScope;
  /** The client, as the node bridge tells of it (`ClientInfo.gone`). */
  readonly client: ClientInfo;
  /** body: the request body, read once the request is routed, authenticated and counted. */
  body: Uint8Array;
  readonly match: RouteMatch<PlannedRoute>;
  /** The route that serves the request (`undefined`: the route stage refuses it, or answers OPTIONS). */
  readonly route: PlannedRoute | undefined;
  readonly params: Params;
  /** negotiate: the version of the answer (the path's prefix is `match.version`). */
  version: Version | undefined;
  /** negotiate: the media type of the answer's body. */
  contentType: string | undefined;
  /** authorize. */
  principal: Principal | undefined;
  /** preconditions: the request's conditions, parsed once. */
  conditions: Conditions | undefined;
  /**
   * replica: where the handler's statements go, the primary or the replica for a read (from the arrival: the
   * database, or its operations connection for a route exempt from overload).
   */
  source: Source;
  /** replica: where a route's `currentTag` reads the tag of a conditional GET (`undefined`: `source`). */
  tagSource: Source | undefined;
  /** The request's own handle on `source`, taken when a handler first reaches for it (`dbOf`). */
  handle: Db | undefined;
  /** idempotency: the savepoint a keyed POST's handler runs in. */
  savepoint: Db | undefined;
  /** idempotency: the answer of a keyed POST its route did in one statement, given in the handler's place. */
  respond: Handler | undefined;
  /** compose(), not a stage: the stage the request is in, by which it refuses a stage's second `next()`. */
  stage: number;
}

// 1–128 visible ASCII characters.
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;
// A path URL parsing leaves as it is: no dot segment, backslash or percent sign to resolve, nothing to encode.
const PLAIN_PATH = /^\/[A-Za-z0-9\-_~/]*$/;
const EMPTY = new Uint8Array(0);

/** Where a request's statements go: a database (the primary, the replica) that gives a request its handle. */
export interface Source {
  handle(scope: RequestScope): Db;
}

/** What every exchange shares: read once, when the app is made. */
export interface ExchangeParts {
  /** Whether an address is a trusted proxy's; `undefined` without `TRUST_PROXY`. */
  readonly trusted: ((address: string) => boolean) | undefined;
  /** The field a trusted proxy writes the client's address in (`TRUST_PROXY_HEADER`). */
  readonly proxyHeader: ProxyHeader;
  readonly router: Router<PlannedRoute>;
  readonly database: Source;
  /** Where the statements of health checks and metrics (`overload: 'exempt'`) go: never behind the requests' work. */
  readonly operations: Source;
  readonly services: HandlerServices;
}

/** The state of `request` as it arrives from `client`. */
export function newExchange(request: Request, client: ClientInfo, parts: ExchangeParts): Exchange {
  return new Arrival(request, client, parts);
}

/**
 * An exchange: a class, so that its URL is parsed only when read, by a getter on the prototype (a getter of an
 * object literal made each literal about 1 µs slower to build than the request's other work here).
 */
class Arrival implements Exchange {
  readonly request: Request;
  readonly header: (name: string) => string | null;
  readonly started = performance.now();
  readonly requestId: string;
  readonly path: string;
  readonly pathname: string;
  readonly address: string;
  readonly services: HandlerServices;
  preflight = false;
  deadline: RequestClock | undefined = undefined;
  readonly scope = new RequestScope();
  readonly client: ClientInfo;
  body: Uint8Array = EMPTY;
  readonly match: RouteMatch<PlannedRoute>;
  readonly route: PlannedRoute | undefined;
  readonly params: Params;
  version: Version | undefined = undefined;
  contentType: string | undefined = undefined;
  principal: Principal | undefined = undefined;
  conditions: Conditions | undefined = undefined;
  source: Source;
  tagSource: Source | undefined = undefined;
  handle: Db | undefined = undefined;
  savepoint: Db | undefined = undefined;
  respond: Handler | undefined = undefined;
  stage = 0;
  #url: URL | undefined;

  constructor(request: Request, client: ClientInfo, parts: ExchangeParts) {
    this.request = request;
    this.client = client;
    const header = (name: string) => fieldOf(request, name);
    this.header = header;
    const incomingId = header('x-request-id');
    this.requestId = incomingId !== null && REQUEST_ID.test(incomingId) ? incomingId : randomUUID();
    const path = client.path ?? this.url.pathname;
    this.path = path;
    this.pathname = PLAIN_PATH.test(path) ? path : this.url.pathname;
    const { trusted } = parts;
    this.address =
      trusted === undefined
        ? client.remoteAddress
        : clientAddress(client.remoteAddress, header(parts.proxyHeader), trusted, parts.proxyHeader);
    this.services = parts.services;
    const match = parts.router.match(request.method, path);
    this.match = match;
    this.route = match.kind === 'found' ? match.handler : undefined;
    this.params = match.kind === 'found' ? match.params : {};
    this.source = this.route?.overload === 'exempt' ? parts.operations : parts.database;
  }

  get url(): URL {
    this.#url ??= new URL(this.request.url);
    return this.#url;
  }
}

/** The route of an exchange past the route stage (a stage inside it can rely on one). */
export function routeOf(x: Exchange): PlannedRoute {
  if (x.route === undefined) throw new Error('a stage inside the route stage ran without a route');
  return x.route;
}

/** What the handler sees of the exchange; with `db`, what a route's `currentTag` sees (its statements there). */
export function contextOf(x: Exchange, db?: Db): RequestContext {
  return new ExchangeContext(x, db);
}

/** The handler's view of an exchange, with defaults; one small object per request, its getters on the prototype. */
class ExchangeContext implements RequestContext {
  readonly #x: Exchange;
  readonly #db: Db | undefined;
  constructor(x: Exchange, db: Db | undefined) {
    this.#x = x;
    this.#db = db;
  }
  get request(): Request {
    return this.#x.request;
  }
  header(name: string): string | null {
    return this.#x.header(name);
  }
  get conditions(): Conditions {
    return this.#x.conditions ?? NO_CONDITIONS;
  }
  get url(): URL {
    return this.#x.url;
  }
  get params(): Params {
    return this.#x.params;
  }
  get version(): Version {
    return this.#x.version ?? 1;
  }
  get contentType(): string {
    return this.#x.contentType ?? JSON_TYPE;
  }
  get requestId(): string {
    return this.#x.requestId;
  }
  get body(): Uint8Array {
    return this.#x.body;
  }
  get principal(): Principal | undefined {
    return this.#x.principal;
  }
  get services(): HandlerServices {
    return this.#x.services;
  }
  get db(): Db {
    return this.#db ?? dbOf(this.#x);
  }
}

/** Where the request's statements go: a keyed POST's savepoint, else its own handle on `source`, taken lazily. */
export function dbOf(x: Exchange): Db {
  if (x.savepoint !== undefined) return x.savepoint;
  x.handle ??= x.source.handle(x.scope);
  return x.handle;
}
