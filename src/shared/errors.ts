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
  | 'CONFLICT'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'TOO_MANY_REQUESTS'
  | 'INTERNAL'
  | 'UNAVAILABLE';

export const STATUS_OF: Record<ErrorName, number> = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  TOO_MANY_REQUESTS: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
};

export interface FieldProblem {
  field: string;
  message: string;
}

export class AppError extends Error {
  override name = 'AppError';
  constructor(
    readonly error: ErrorName,
    message: string,
    readonly details?: FieldProblem[],
    /** Headers the HTTP answer must carry (WWW-Authenticate, Allow). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
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
