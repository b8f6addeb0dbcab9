/** A handler's JSON request body (contract §4 "Request bodies"), read with the steps of src/http/json-body.ts. */
import type { GenericSchema, InferOutput } from 'valibot';
import { checkContentEncoding, checkJsonContentType, parseJson, validate, validationError } from '../http/json-body.ts';
import type { ProblemError } from '../http/problem.ts';
import type { RequestContext } from './context.ts';

/** What a route adds to the checks of its JSON body. */
export interface ReadJsonBodyOptions {
  /** PATCH: `application/merge-patch+json` is accepted too, and a 415 carries `Accept-Patch`. */
  readonly patch?: boolean;
  /** Problems the schema cannot express (a merge patch's `null` members): any is a 422 before the schema runs. */
  readonly refuse?: (document: unknown) => readonly ProblemError[];
}

/** `ctx`'s body, checked in order: Content-Encoding and Content-Type (415), JSON (400), `refuse`, `schema` (422). */
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
