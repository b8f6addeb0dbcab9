/**
 * Which database errors mean "the database cannot be reached" (SPEC §5: 503)
 * rather than a bug. Callers branch on these; everything else is re-thrown.
 */

// Raised by node's sockets and by postgres.js itself.
const CONNECTION_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOENT',
  'CONNECT_TIMEOUT', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED',
]);

// SQLSTATEs (PostgreSQL Appendix A): class 08 connection exceptions, and the
// server shutting down, starting up, or out of connection slots.
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '57014']);

/** True when `error` says the database is unreachable, overloaded or shutting down. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return false;
  return CONNECTION_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code);
}

/** The PostgreSQL error code of a unique-constraint violation. */
export const UNIQUE_VIOLATION = '23505';

/** The embedded database cannot be opened (its data directory is in use). */
export class EmbeddedDatabaseError extends Error {
  override name = 'EmbeddedDatabaseError';
}
