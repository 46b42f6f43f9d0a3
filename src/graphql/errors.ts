import type { ApolloServerPlugin } from '@apollo/server';
import { unwrapResolverError } from '@apollo/server/errors';
import { BREAK, GraphQLError, Kind, visit, type ASTNode, type DocumentNode, type GraphQLFormattedError } from 'graphql';
import { AppError, asAppError, type ErrorName } from '../shared/errors.js';
import type { Logger } from '../shared/log.js';
import type { GraphQLContext } from './context.js';

/** SPEC §7's `extensions.code` for each service error. */
const CODE_OF: Record<ErrorName, string> = {
  BAD_REQUEST: 'BAD_USER_INPUT',
  UNAUTHORIZED: 'UNAUTHENTICATED',
  FORBIDDEN: 'FORBIDDEN',
  NOT_FOUND: 'NOT_FOUND',
  METHOD_NOT_ALLOWED: 'METHOD_NOT_ALLOWED',
  REQUEST_TIMEOUT: 'REQUEST_TIMEOUT',
  CONFLICT: 'CONFLICT',
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  UNSUPPORTED_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  TOO_MANY_REQUESTS: 'TOO_MANY_REQUESTS',
  HEADERS_TOO_LARGE: 'HEADERS_TOO_LARGE',
  INTERNAL: 'INTERNAL_SERVER_ERROR',
  UNAVAILABLE: 'UNAVAILABLE',
};

/** A service error as a GraphQL error; BAD_USER_INPUT names the offending field. */
export function toGraphQLError(error: AppError): GraphQLError {
  return new GraphQLError(error.message, {
    extensions: {
      code: CODE_OF[error.error],
      ...(error.details ? { field: error.details[0].field, details: error.details } : {}),
    },
  });
}

/**
 * A write's service errors named as GraphQL holds the fields, inside the `input` argument:
 * `input.lastName` (REST's body has them at the top, so the services say `lastName`). The record's
 * own `id` is an argument of its own.
 */
export async function inInput<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (!(err instanceof AppError) || !err.details || (err.error !== 'BAD_REQUEST' && err.error !== 'CONFLICT')) throw err;
    const details = err.details.map((d) => (d.field === 'id' ? d : { ...d, field: `input.${d.field}` }));
    throw err.error === 'BAD_REQUEST' ? AppError.invalid(details) : AppError.conflict(err.message, details);
  }
}

/**
 * The body of a /graphql answer that fails before GraphQL runs (no token, a body that is not JSON,
 * a wrong method, …): GraphQL's own shape, so that a GraphQL client reads it like any other error.
 * A request that is not JSON (415, 400) gets Apollo's BAD_REQUEST, as Apollo would answer it.
 */
export function httpErrorBody(error: AppError, requestId: string) {
  const code = error.error === 'BAD_REQUEST' && !error.details ? 'BAD_REQUEST' : CODE_OF[error.error];
  return { errors: [{ message: error.message, extensions: { code, requestId, ...(error.details ? { details: error.details } : {}) } }] };
}

/** graphql-js says `Variable "$input" got invalid value { …the value… } at "input.x"; <why>`. */
const INVALID_VARIABLE = /^Variable "\$([^"]+)" got invalid value /;

/**
 * What a type refused, without the value it refused: graphql-js and graphql-scalars end such
 * messages with the value (`Int cannot represent non-integer value: "…"`), and an enum's names
 * it (`Value "…" does not exist in "SortDirection" enum.`).
 */
function withoutValue(message: string): string {
  const enumValue = /^Value .* does not exist in "(\w+)" enum\./s.exec(message);
  if (enumValue) return `the value is not one of the ${enumValue[1]} values.`;
  return message.replace(/^(\S+ cannot represent [^:]*):.*$/s, '$1.');
}

/**
 * A variable that does not fit its type, said without repeating the value: graphql-js prints the
 * whole variable, which may hold an access token or a `password` the caller should not have sent.
 * The field is the path inside the variable: `$input.status`.
 */
function invalidVariable(error: GraphQLError): { message: string; field: string } | null {
  const m = INVALID_VARIABLE.exec(error.message);
  if (!m) return null;
  const why = error.originalError?.message;
  let path = m[1];
  if (why && error.message.endsWith(`; ${why}`)) {
    const at = / at "([^"]+)"$/.exec(error.message.slice(0, -(why.length + 2)));
    if (at) path = at[1];
  }
  const field = `$${path}`;
  return { message: `Variable "$${m[1]}" has an invalid value${path !== m[1] ? ` at "${field}"` : ''}${why ? `: ${withoutValue(why)}` : ''}`, field };
}

/** graphql-js says `Expected value of type "Int!", found "x"; <why>` of a literal argument. */
const INVALID_LITERAL = /^Expected value of type "([^"]+)", found /;

/**
 * A literal argument that does not fit its type, said without repeating it (a token pasted into a
 * document should not come back in an error that clients log): the type, and why without the value.
 */
function invalidLiteral(message: string, error: unknown): string {
  const m = INVALID_LITERAL.exec(message);
  if (!m) return withoutValue(message);
  // The scalar's own error is the innermost cause (Apollo wraps graphql-js's validation error).
  let cause = error as { originalError?: unknown; message?: string } | undefined;
  while (cause?.originalError) cause = cause.originalError as typeof cause;
  const why = cause?.message && cause.message !== message && message.endsWith(`; ${cause.message}`) ? cause.message : undefined;
  return `Expected value of type "${m[1]}"${why ? `; ${withoutValue(why)}` : '.'}`;
}

/** `Did you mean "lastName"?` spells out the schema: dropped where introspection is off. */
const withoutHints = (message: string) => message.replace(/\s*Did you mean [^?]*\?/g, '');

/** The error without hints, in its message and in every message of its details. */
function withoutAnyHints(error: GraphQLFormattedError): GraphQLFormattedError {
  const details = error.extensions?.details;
  return {
    ...error,
    message: withoutHints(error.message),
    ...(Array.isArray(details)
      ? { extensions: { ...error.extensions, details: details.map((d: { message?: unknown }) => (typeof d?.message === 'string' ? { ...d, message: withoutHints(d.message) } : d)) } }
      : {}),
  };
}

/**
 * Apollo's formatError: service errors keep their message and code; GraphQL's own errors (syntax,
 * validation, variables) pass through, without echoed values, and with `field` and `details` when
 * they are about one argument or variable; anything else is an INTERNAL_SERVER_ERROR that says
 * nothing of its cause (the errors plugin logs it). `hideSchema`: no "Did you mean" hints.
 */
export function formatError(options: { hideSchema: boolean }) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const result = format(formatted, error);
    return options.hideSchema ? withoutAnyHints(result) : result;
  };
}

function format(formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
  const known = asAppError(unwrapResolverError(error));
  if (known) {
    const { message, extensions } = toGraphQLError(known);
    return { message, locations: formatted.locations, path: formatted.path, extensions };
  }
  const { stacktrace: _stack, ...extensions } = formatted.extensions ?? {};
  const code = extensions.code;
  const naming = (message: string, field: string) => ({ field, details: [{ field, message }] });
  if (code === 'BAD_USER_INPUT' && error instanceof GraphQLError) {
    const variable = invalidVariable(error);
    if (variable) {
      return { message: variable.message, locations: formatted.locations, extensions: { ...extensions, ...naming(variable.message, variable.field) } };
    }
  }
  // Syntax errors name the token they stopped at, and a string's or number's token is its value.
  if (code === 'GRAPHQL_PARSE_FAILED') {
    return { ...formatted, message: formatted.message.replace(/ (String|BlockString|Int|Float) "[\s\S]*"(\.?)$/, ' $1$2'), extensions };
  }
  if (code === 'GRAPHQL_VALIDATION_FAILED') {
    // graphql-js stops checking that same-named fields can merge once that grows too costly.
    if (formatted.message === 'Validation aborted.') {
      return { ...formatted, message: 'the query repeats the same fields too often to be checked; select each field once', extensions };
    }
    // A literal of the wrong type, in an argument or a variable's default value, without its value.
    const message = invalidLiteral(formatted.message, error);
    // In an argument, the errors plugin named it: the caller's input, not the document's shape.
    if (typeof extensions.field === 'string') {
      return { ...formatted, message, extensions: { ...extensions, code: 'BAD_USER_INPUT', ...naming(message, extensions.field) } };
    }
    return { ...formatted, message, extensions };
  }
  if (code && code !== 'INTERNAL_SERVER_ERROR') return { ...formatted, extensions };
  return { message: 'an internal error occurred', locations: formatted.locations, path: formatted.path, extensions: { code: 'INTERNAL_SERVER_ERROR' } };
}

/**
 * `input.status`, `orderBy[0].lastName`: where a value node sits inside an argument; null when it
 * is not in one. Walks the node's path from the document, so list positions are known.
 */
function argumentPath(document: DocumentNode, target: ASTNode): string | null {
  let keys: readonly (string | number)[] | undefined;
  visit(document, {
    enter(node, _key, _parent, path) {
      if (node !== target) return undefined;
      keys = [...path];
      return BREAK;
    },
  });
  if (!keys) return null;
  let name: string | null = null;
  let node: unknown = document;
  let owner: string | undefined; // the kind of the last node passed: a ListValue's items get [i]
  for (const key of keys) {
    node = (node as Record<string | number, unknown>)[key];
    if (Array.isArray(node)) continue;
    const step = node as ASTNode;
    if (typeof key === 'number' && owner === Kind.LIST && name !== null) name += `[${key}]`;
    if (step.kind === Kind.ARGUMENT) name = step.name.value;
    else if (step.kind === Kind.OBJECT_FIELD && name !== null) name += `.${step.name.value}`;
    owner = step.kind;
  }
  return name;
}

/**
 * Every GraphQL error of a request carries the request's `requestId` (as REST error bodies do), an
 * internal one is logged with it, and a literal argument of the wrong type names the argument.
 */
export function errorsPlugin(log: Logger): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart() {
      return {
        async validationDidStart({ document }) {
          return async (errors) => {
            for (const error of (errors ?? []) as readonly GraphQLError[]) {
              const node = error.nodes?.[0];
              const field = node && node.kind !== Kind.FIELD && node.kind !== Kind.ARGUMENT ? argumentPath(document, node) : null;
              if (field) (error.extensions as Record<string, unknown>).field = field;
            }
          };
        },
        async didEncounterErrors({ errors, contextValue }) {
          for (const error of errors) {
            const original = unwrapResolverError(error);
            // What formatError masks as INTERNAL_SERVER_ERROR: neither a service error nor one with a code.
            if (asAppError(original) || (error.extensions?.code ?? 'INTERNAL_SERVER_ERROR') !== 'INTERNAL_SERVER_ERROR') continue;
            log.error('graphql operation failed', {
              requestId: contextValue.requestId,
              path: error.path?.join('.'),
              error: (original as Error)?.name,
              // Driver messages may carry request values: only their code is logged.
              ...((original as { code?: unknown })?.code !== undefined ? { code: (original as { code?: unknown }).code } : { message: (original as Error)?.message, stack: (original as Error)?.stack }),
            });
          }
        },
        async willSendResponse({ response, contextValue }) {
          if (response.body.kind !== 'single') return;
          for (const error of response.body.singleResult.errors ?? []) {
            (error as { extensions?: Record<string, unknown> }).extensions = { ...error.extensions, requestId: contextValue.requestId };
          }
        },
      };
    },
  };
}
