/**
 * A hand-written router: routes compiled once into a segment tree, one map lookup per path segment. The optional
 * `/v1` or `/v2` prefix (contract §8) is recognised here and handed back as the API version. `{id:int}` takes a
 * positive integer within 2^53−1 (anything else is 404, contract §4), `{name}` any non-empty segment. `match()`
 * takes the path as sent, not as URL parsing would normalise it: a dot-segment (`%2e` too) or a backslash makes it
 * name nothing, so `/v1/orders/../users/1` is 404, not another route. `/` names the root only, unprefixed.
 */

import type { Version } from './negotiation.ts';
import { positiveInteger } from './list-query.ts';

export const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
export type Method = (typeof METHODS)[number];

/** 1 or 2 from a `/v1` or `/v2` prefix; `undefined` when the path has none. */
export type PathVersion = Version | undefined;

export interface Route<H> {
  readonly method: Method;
  readonly pattern: string;
  readonly handler: H;
  /** `false` for paths that take no version prefix (`/healthz`, `/readyz`). Default `true`. */
  readonly versioned?: boolean;
}

export type Params = Readonly<Record<string, string | number>>;

export type RouteMatch<H> =
  | {
      readonly kind: 'found';
      readonly handler: H;
      readonly params: Params;
      readonly version: PathVersion;
      readonly pattern: string;
      readonly allow: string;
    }
  /** The path's `pattern` (that of every route on it) too: a request answered here is counted under it. */
  | { readonly kind: 'options'; readonly allow: string; readonly version: PathVersion; readonly pattern: string }
  | {
      readonly kind: 'method-not-allowed';
      readonly allow: string;
      readonly version: PathVersion;
      readonly pattern: string;
    }
  | { readonly kind: 'not-found'; readonly version: PathVersion };

export interface Router<H> {
  match(method: string, path: string): RouteMatch<H>;
  /** Every route, for documentation and tests. */
  readonly routes: readonly Route<H>[];
}

/** A programmer's mistake in the route table, thrown at start-up. */
export class RouteDefinitionError extends Error {
  override name = 'RouteDefinitionError';
}

interface Leaf<H> {
  readonly handler: H;
  readonly pattern: string;
  readonly versioned: boolean;
}

interface Node<H> {
  readonly literal: Map<string, Node<H>>;
  param: { readonly name: string; readonly type: 'int' | 'string'; readonly node: Node<H> } | undefined;
  readonly leaves: Map<Method, Leaf<H>>;
  allow: string;
  /** The pattern of the routes ending here (they share it: their parameters cannot conflict). */
  pattern: string;
}

const PARAM = /^\{([a-zA-Z][a-zA-Z0-9]*)(?::(int))?\}$/;
// Dot-segments (RFC 3986 §3.3), which URL resolution would remove (§5.2.4), with the dot in any encoding.
const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i;
const VERSION_PREFIXES: ReadonlyMap<string, PathVersion> = new Map([
  ['v1', 1],
  ['v2', 2],
]);
const ROOT = '/';

function newNode<H>(): Node<H> {
  return { literal: new Map(), param: undefined, leaves: new Map(), allow: '', pattern: '' };
}

/** Compiles `routes` into a router; throws `RouteDefinitionError` on a malformed or duplicate route. */
export function createRouter<H>(routes: readonly Route<H>[]): Router<H> {
  const root = newNode<H>();
  for (const route of routes) add(root, route);
  finish(root);
  return {
    routes,
    match(method, path) {
      // Only an absolute path names a resource (not `*`, not `host:443`).
      if (!path.startsWith('/')) return { kind: 'not-found', version: undefined };
      const segments = path.split('/');
      // segments[0] is the empty string before the leading slash.
      let start = 1;
      const version = VERSION_PREFIXES.get(segments[1] ?? '');
      if (version !== undefined) start = 2;
      const params: Record<string, string | number> = {};
      const node = path === ROOT ? root : walk(root, segments, start, params);
      if (node === undefined || node.leaves.size === 0) return { kind: 'not-found', version };
      // A prefixed path must lead to a route that takes a version.
      if (version !== undefined && ![...node.leaves.values()].some((leaf) => leaf.versioned)) {
        return { kind: 'not-found', version };
      }
      const { allow, pattern } = node;
      if (method === 'OPTIONS' && !node.leaves.has('OPTIONS')) return { kind: 'options', allow, version, pattern };
      // RFC 9110 §9.3.2: HEAD is answered as GET without the content.
      const leaf = node.leaves.get(method as Method) ?? (method === 'HEAD' ? node.leaves.get('GET') : undefined);
      if (leaf === undefined) return { kind: 'method-not-allowed', allow, version, pattern };
      return { kind: 'found', handler: leaf.handler, params, version, pattern: leaf.pattern, allow };
    },
  };
}

function add<H>(root: Node<H>, route: Route<H>): void {
  if (!route.pattern.startsWith('/')) throw new RouteDefinitionError(`pattern must start with "/": ${route.pattern}`);
  if (!METHODS.includes(route.method))
    throw new RouteDefinitionError(`unknown method ${route.method} for ${route.pattern}`);
  if (route.pattern === ROOT && (route.versioned ?? true)) {
    throw new RouteDefinitionError(`${route.method} / takes no version prefix: declare it versioned: false`);
  }
  let node = root;
  for (const segment of route.pattern === ROOT ? [] : route.pattern.split('/').slice(1)) {
    if (segment === '') throw new RouteDefinitionError(`empty segment in ${route.pattern}`);
    const param = PARAM.exec(segment);
    if (param) {
      const name = param[1] as string;
      const type = param[2] === 'int' ? 'int' : 'string';
      if (node.param && (node.param.name !== name || node.param.type !== type)) {
        throw new RouteDefinitionError(
          `conflicting parameters {${node.param.name}} and ${segment} in ${route.pattern}`,
        );
      }
      node.param ??= { name, type, node: newNode() };
      node = node.param.node;
    } else {
      if (segment.includes('{') || segment.includes('}'))
        throw new RouteDefinitionError(`malformed segment ${segment} in ${route.pattern}`);
      if (VERSION_PREFIXES.has(segment) && node === root)
        throw new RouteDefinitionError(`${route.pattern} starts with a version segment`);
      let next = node.literal.get(segment);
      if (next === undefined) {
        next = newNode();
        node.literal.set(segment, next);
      }
      node = next;
    }
  }
  if (node.leaves.has(route.method)) throw new RouteDefinitionError(`duplicate route ${route.method} ${route.pattern}`);
  node.leaves.set(route.method, { handler: route.handler, pattern: route.pattern, versioned: route.versioned ?? true });
  node.pattern = route.pattern;
}

/** Precomputes each node's `Allow` value (RFC 9110 §10.2.1). */
function finish<H>(node: Node<H>): void {
  if (node.leaves.size > 0) {
    const methods = new Set<string>(node.leaves.keys());
    if (methods.has('GET')) methods.add('HEAD');
    methods.add('OPTIONS');
    node.allow = METHODS.filter((m) => methods.has(m)).join(', ');
  }
  for (const child of node.literal.values()) finish(child);
  if (node.param) finish(node.param.node);
}

function walk<H>(
  root: Node<H>,
  segments: readonly string[],
  start: number,
  params: Record<string, string | number>,
): Node<H> | undefined {
  let node = root;
  for (let i = start; i < segments.length; i++) {
    const segment = segments[i] as string;
    // A backslash is a path separator to WHATWG URL parsing: never one segment of ours.
    if (segment === '' || DOT_SEGMENT.test(segment) || segment.includes('\\')) return undefined;
    const literal = node.literal.get(segment);
    if (literal !== undefined) {
      node = literal;
      continue;
    }
    const param = node.param;
    if (param === undefined) return undefined;
    if (param.type === 'int') {
      const n = positiveInteger(segment);
      if (n === undefined) return undefined;
      params[param.name] = n;
    } else {
      params[param.name] = segment;
    }
    node = param.node;
  }
  // A bare version prefix ("/v1") names no resource; "/" never comes here (see match()).
  return node === root ? undefined : node;
}
