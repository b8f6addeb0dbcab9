/** A mistake in the routes' documentation, found when the OpenAPI document is built at start-up. */
export class OpenApiError extends Error {
  override name = 'OpenApiError';
}
