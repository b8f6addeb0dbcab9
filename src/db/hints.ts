/**
 * The fix for a failure that stops start-up (the database, the role or its password refused, or a server that takes
 * no writes), one clause for the line that names the cause; never anything of the URL, which may hold a password.
 */
export function startupFix(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, message } = error as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' ? message : '';
  // PgBouncer refuses a wrong password as a protocol violation, in words.
  const password = code === '08P01' && /SASL authentication failed|password authentication failed/.test(text);
  switch (password ? '28P01' : code) {
    case '28P01':
      return (
        "put the role's right password in DATABASE_URL (percent-encoded) or PGPASSWORD; " +
        "an administrator may set it with ALTER ROLE … PASSWORD '…'"
      );
    case '28000':
      if (/^role .* does not exist/.test(text))
        return "create the role (CREATE ROLE … LOGIN PASSWORD '…') or name an existing one in DATABASE_URL";
      if (text.includes('pg_hba.conf'))
        return "add a line for this host, role and database to the server's pg_hba.conf (scram-sha-256), then reload";
      return "check the role and the server's pg_hba.conf";
    case '3D000':
      return 'create the database (CREATE DATABASE … OWNER …, or createdb) or name an existing one in DATABASE_URL';
    case '42501':
      return 'let the role create in the schema (GRANT CREATE ON SCHEMA public TO …) or make it the owner';
    case '25006':
      return (
        'the server takes no writes (a standby, or default_transaction_read_only): point DATABASE_URL at the ' +
        'primary, or list every host with target_session_attrs=read-write'
      );
    default:
      return undefined;
  }
}
