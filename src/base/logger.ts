/**
 * JSON lines on stdout (contract §13): one object per line with `time` and
 * `level` first. Callers pass plain fields; never a token or a body.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/** Lines held before a write even within one turn of the event loop. */
const BATCH_BYTES = 64 * 1024;
let stdoutWriter: ((line: string) => void) | undefined;

/**
 * Writes lines to stdout in one write per turn of the event loop: on Linux a write to a file or a pipe is a
 * synchronous system call. Flushed at the turn's end, at 64 KiB, and at exit, so only SIGKILL loses a line.
 */
export function stdoutLines(): (line: string) => void {
  if (stdoutWriter !== undefined) return stdoutWriter;
  let pending = '';
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (pending === '') return;
    const text = pending;
    pending = '';
    process.stdout.write(text);
  };
  process.on('exit', flush);
  stdoutWriter = (line) => {
    pending += line;
    if (pending.length >= BATCH_BYTES) flush();
    else if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
  return stdoutWriter;
}

/** A logger that drops lines below `level` and writes the rest with `write` (stdout, in batches, by default). */
export function createLogger(level: LogLevel, write: (line: string) => void = stdoutLines()): Logger {
  const threshold = RANK[level];
  const at = (lineLevel: Exclude<LogLevel, 'silent'>) => (message: string, fields?: LogFields) => {
    if (RANK[lineLevel] < threshold) return;
    // As JSON.stringify({ time, level, message, ...fields }), without copying the fields first.
    const rest = fields === undefined ? '{}' : JSON.stringify(fields);
    write(
      `{"time":"${isoNow()}","level":"${lineLevel}","message":${JSON.stringify(message)}` +
        `${rest === '{}' ? '}' : `,${rest.slice(1)}`}\n`,
    );
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

// The time of the last line, as formatted: toISOString() costs more than the rest of a line (0.6 µs of 1.6).
let formattedMs = Number.NaN;
let formatted = '';

/** Now, as an ISO 8601 string to the millisecond, formatted once per millisecond. */
function isoNow(): string {
  const ms = Date.now();
  if (ms !== formattedMs) {
    formattedMs = ms;
    formatted = new Date(ms).toISOString();
  }
  return formatted;
}

/** The fields worth logging of an exception: name, message, PostgreSQL code, stack. */
export function errorFields(error: unknown): LogFields {
  if (!(error instanceof Error)) return { error: String(error) };
  const code = (error as { code?: unknown }).code;
  return {
    error: { name: error.name, message: error.message, ...(code === undefined ? {} : { code }), stack: error.stack },
  };
}
