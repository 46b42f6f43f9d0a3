import { ConnectionException } from '@mikro-orm/core';

/**
 * The one error type services throw. Each protocol adapter turns it into its own shape: REST into
 * the JSON error body of SPEC §6, GraphQL into `extensions.code`.
 */
export type ErrorName =
  | 'BAD_REQUEST'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'REQUEST_TIMEOUT'
  | 'CONFLICT'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'TOO_MANY_REQUESTS'
  | 'HEADERS_TOO_LARGE'
  | 'INTERNAL'
  | 'UNAVAILABLE';

export const STATUS_OF: Record<ErrorName, number> = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  TOO_MANY_REQUESTS: 429,
  HEADERS_TOO_LARGE: 431,
  INTERNAL: 500,
  UNAVAILABLE: 503,
};

export interface FieldProblem {
  field: string;
  message: string;
}

/** What a 503's Retry-After says. */
export const RETRY_AFTER_SECONDS = 5;

export class AppError extends Error {
  override name = 'AppError';
  constructor(
    readonly error: ErrorName,
    message: string,
    readonly details?: FieldProblem[],
    /** Headers the HTTP answer must carry (WWW-Authenticate, Allow, Retry-After). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    // A 503 says when to try again (SPEC §8): a database outage is usually over in seconds.
    if (error === 'UNAVAILABLE' && !('Retry-After' in headers)) this.headers = { ...headers, 'Retry-After': String(RETRY_AFTER_SECONDS) };
  }

  get status(): number {
    return STATUS_OF[this.error];
  }

  static badRequest(message: string, details?: FieldProblem[]): AppError {
    return new AppError('BAD_REQUEST', message, details);
  }

  /** A validation failure of one or more fields; the message names them. */
  static invalid(details: FieldProblem[]): AppError {
    const message = details.map((d) => `${d.field}: ${d.message}`).join('; ');
    return new AppError('BAD_REQUEST', message, details);
  }

  static notFound(message: string): AppError {
    return new AppError('NOT_FOUND', message);
  }

  static conflict(message: string, details?: FieldProblem[]): AppError {
    return new AppError('CONFLICT', message, details);
  }

  static unauthorized(message: string, headerValue: string): AppError {
    return new AppError('UNAUTHORIZED', message, undefined, { 'WWW-Authenticate': headerValue });
  }

  static forbidden(needed: string, message = `this token lacks the "${needed}" permission`): AppError {
    return new AppError('FORBIDDEN', message, undefined, {
      'WWW-Authenticate': `Bearer error="insufficient_scope", scope="${needed}"`,
    });
  }
}

/** PostgreSQL error classes and socket errors that mean "the database cannot be reached right now". */
const UNREACHABLE = /^(08|57P0|53300$|55000$)|^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EHOSTUNREACH|EAI_AGAIN)$/;

/**
 * A failure as the AppError it means to a caller, or null when it is a bug (answered as an
 * internal error). A lost database is a 503 the caller may retry, not a 500.
 */
export function asAppError(err: unknown): AppError | null {
  if (err instanceof AppError) return err;
  if (err instanceof ConnectionException) return new AppError('UNAVAILABLE', 'the database is unavailable; try again shortly');
  const code = (err as { code?: unknown } | null)?.code;
  const unreachable =
    (typeof code === 'string' && UNREACHABLE.test(code)) ||
    /connection terminated|timeout exceeded when trying to connect|cannot use a pool after calling end|Connection is closed|not queryable|connection to PostgreSQL ended|driver has already been destroyed/i.test(
      (err as Error | null)?.message ?? '',
    );
  if (unreachable) return new AppError('UNAVAILABLE', 'the database is unavailable; try again shortly');
  // A deadlock that persisted through the retries of db/transaction.ts.
  if (code === '40P01' || code === '40001') return AppError.conflict('concurrent requests changed the same records; try again');
  // DB_LOCK_TIMEOUT_MS ran out: another transaction holds the records this request must change.
  if (code === '55P03') return AppError.conflict('the records are being changed by another request; try again');
  // DB_STATEMENT_TIMEOUT_MS ran out (or an operator cancelled the statement).
  if (code === '57014') return new AppError('UNAVAILABLE', 'the database took too long to answer; try again shortly');
  return null;
}
