import { HeaderMap, type ApolloServerPlugin, type GraphQLRequest, type GraphQLResponse } from '@apollo/server';
import type { GatewayExecutor, GatewayInterface } from '@apollo/server-gateway-interface';
import {
  execute,
  locatedError,
  getNamedType,
  isInputObjectType,
  GraphQLError,
  Kind,
  printSchema,
  typeFromAST,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLInputType,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type Source,
} from 'graphql';
import { mapSchema } from '@graphql-tools/utils';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { LRUCache } from 'lru-cache';
import type { Sql } from '../db/sql.js';
import { AppError, asAppError } from '../errors.js';
import { STATUS_OF } from '../http/errors.js';
import type { Logger } from '../observability/log.js';
import { Loaders, type GraphQLContext } from './context.js';
import { formatErrors, toGraphQLError } from './errors.js';
import { mayOmitInLiteral } from './selection.js';
import type { Verdict } from './gate.js';

/**
 * How GraphQL operations run inside Apollo Server. Apollo still parses, runs the plugins and
 * answers; the executor runs the operation, plugged in through one of Apollo's public hooks:
 *
 * - a plugin's `responseForOperation` (executionPlugin, the default): Apollo hands the operation
 *   over before it would execute it, and answers with what the plugin returns;
 * - the gateway interface (executorGateway, for a subgraph): Apollo's inline traces need its own
 *   execution listeners, which only run when Apollo executes, so a subgraph keeps this route.
 *   Its price: for every request Apollo makes a context object with accessors
 *   (`makeGatewayGraphQLRequestContext`), which V8 places in the old generation; it holds the whole
 *   request until the next full collection, so each request's objects were promoted and a full
 *   collection ran every half second (GraphQL by id: ~0.7 MB promoted per young collection
 *   against 5 KB through the plugin, docs/benchmarks.md).
 *
 * Either way:
 *
 * - what runs is what the gate (src/graphql/gate.ts) admitted: its document, its operation, its
 *   checked variables;
 * - compiled once per document and operation with graphql-jit from its second run on (its own
 *   measurements here: a page of 50 users with their links took 0.87 ms to execute with graphql-js
 *   and 0.06 ms compiled); a document jit cannot compile, or would coerce differently (a variable
 *   inside an input literal that may be left out: mayOmitInLiteral), runs on graphql-js;
 * - a mutation with several root fields in one transaction (docs/rest.md#conventions: a request that fails changes
 *   nothing): committed when every root field succeeded, else rolled back with `data` null.
 */

/**
 * Compiled operations. A compiled operation is code, and weighs tens to hundreds of times its text
 * (a 2 KB query of 40 aliases: ~300 KB), so compiling every text the gate keeps
 * would grow memory with every new text a client invents. Instead an operation is compiled on its
 * document's second run (a one-off text runs once on graphql-js, which costs it less than
 * compiling; the gate keeps a document from its text's second request on, so a text runs
 * compiled from its third: src/graphql/documents.ts), and at
 * most COMPILED_MAX compiled operations are kept, the least recently run dropped first: real
 * clients send a few hundred operations at most, and every one of them keeps its compiled form.
 */
const COMPILED_MAX = 500;
const compiled = new LRUCache<DocumentNode, Map<string, CompiledQuery | null>>({ max: COMPILED_MAX });
/** Documents run once (their operations compile on the next run). */
const ranOnce = new WeakSet<DocumentNode>();

/**
 * Whether an input type can contain itself (a filter's `and: [UserFilter]`). graphql-jit writes the
 * coercion of a variable's value out in full, field by field, which for such a type never ends:
 * an operation with a variable of one runs on graphql-js.
 */
const recursive = new WeakMap<GraphQLNamedType, boolean>();
function isRecursive(type: GraphQLInputType): boolean {
  const start = getNamedType(type);
  let known = recursive.get(start);
  if (known !== undefined) return known;
  const seen = new Set<GraphQLNamedType>();
  const reaches = (at: GraphQLNamedType): boolean => {
    if (!isInputObjectType(at) || seen.has(at)) return false;
    seen.add(at);
    return Object.values(at.getFields()).some((field) => getNamedType(field.type) === start || reaches(getNamedType(field.type)));
  };
  known = reaches(start);
  recursive.set(start, known);
  return known;
}

function compiledFor(schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode, operationName: string | null): CompiledQuery | null {
  let byName = compiled.get(document);
  if (!byName) {
    if (!ranOnce.has(document)) {
      ranOnce.add(document);
      return null;
    }
    compiled.set(document, (byName = new Map()));
  }
  const key = operationName ?? '';
  let query = byName.get(key);
  if (query === undefined) {
    const jitable =
      (operation.variableDefinitions ?? []).every((d) => {
        const type = typeFromAST(schema, d.type) as GraphQLInputType | undefined;
        return type !== undefined && !isRecursive(type);
      }) && !mayOmitInLiteral(document, operation);
    const result = jitable ? compileQuery(schema, document, operationName ?? undefined) : null;
    query = result && isCompiledQuery(result) ? result : null;
    byName.set(key, query);
  }
  return query;
}

/** A mutation's result to roll back: its transaction ends, the result is answered with `data` null. */
class RolledBack extends Error {
  constructor(readonly result: ExecutionResult) {
    super('rolled back');
  }
}

/** Whether the root fields of an operation are several (a mutation of one field is atomic on its own). */
export const severalRootFields = (operation: OperationDefinitionNode) => {
  const [first, ...more] = operation.selectionSet.selections;
  return more.length > 0 || first?.kind !== Kind.FIELD;
};

export interface ExecutorDeps {
  schema: GraphQLSchema;
  sql: Sql;
  log: Logger;
  /**
   * The gate's verdict on a request Apollo runs without the gate's admission in its context (a
   * persisted query registered between the gate's look-up and Apollo's): such a request is checked
   * here, as any other.
   */
  admit(request: OperationInput): Verdict;
  /**
   * Whether Apollo's inline trace plugin may trace requests (a subgraph: src/graphql/federation.ts).
   * Apollo traces a request by wrapping every field's resolver of the schema it holds, in place
   * and for good, the first time a request is traced; graphql-jit compiles the resolvers it finds
   * into each operation. So Apollo is given a copy of the schema: a traced request (Apollo's
   * `metrics.captureTraces`, which its plugin sets only when a router sent
   * `apollo-federation-include-trace: ftv1`) runs on graphql-js over that copy, where the plugin
   * sees every field; every other request runs compiled over the schema no wrapper touched.
   */
  traces?: boolean;
}

/** Offsets of the starts of a source's lines (GraphQL counts lines from 1, columns from 1). */
function positionOf(source: Source, line: number, column: number): number {
  let offset = 0;
  for (let at = 1; at < line; at++) {
    const next = source.body.indexOf('\n', offset);
    if (next === -1) break;
    offset = next + 1;
  }
  return offset + column - 1;
}

/**
 * graphql-jit's errors as graphql-js's own: jit builds its errors with locations but without
 * `extensions` when the thrown error has none, which Apollo's error formatting reads.
 */
function asGraphQLErrors(errors: readonly GraphQLError[] | undefined, source: Source | undefined): GraphQLError[] | undefined {
  return errors?.map((error) =>
    error.extensions
      ? error
      : new GraphQLError(error.message, {
          path: error.path,
          originalError: error.originalError ?? undefined,
          ...(source && error.locations?.length ? { source, positions: error.locations.map((l) => positionOf(source, l.line, l.column)) } : {}),
        }),
  );
}

/**
 * The request's context with its statements run on `sql` (and loaders of their own): a copy that
 * keeps every property the context has, those Apollo defined on it for its plugins included.
 */
function runningOn(context: GraphQLContext, sql: Sql): GraphQLContext {
  const copy = Object.create(Object.getPrototypeOf(context), Object.getOwnPropertyDescriptors(context)) as GraphQLContext;
  return Object.assign(copy, { sql, loaders: new Loaders(context.services, context.caller, sql) });
}

/** What running an operation needs of a request, as Apollo's plugin hook or its gateway interface gives it. */
export interface OperationInput {
  context: GraphQLContext;
  /** The request as Apollo has it: what the gate checks when the context holds no verdict. */
  request: Pick<GraphQLRequest, 'query' | 'operationName' | 'variables' | 'extensions'> & { http?: { method: string } };
  /** The document's text. */
  source: string | undefined;
  /** Apollo's schema when Apollo traces the request (its resolvers wrapped): the operation runs on graphql-js over it. */
  traced: GraphQLSchema | null;
}

/** Runs an operation: what the gate admitted, compiled or not, on the read path or in one transaction (above). */
export function operationRunner(deps: ExecutorDeps): (input: OperationInput) => Promise<ExecutionResult> {
  const { schema, sql, log } = deps;
  const run = async (
    document: DocumentNode,
    operation: OperationDefinitionNode,
    operationName: string | null,
    context: GraphQLContext,
    variables: Record<string, unknown>,
    traced: GraphQLSchema | null,
  ): Promise<ExecutionResult> => {
    if (traced) return execute({ schema: traced, document, operationName, contextValue: context, variableValues: variables });
    const query = compiledFor(schema, document, operation, operationName);
    if (!query) return execute({ schema, document, operationName, contextValue: context, variableValues: variables });
    const result = await query.query(undefined, context, variables);
    return result.errors ? { ...result, errors: asGraphQLErrors(result.errors, document.loc?.source) } : result;
  };
  return async (input) => {
    const { context, traced } = input;
    const verdict = context.admitted ?? deps.admit(input);
    // Refused: answered with a 400 (no data).
    if (verdict.kind !== 'admitted') return { errors: [...verdict.errors] };
    const { document, operation, operationName, variables } = verdict;
    // A query reads on the read path (a replica that has replayed everything committed before the
    // request, else the primary); a mutation, and everything under it, on the primary.
    if (operation.operation === 'query' && context.reads !== context.sql) {
      return run(document, operation, operationName, runningOn(context, context.reads), variables, traced);
    }
    if (operation.operation !== 'mutation' || !severalRootFields(operation)) return run(document, operation, operationName, context, variables, traced);
    // The root fields of one mutation succeed or fail together, as in Hasura: one transaction,
    // committed before the answer only when every root field succeeded. Errors in nested fields of
    // a result (a FORBIDDEN `tokens` of a created user) do not undo it.
    try {
      return await sql.transaction(async (tx) => {
        const result = await run(document, operation, operationName, runningOn(context, tx), variables, traced);
        const failed = !result.data || (result.errors ?? []).some((e) => (e.path?.length ?? 0) <= 1);
        if (failed) throw new RolledBack(result);
        return result;
      });
    } catch (err) {
      if (err instanceof RolledBack) return { ...err.result, data: null };
      // The transaction could not begin or commit (the connection was lost, say): nothing was written.
      const known = asAppError(err) ?? new AppError('INTERNAL', 'an internal error occurred');
      if (!asAppError(err)) log.error('graphql commit failed', { requestId: context.requestId, error: (err as Error)?.name });
      if (known.info.overload && context.http) context.http.overloaded = true;
      const error = toGraphQLError(known);
      return { data: null, errors: [new GraphQLError(error.message, { extensions: { ...error.extensions, http: { status: STATUS_OF[known.code] } } })] };
    }
  };
}

/** The executor behind Apollo's gateway interface. */
function gatewayExecutor(deps: ExecutorDeps): GatewayExecutor {
  const run = operationRunner(deps);
  return (request) =>
    run({
      context: request.context as GraphQLContext,
      request: request.request,
      source: request.source,
      traced: request.metrics.captureTraces === true ? request.schema : null,
    });
}

/** Apollo's gateway interface over a fixed schema and the executor above (a subgraph's route: see the top). */
export function executorGateway(deps: ExecutorDeps): GatewayInterface {
  // What Apollo holds (validates against, and wraps when it traces): with traces, a copy (see `traces`).
  const apiSchema = deps.traces ? mapSchema(deps.schema, {}) : deps.schema;
  return {
    async load() {
      return { executor: gatewayExecutor(deps) };
    },
    onSchemaLoadOrUpdate(callback) {
      callback({ apiSchema, coreSupergraphSdl: printSchema(apiSchema) });
      return () => {};
    },
    async stop() {},
  };
}

/**
 * The executor as an Apollo plugin (the default route, see the top): `responseForOperation` runs
 * the operation and returns Apollo its answer. Apollo answers a plugin's response as it is, so
 * this does what Apollo does after executing (responseOf): the errors are reported (`onErrors`:
 * the gate logs the internal ones), formatted as every answer's errors are (src/graphql/errors.ts:
 * a code, INTERNAL_SERVER_ERROR when it has none, the request's id, `extensions.http` taken out),
 * and the HTTP status an error asks for is the answer's; a result without data (request errors:
 * the gate's refusal, a variable that does not coerce) is a 400, as Apollo's
 * `status400ForVariableCoercionErrors` has it. An operation that throws is answered as Apollo
 * answers one: a 500 with the error masked, and reported.
 */
export function executionPlugin(
  deps: ExecutorDeps & { onErrors(errors: readonly GraphQLError[], requestId: string): void },
): ApolloServerPlugin<GraphQLContext> {
  const run = operationRunner(deps);
  return {
    requestDidStart: async () => ({
      responseForOperation: async ({ contextValue, request, source }) => {
        const { requestId } = contextValue;
        try {
          return responseOf(await run({ context: contextValue, request, source, traced: null }), requestId, deps.onErrors);
        } catch (err) {
          const response = responseOf({ errors: [locatedError(err, undefined)] }, requestId, deps.onErrors);
          response.http.status = 500;
          return response;
        }
      },
    }),
  };
}

/** What an error asks of the HTTP answer (Apollo's convention: `extensions.http`, a status and a Map of headers; anything else is ignored, as Apollo does). */
function httpAsked(error: GraphQLError): { status?: number; headers?: Map<string, string> } | null {
  const asked = error.extensions?.http as { status?: unknown; headers?: unknown } | undefined;
  if (typeof asked !== 'object' || asked === null) return null;
  const { status, headers } = asked;
  if ((status !== undefined && typeof status !== 'number') || (headers !== undefined && !(headers instanceof Map))) return null;
  return { status, headers: headers as Map<string, string> | undefined };
}

/** Apollo's answer to an executed result, as executionPlugin returns it (above). */
export function responseOf(
  result: ExecutionResult,
  requestId: string,
  onErrors: (errors: readonly GraphQLError[], requestId: string) => void,
): GraphQLResponse {
  const http = { status: undefined as number | undefined, headers: new HeaderMap() };
  const { errors } = result;
  if (!errors?.length) return { http, body: { kind: 'single', singleResult: result } };
  onErrors(errors, requestId);
  for (const error of errors) {
    const asked = httpAsked(error);
    if (asked?.status !== undefined) http.status = asked.status;
    for (const [name, value] of asked?.headers ?? []) http.headers.set(name, value);
  }
  if (http.status === undefined && result.data === undefined) http.status = 400;
  return { http, body: { kind: 'single', singleResult: { ...result, errors: formatErrors(errors, requestId) } } };
}
