/**
 * A handler's JSON request body (contract §4 "Request bodies", §8, §11), read
 * in one call from the pure steps of src/http/json-body.ts.
 */
import type { GenericSchema, InferOutput } from 'valibot';
import { checkContentEncoding, checkJsonContentType, parseJson, validate, validationError } from '../http/json-body.ts';
import type { ProblemError } from '../http/problem.ts';
import type { RequestContext } from './context.ts';

export interface ReadJsonBodyOptions {
  /** PATCH: `application/merge-patch+json` is accepted too, and a 415 carries `Accept-Patch`. */
  readonly patch?: boolean;
  /** Problems the schema cannot express (a merge patch's `null` members): any is a 422 before the schema runs. */
  readonly refuse?: (document: unknown) => readonly ProblemError[];
}

/**
 * The body of `ctx` validated against `schema`, checked in this order:
 * Content-Encoding, identity only, then Content-Type for `ctx.version` (both
 * 415 `unsupported-media-type`), JSON
 * (400 `malformed-json`), `options.refuse`, then `schema` (422 `validation`).
 * A version-specific body passes that version's schema.
 */
export function readJsonBody<S extends GenericSchema>(
  ctx: RequestContext,
  schema: S,
  options: ReadJsonBodyOptions = {},
): InferOutput<S> {
  checkContentEncoding(ctx.header('content-encoding'));
  checkJsonContentType(ctx.header('content-type'), { patch: options.patch === true, version: ctx.version });
  const document = parseJson(ctx.body);
  const refused = options.refuse?.(document) ?? [];
  if (refused.length > 0) throw validationError(refused);
  return validate(schema, document);
}
