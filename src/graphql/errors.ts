import { unwrapResolverError } from '@apollo/server/errors';
import {
  BREAK,
  coerceInputValue,
  getNamedType,
  GraphQLError,
  isEnumType,
  isInputObjectType,
  isLeafType,
  isListType,
  isNonNullType,
  Kind,
  Lexer,
  Source,
  TokenKind,
  TypeInfo,
  visit,
  visitWithTypeInfo,
  type ASTNode,
  type DocumentNode,
  type GraphQLFormattedError,
  type GraphQLInputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  typeFromAST,
} from 'graphql';
import { AppError, asAppError, type ErrorCode } from '../errors.js';
import { DateTime } from './scalars.js';

/**
 * Errors on GraphQL's wire (docs/graphql.md): every error carries `extensions.code` and the request's id;
 * a service error keeps its message and names its field (`field`, `details`); GraphQL's own
 * errors (syntax, validation, variables) never repeat a value the client sent (it may be a token
 * or a password), which this module ensures from the structure of the error (its node, its path,
 * the type expected there), never by reading graphql-js's message texts.
 */

/** docs/graphql.md's `extensions.code` for each service error code. */
const CODE_OF: Record<ErrorCode, string> = {
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
    extensions: { code: CODE_OF[error.code], ...(error.details ? { field: error.details[0].field, details: error.details } : {}) },
  });
}

/**
 * Runs a service call whose input came from one argument: the fields its errors name are paths in
 * that argument (`input.lastName`: REST's body has them at the top, so the services say `lastName`).
 */
export async function inArgument<T>(name: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw err instanceof AppError ? err.under(name) : err;
  }
}

/**
 * The body of a /graphql answer that fails before GraphQL runs (no token, a body that is not JSON,
 * a wrong method, …): GraphQL's own shape, so that a GraphQL client reads it like any other error.
 * A request that is not JSON (415, 400) gets Apollo's BAD_REQUEST, as Apollo would answer it.
 */
export function httpErrorBody(error: AppError, requestId: string) {
  const code = error.code === 'BAD_REQUEST' && !error.details ? 'BAD_REQUEST' : CODE_OF[error.code];
  return { errors: [{ message: error.message, extensions: { code, requestId, ...(error.details ? { details: error.details } : {}) } }] };
}

// ------------------------------------------------------------------------------------------
// Values that do not fit their type, said from the type

/** What a value of a leaf type must be, in words (the value itself is never repeated). */
function expected(type: GraphQLInputType): string {
  const named = getNamedType(type);
  if (isEnumType(named)) return `one of the ${named.name} values`;
  switch (named.name) {
    case 'Int':
      return 'a 32-bit integer (Int)';
    case 'Float':
      return 'a number (Float)';
    case 'String':
      return 'a string';
    case 'Boolean':
      return 'true or false';
    case 'ID':
      return 'an ID (a string or an integer)';
    case 'SafeInt':
      return 'a safe integer (SafeInt)';
    case 'JSONObject':
      return 'a JSON object';
    default:
      return `a ${named.name}`;
  }
}

/** The type at a path inside a value of `type` (`["status"]`, `["roleIDs", 3]`). */
function typeAt(type: GraphQLInputType, path: readonly (string | number)[]): GraphQLInputType | undefined {
  let at: GraphQLInputType | undefined = type;
  for (const key of path) {
    if (!at) return undefined;
    if (isNonNullType(at)) at = at.ofType;
    if (typeof key === 'number' && isListType(at)) at = at.ofType;
    else if (typeof key === 'string' && isInputObjectType(at)) at = at.getFields()[key]?.type;
    else return undefined;
  }
  return at;
}

/**
 * Why a value at `path` inside a value of `type` does not fit, from what is expected there: a
 * missing or null required value, a field the input type does not have, a required field not
 * given, or a leaf value of the wrong kind. Only our own scalars' reasons are quoted (they never
 * repeat the value); the others are described from their type.
 */
export function whyNotFitting(type: GraphQLInputType, path: readonly (string | number)[], value: unknown, error: GraphQLError): string {
  const at = typeAt(type, path);
  if (!at) return 'is not of the expected type';
  if (value === null || value === undefined) return isNonNullType(at) ? 'must not be null' : 'is not of the expected type';
  const inner = isNonNullType(at) ? at.ofType : at;
  if (isInputObjectType(inner)) {
    if (typeof value !== 'object' || Array.isArray(value)) return `must be an object of type ${inner.name}`;
    const fields = inner.getFields();
    const unknown = Object.keys(value).filter((key) => !Object.hasOwn(fields, key));
    if (unknown.length) return `has a field that ${inner.name} does not define: "${unknown[0].slice(0, 64)}" is not defined by type "${inner.name}"`;
    const missing = Object.values(fields).filter(
      (f) => isNonNullType(f.type) && f.defaultValue === undefined && (value as Record<string, unknown>)[f.name] === undefined,
    );
    if (missing.length) return `lacks the required field "${missing[0].name}"`;
    return `is not a valid ${inner.name}`;
  }
  if (isListType(inner)) return 'must be a list';
  // Our scalars' own reasons: they say what is wrong without the value.
  if (getNamedType(inner).name === DateTime.name) return (error.originalError ?? error).message;
  return isLeafType(getNamedType(inner)) ? `must be ${expected(inner)}` : 'is not of the expected type';
}

/** `$input.status`, `$ids[2]`: a path inside a variable. */
export const variablePath = (name: string, path: readonly (string | number)[]) =>
  `$${name}${path.map((key) => (typeof key === 'number' ? `[${key}]` : `.${key}`)).join('')}`;

// ------------------------------------------------------------------------------------------
// Syntax and validation errors

/** The kinds of tokens that are values a client wrote (a string, a number): never repeated in a message. */
const VALUE_TOKENS: ReadonlySet<string> = new Set([TokenKind.STRING, TokenKind.BLOCK_STRING, TokenKind.INT, TokenKind.FLOAT]);

/**
 * A syntax error's message without the value it stopped at: when the token at the error's position
 * is a string or a number, the message says where and what kind of token, not what it holds.
 */
function syntaxMessage(formatted: GraphQLFormattedError, source: string | undefined, position: number | undefined): string {
  if (source === undefined || position === undefined) return formatted.message;
  const lexer = new Lexer(new Source(source));
  try {
    for (let token = lexer.advance(); token.kind !== TokenKind.EOF; token = lexer.advance()) {
      if (token.start === position) {
        if (!VALUE_TOKENS.has(token.kind)) return formatted.message;
        return `Syntax Error: Unexpected ${token.kind === TokenKind.BLOCK_STRING ? 'BlockString' : token.kind === TokenKind.STRING ? 'String' : token.kind} at line ${token.line}, column ${token.column}.`;
      }
      if (token.start > position) break;
    }
  } catch {
    // The lexer stopped at the very error: the message is about a character, not a value.
  }
  return formatted.message;
}

/** A value node of an argument: where it sits (`input.status`, `orderBy[0].lastName`) and the types around it. */
interface ValueContext {
  /** Where it sits: a path in an argument (`input.status`), or a variable's default value (`$a`). */
  field: string;
  /** In a variable's default value: the document's mistake, not an argument's input. */
  inDefault: boolean;
  /** The type expected for the node (none for a field the input object does not define). */
  type: GraphQLInputType | null;
  /** The input object type around it, for an object field. */
  parent: GraphQLInputType | null;
}

function valueContext(schema: GraphQLSchema, document: DocumentNode, target: ASTNode): ValueContext | null {
  let keys: readonly (string | number)[] | undefined;
  let type: GraphQLInputType | null = null;
  let parent: GraphQLInputType | null = null;
  const typeInfo = new TypeInfo(schema);
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      enter(node, _key, _parent, path) {
        if (node !== target) return undefined;
        keys = [...path];
        type = typeInfo.getInputType() ?? null;
        parent = typeInfo.getParentInputType() ?? null;
        return BREAK;
      },
    }),
  );
  if (!keys) return null;
  // The path from the document's root to the node: arguments, object fields and list items on the way.
  let name: string | null = null;
  let inDefault = false;
  let node: unknown = document;
  let owner: string | undefined; // the kind of the last node passed: a ListValue's items get [i]
  for (const key of keys) {
    node = (node as Record<string | number, unknown>)[key];
    if (Array.isArray(node)) continue;
    const step = node as ASTNode;
    if (typeof key === 'number' && owner === Kind.LIST && name !== null) name += `[${key}]`;
    if (step.kind === Kind.ARGUMENT) name = step.name.value;
    else if (step.kind === Kind.VARIABLE_DEFINITION) {
      name = `$${step.variable.name.value}`;
      inDefault = true;
    } else if (step.kind === Kind.OBJECT_FIELD && name !== null) name += `.${step.name.value}`;
    owner = step.kind;
  }
  return name === null ? null : { field: name, type, parent, inDefault };
}

/**
 * What is wrong with a value of an argument, said from its node and the types around it (never
 * the value): a field its input type does not define, a required field left out, or a literal of
 * the wrong type. Null for anything else (a variable in the wrong place: graphql-js's words, which
 * name only variables and types, stand).
 */
function valueProblem(node: ASTNode, context: ValueContext): string | null {
  if (node.kind === Kind.OBJECT_FIELD && !context.type) {
    return `Field "${node.name.value}" is not defined by type "${String(getNamedType(context.parent!))}".`;
  }
  if (node.kind === Kind.OBJECT && context.type) {
    const objectType = getNamedType(context.type);
    if (isInputObjectType(objectType)) {
      const given = new Set(node.fields.map((f) => f.name.value));
      const missing = Object.values(objectType.getFields()).find((f) => isNonNullType(f.type) && f.defaultValue === undefined && !given.has(f.name));
      if (missing) return `Field "${objectType.name}.${missing.name}" of required type "${String(missing.type)}" was not provided.`;
    }
  }
  if (isLiteral(node)) return context.type ? literalReason(context.type, node) : 'The value is not of the expected type.';
  return null;
}

/** The largest magnitude a SafeInt holds, and a 32-bit Int. */
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const INT32 = 2n ** 31n;

/**
 * Why a literal does not fit a type, in the words graphql-js and graphql-scalars use but without
 * the literal: known from the type expected and the literal's kind (our own DateTime says why
 * itself, and never repeats a value). Written out here because graphql-js has no public way to say
 * why a literal does not fit without printing it: its scalars' parseLiteral errors, which
 * ValuesOfCorrectTypeRule reports as they are (GraphQLError.originalError included), end with the
 * literal itself, and cutting that off would rely on their message texts.
 */
function literalReason(type: GraphQLInputType, node: ASTNode): string {
  if (node.kind === Kind.NULL) return `Expected value of type "${String(type)}", found null.`;
  const named = getNamedType(type);
  const integer = node.kind === Kind.INT ? BigInt(node.value) : null;
  if (isEnumType(named)) return `the value is not one of the ${named.name} values.`;
  switch (named.name) {
    case 'String':
      return 'String cannot represent a non string value.';
    case 'ID':
      return 'ID cannot represent a non-string and non-integer value.';
    case 'Boolean':
      return 'Boolean cannot represent a non boolean value.';
    case 'Float':
      return 'Float cannot represent non numeric value.';
    case 'Int':
      return integer !== null && (integer >= INT32 || integer < -INT32)
        ? 'Int cannot represent non 32-bit signed integer value.'
        : 'Int cannot represent non-integer value.';
    case 'SafeInt':
      return integer !== null && (integer > SAFE || integer < -SAFE)
        ? 'SafeInt cannot represent unsafe integer value.'
        : 'SafeInt cannot represent non-integer value.';
    case 'JSONObject':
      return 'JSONObject cannot represent non-object value.';
    default:
      break;
  }
  if (named.name === DateTime.name && node.kind !== Kind.VARIABLE) {
    try {
      DateTime.parseLiteral(node as never, undefined);
    } catch (err) {
      return (err as Error).message;
    }
  }
  return `Expected value of type "${String(type)}".`;
}

/** Literal values of a document (not variables). */
const isLiteral = (node: ASTNode) =>
  node.kind === Kind.INT ||
  node.kind === Kind.FLOAT ||
  node.kind === Kind.STRING ||
  node.kind === Kind.BOOLEAN ||
  node.kind === Kind.NULL ||
  node.kind === Kind.ENUM ||
  node.kind === Kind.LIST ||
  node.kind === Kind.OBJECT;

const naming = (message: string, field: string) => ({ field, details: [{ field, message }] });

/**
 * Notes on each validation error about a literal value where it is and what is wrong with it, for
 * formatError to say in place of graphql-js's message (which quotes the value).
 */
export function noteValueProblems(schema: GraphQLSchema, document: DocumentNode, errors: readonly GraphQLError[]): void {
  for (const error of errors) {
    const node = error.nodes?.[0];
    if (!node || node.kind === Kind.FIELD || node.kind === Kind.ARGUMENT) continue;
    const context = valueContext(schema, document, node);
    if (context) Object.assign(error.extensions, { valueField: context.field, valueProblem: valueProblem(node, context), inDefault: context.inDefault });
  }
}

/**
 * What an HTTP status an error asks for (Apollo's convention: `extensions.http.status`) means as a
 * code: Apollo's own BAD_REQUEST for a wrong method (a mutation over GET: 405) or media type (a GET
 * with a Content-Type other than JSON: 415) gets the code that status has everywhere else.
 */
const CODE_OF_STATUS: Readonly<Record<number, string>> = { 405: 'METHOD_NOT_ALLOWED', 415: 'UNSUPPORTED_MEDIA_TYPE' };

/**
 * Apollo's formatError: service errors keep their message and code; GraphQL's own errors pass
 * through, without echoed values (see above), naming the argument or variable they are about;
 * anything else is an INTERNAL_SERVER_ERROR that says nothing of its cause (the gate logs it).
 */
export function formatError(formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
  const known = asAppError(unwrapResolverError(error));
  if (known) {
    const { message, extensions } = toGraphQLError(known);
    return { message, locations: formatted.locations, path: formatted.path, extensions };
  }
  const { stacktrace: _stack, ...extensions } = formatted.extensions ?? {};
  const code = extensions.code;
  if (code === 'GRAPHQL_PARSE_FAILED' && error instanceof GraphQLError) {
    return { ...formatted, message: syntaxMessage(formatted, error.source?.body, error.positions?.[0]), extensions };
  }
  // A value that does not fit (the gate found where, and what is wrong): in an argument, the
  // caller's input; in a variable's default value, the document's mistake.
  if (typeof extensions.valueField === 'string') {
    const { valueField, valueProblem: problem, inDefault, ...rest } = extensions;
    const message = typeof problem === 'string' ? problem : formatted.message;
    if (inDefault) return { ...formatted, message, extensions: rest };
    return { ...formatted, message, extensions: { ...rest, code: 'BAD_USER_INPUT', ...naming(message, valueField) } };
  }
  const status = httpStatusOf(error);
  if (code === 'BAD_REQUEST' && status !== undefined && CODE_OF_STATUS[status])
    return { ...formatted, extensions: { ...extensions, code: CODE_OF_STATUS[status] } };
  if (code && code !== 'INTERNAL_SERVER_ERROR') return { ...formatted, extensions };
  // An error without a code that asks for a 4xx (Apollo's own "Unsupported persisted query
  // version", "provided sha does not match query"): the client's mistake, said as it is.
  if (status !== undefined && status < 500) return { ...formatted, extensions: { ...extensions, code: 'BAD_REQUEST' } };
  return { message: 'an internal error occurred', locations: formatted.locations, path: formatted.path, extensions: { code: 'INTERNAL_SERVER_ERROR' } };
}

/** The HTTP status an error asks for (Apollo's convention: `extensions.http.status`), if any. */
function httpStatusOf(error: unknown): number | undefined {
  const status = error instanceof GraphQLError ? (error.extensions?.http as { status?: unknown } | undefined)?.status : undefined;
  return typeof status === 'number' ? status : undefined;
}

/** Whether formatError masks an error as INTERNAL_SERVER_ERROR: neither a service error, nor one with a code, nor a client's (4xx). */
export function isInternal(error: GraphQLError): boolean {
  if (asAppError(unwrapResolverError(error)) || (error.extensions?.code ?? 'INTERNAL_SERVER_ERROR') !== 'INTERNAL_SERVER_ERROR') return false;
  const status = httpStatusOf(error);
  return status === undefined || status >= 500;
}

/**
 * Errors as every transport's wire carries them, for the answers the gate gives itself (HTTP
 * refusals, WebSocket and SSE messages): formatted as Apollo formats its own (`code` always set,
 * Apollo's `extensions.http` taken out, then formatError), with the request's id. An error that
 * cannot be formatted is said as an internal one, as Apollo does, and the others as they are.
 */
export function formatErrors(errors: readonly GraphQLError[], requestId: string): GraphQLFormattedError[] {
  return errors.map((error) => {
    try {
      const { http: _http, ...rest } = error.extensions ?? {};
      const formatted = formatError({ ...error.toJSON(), extensions: { ...rest, code: rest.code ?? 'INTERNAL_SERVER_ERROR' } }, error);
      return { ...formatted, extensions: { ...formatted.extensions, requestId } };
    } catch {
      return { message: 'an internal error occurred', ...(error.path ? { path: error.path } : {}), extensions: { code: 'INTERNAL_SERVER_ERROR', requestId } };
    }
  });
}

// ------------------------------------------------------------------------------------------
// Variables

/**
 * The variables' problems, one error each, naming the variable and the path inside it (`$input.status`),
 * said from the type expected there (graphql-js's own coercion errors quote the value, which may
 * be a token or a password). Values given are left as sent: the executor coerces them.
 */
export function variableErrors(schema: GraphQLSchema, operation: OperationDefinitionNode, values: Record<string, unknown>): GraphQLError[] {
  const errors: GraphQLError[] = [];
  for (const definition of operation.variableDefinitions ?? []) {
    const name = definition.variable.name.value;
    const type = typeFromAST(schema, definition.type) as GraphQLInputType | undefined;
    if (!type) continue; // validation has said so
    const fail = (field: string, message: string) =>
      errors.push(new GraphQLError(message, { nodes: definition, extensions: { code: 'BAD_USER_INPUT', field, details: [{ field, message }] } }));
    if (!Object.hasOwn(values, name) || values[name] === undefined) {
      if (isNonNullType(type) && !definition.defaultValue) fail(`$${name}`, `Variable "$${name}" of required type "${String(type)}" was not provided.`);
      continue;
    }
    if (values[name] === null && isNonNullType(type)) {
      fail(`$${name}`, `Variable "$${name}" of non-null type "${String(type)}" must not be null.`);
      continue;
    }
    const seen = new Set<string>();
    coerceInputValue(values[name], type, (path, invalid, error) => {
      const field = variablePath(name, path);
      const message = `Variable "$${name}" has an invalid value${path.length ? ` at "${field}"` : ''}: it ${whyNotFitting(type, path, invalid, error)}.`;
      if (!seen.has(message)) fail(field, message);
      seen.add(message);
    });
  }
  return errors;
}
