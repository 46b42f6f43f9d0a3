import { DatabaseBusyError, isDatabaseAway, isServerError } from './db/sql.js';

/**
 * The one error type the service throws on purpose: a code and a message for a person, the fields
 * it is about (each a path relative to the input the thrower was given: `lastName`, `filter.status.eq`,
 * `applicationIDs[3]`), and what a protocol needs to say more (which credential was wrong, which
 * permission is missing, which methods a path serves). Each protocol maps it to its wire: REST to
 * a status, headers and the JSON error body (src/http/errors.ts), GraphQL to `extensions.code`
 * (src/graphql/errors.ts).
 */
/**
 * The error codes, as an interface so that a transport adds the codes only it has (HTTP: a method
 * not allowed, a body too large…; src/http/errors.ts) where it is written: these are the domain's.
 */
export interface ErrorCodes {
  BAD_REQUEST: true;
  UNAUTHORIZED: true;
  FORBIDDEN: true;
  NOT_FOUND: true;
  CONFLICT: true;
  INTERNAL: true;
  UNAVAILABLE: true;
}
export type ErrorCode = keyof ErrorCodes;

export interface FieldProblem {
  field: string;
  message: string;
}

/** What an error tells a protocol beyond its code (a transport adds what its own codes tell). */
export interface ErrorInfo {
  /** UNAUTHORIZED: no credential at all, or one that is wrong. */
  credential?: 'missing' | 'invalid';
  /** FORBIDDEN: the permission the caller lacks. */
  permission?: string;
  /** UNAVAILABLE: the database answers, but this instance has more requests than connections (not an outage). */
  overload?: boolean;
}

export class AppError extends Error {
  override name = 'AppError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: FieldProblem[],
    readonly info: ErrorInfo = {},
  ) {
    super(message);
  }

  static badRequest(message: string, details?: FieldProblem[]): AppError {
    return new AppError('BAD_REQUEST', message, details);
  }

  /** A validation failure of one or more fields; the message names them. */
  static invalid(details: FieldProblem[]): AppError {
    return new AppError('BAD_REQUEST', details.map((d) => `${d.field}: ${d.message}`).join('; '), details);
  }

  static notFound(message: string): AppError {
    return new AppError('NOT_FOUND', message);
  }

  static conflict(message: string, details?: FieldProblem[]): AppError {
    return new AppError('CONFLICT', message, details);
  }

  static unauthorized(message: string, credential: 'missing' | 'invalid'): AppError {
    return new AppError('UNAUTHORIZED', message, undefined, { credential });
  }

  static forbidden(permission: string, message = `this token lacks the "${permission}" permission`): AppError {
    return new AppError('FORBIDDEN', message, undefined, { permission });
  }

  static unavailable(message = 'the database is unavailable; try again shortly'): AppError {
    return new AppError('UNAVAILABLE', message);
  }

  /** The same error with every field path put under `prefix` (`lastName` → `input.lastName`). */
  under(prefix: string): AppError {
    if (!this.details) return this;
    const details = this.details.map((d) => ({ ...d, field: `${prefix}.${d.field}` }));
    return new AppError(this.code, this.code === 'BAD_REQUEST' ? AppError.invalid(details).message : this.message, details, this.info);
  }
}

/**
 * A failure as the AppError it means to a caller, or null when it is a bug (answered as an
 * internal error). A lost database is a 503 the caller may retry, not a 500.
 */
export function asAppError(err: unknown): AppError | null {
  if (err instanceof AppError) return err;
  if (err instanceof DatabaseBusyError) {
    return new AppError('UNAVAILABLE', 'the service has more requests than database connections just now; try again shortly', undefined, { overload: true });
  }
  if (isDatabaseAway(err)) return AppError.unavailable();
  if (!isServerError(err)) return null;
  const code = err.code ?? '';
  if (code === '57014') return AppError.unavailable('the database took too long to answer; try again shortly');
  // A deadlock or serialization failure that persisted through the retries of a transaction.
  if (code === '40P01' || code === '40001') return AppError.conflict('concurrent requests changed the same records; try again');
  // DB_LOCK_TIMEOUT_MS ran out: another transaction holds the records this request must change.
  if (code === '55P03') return AppError.conflict('the records are being changed by another request; try again');
  return null;
}
