import pino, { type DestinationStream } from 'pino';
import pretty from 'pino-pretty';
import type { LogLevel } from '../config.js';

/**
 * The service log: pino, one JSON line per event (`{"level":"info","time":"…","msg":…, …}`),
 * written in pages (up to 16 KiB or 200 ms of lines, each one synchronous write: a request waits on
 * no write but the one its line completes, ~15 µs to a file every ~60 requests); what is gathered is written before
 * the process exits, however it exits. Or, with LOG_FORMAT=pretty (the default at a terminal: src/config.ts), pino-pretty's
 * readable lines, written as they come.
 * Callers pass only what is safe to print: never request bodies, query strings (filters may carry
 * token values) or Authorization headers.
 */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** Writes what is buffered (before the process exits). */
  flush(): void;
}

export type LogFormat = 'json' | 'pretty';

/** How long a log line may wait in the buffer. */
const FLUSH_MS = 200;
/** A page of log lines: what one write carries (at most, unless FLUSH_MS comes first). */
const PAGE_BYTES = 16 * 1024;

/**
 * Log lines gathered into pages before they reach sonic-boom (pino's destination), which writes
 * each page as it comes. sonic-boom can gather lines itself (`minLength`), but at every line it
 * measures the whole text gathered so far (`Buffer.byteLength` of a string grown by `+=`, which V8
 * copies flat to measure): gathering 16 KiB that way copied 8 KB a request, an eighth of what a
 * REST write allocated (a sampling heap profile). Here lines are kept in an array and joined once a
 * page. Hand-written for that reason only, and small: the writing itself (partial writes, a full
 * pipe, the synchronous flush at exit) stays sonic-boom's.
 */
export class LinePages {
  private lines: string[] = [];
  private size = 0;

  constructor(
    private readonly out: { write(text: string): unknown },
    private readonly pageSize: number,
  ) {}

  write(line: string): void {
    this.lines.push(line);
    this.size += line.length;
    if (this.size >= this.pageSize) this.flush();
  }

  /** Hands what is gathered to the writer, as one text. */
  flush(): void {
    if (this.lines.length === 0) return;
    const page = this.lines.join('');
    this.lines = [];
    this.size = 0;
    this.out.write(page);
  }
}

/** What is written when the process exits, however it exits (process.exit, an uncaught error, the end of work). */
const atExit = new Set<() => void>();
function flushedAtExit(flush: () => void): void {
  if (atExit.size === 0)
    process.on('exit', () => {
      for (const each of atExit) {
        try {
          each();
        } catch {
          // stderr already closed: nothing more can be said
        }
      }
    });
  atExit.add(flush);
}
/**
 * pino's time field (`,"time":"<ISO 8601>"`), made once per millisecond: under load a dozen lines
 * share a millisecond, and a Date and its ISO text for each was a measurable share of a request's
 * CPU (side by side, 5–8 µs of ~160 a REST read). `clock`: milliseconds since the epoch (tests step their own).
 */
export function isoTimeByMillisecond(clock: () => number = Date.now): () => string {
  let at = -1;
  let text = '';
  return () => {
    const now = clock();
    if (now !== at) {
      at = now;
      text = `,"time":"${new Date(now).toISOString()}"`;
    }
    return text;
  };
}

/**
 * A logger at `level`. `write` receives each line instead of stderr (tests keep them to check what
 * is never logged); `format: 'pretty'` is for people at a terminal.
 */
export function createLogger(level: LogLevel, write?: (line: string) => void, format: LogFormat = 'json'): Logger {
  let destination: DestinationStream;
  let flushSync: (() => void) | null = null;
  if (write) destination = { write: (line: string) => write(line.endsWith('\n') ? line.slice(0, -1) : line) };
  // A stream in this thread, written synchronously (pino-pretty used as a stream, not as a
  // worker-thread transport): at a terminal the lines come in order with the first-token banner on
  // stdout, one line an event.
  else if (format === 'pretty') destination = pretty({ destination: 2, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true });
  else {
    // Lines gather into pages of PAGE_BYTES, written when full or at the next flush (at most
    // FLUSH_MS later): one write per page of lines, not one per request, which under load was a
    // tenth of the service's CPU. A page is written synchronously (as Node writes stderr to a file or
    // a pipe on Linux): 12–18 µs to a file for 16 KiB, every ~60 requests, and no write is ever under way when the process
    // ends or lines are flushed, so none is lost or overtaken. (Written asynchronously, each write
    // was a hand-off to a libuv thread, and a stop could write the last page before one still under way.)
    const stream = pino.destination({ dest: 2, sync: true, maxWrite: 2 * PAGE_BYTES });
    const pages = new LinePages(stream, PAGE_BYTES);
    setInterval(() => pages.flush(), FLUSH_MS).unref();
    destination = pages;
    flushSync = () => {
      pages.flush();
      stream.flushSync();
    };
    // pino's exit hook writes what sonic-boom holds; the page gathered here is this logger's own.
    flushedAtExit(flushSync);
  }
  const logger = pino(
    {
      level,
      base: undefined, // no pid and hostname on every line
      timestamp: isoTimeByMillisecond(),
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
  const at = (method: 'debug' | 'info' | 'warn' | 'error') => (msg: string, fields?: Record<string, unknown>) =>
    fields ? logger[method](fields, msg) : logger[method](msg);
  return {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    flush: () => {
      try {
        flushSync?.();
      } catch {
        // nothing buffered, or stderr already closed
      }
    },
  };
}
