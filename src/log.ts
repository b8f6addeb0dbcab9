/**
 * JSON lines on stdout (SPEC §13): one object per line with `time` and
 * `level` first. Callers pass plain fields; never a token or a body.
 */
import type { LogLevel } from './config.ts';

export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/** A logger that drops lines below `level` and writes the rest with `write`. */
export function createLogger(level: LogLevel, write: (line: string) => void = (line) => process.stdout.write(line)): Logger {
  const threshold = RANK[level];
  const at = (lineLevel: Exclude<LogLevel, 'silent'>) => (message: string, fields?: LogFields) => {
    if (RANK[lineLevel] < threshold) return;
    write(JSON.stringify({ time: new Date().toISOString(), level: lineLevel, message, ...fields }) + '\n');
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** The fields worth logging of an exception: name, message, PostgreSQL code, stack. */
export function errorFields(error: unknown): LogFields {
  if (!(error instanceof Error)) return { error: String(error) };
  const code = (error as { code?: unknown }).code;
  return { error: { name: error.name, message: error.message, ...(code === undefined ? {} : { code }), stack: error.stack } };
}
