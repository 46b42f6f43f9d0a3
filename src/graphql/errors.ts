import { unwrapResolverError } from '@apollo/server/errors';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { AppError, type ErrorName } from '../shared/errors.js';
import type { Logger } from '../shared/log.js';

/** SPEC §7's `extensions.code` for each service error. */
const CODE_OF: Partial<Record<ErrorName, string>> = {
  BAD_REQUEST: 'BAD_USER_INPUT',
  UNAUTHORIZED: 'UNAUTHENTICATED',
  FORBIDDEN: 'FORBIDDEN',
  NOT_FOUND: 'NOT_FOUND',
  CONFLICT: 'CONFLICT',
  TOO_MANY_REQUESTS: 'TOO_MANY_REQUESTS',
  UNAVAILABLE: 'UNAVAILABLE',
};

/** A service error as a GraphQL error; BAD_USER_INPUT names the offending field. */
export function toGraphQLError(error: AppError): GraphQLError {
  return new GraphQLError(error.message, {
    extensions: {
      code: CODE_OF[error.error] ?? 'INTERNAL_SERVER_ERROR',
      ...(error.details ? { field: error.details[0].field, details: error.details } : {}),
      http: {
        status: error.status === 401 ? 401 : 200,
        headers: new Map(Object.entries(error.headers).map(([name, value]) => [name.toLowerCase(), value])),
      },
    },
  });
}

/**
 * Apollo's formatError: service errors keep their message and code; GraphQL's own errors (syntax,
 * validation, variables) pass through; anything else is an INTERNAL_SERVER_ERROR that says nothing
 * of its cause (the log has it, without driver messages that may carry request values).
 */
export function formatError(log: Logger) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = unwrapResolverError(error);
    if (original instanceof AppError) {
      const { message, extensions } = toGraphQLError(original);
      const { http: _http, ...rest } = extensions;
      return { message, locations: formatted.locations, path: formatted.path, extensions: rest };
    }
    const code = formatted.extensions?.code;
    if (code && code !== 'INTERNAL_SERVER_ERROR') {
      const { stacktrace: _stack, ...extensions } = formatted.extensions ?? {};
      return { ...formatted, extensions };
    }
    log.error('graphql operation failed', { error: (original as Error)?.name, path: formatted.path?.join('.') });
    return {
      message: 'an internal error occurred',
      locations: formatted.locations,
      path: formatted.path,
      extensions: { code: 'INTERNAL_SERVER_ERROR' },
    };
  };
}
