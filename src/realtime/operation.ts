import {
  createSourceEventStream,
  execute,
  getOperationAST,
  GraphQLError,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLFormattedError,
  type GraphQLSchema,
} from 'graphql';
import { Loaders, type GraphQLContext } from '../graphql/context.js';
import { formatError, noteValueProblems } from '../graphql/errors.js';
import { costProblem, documentNesting, GRAPHQL_LIMITS, sizeLimitRule, valueNesting } from '../graphql/limits.js';
import type { Caller } from '../auth/caller.js';
import type { Database } from '../db/database.js';
import type { ServiceContainer as Services } from '../graphql/context.js';
import type { ChangeEvent } from './events.js';
import type { RealtimeContext } from './realtime.graphql.js';

/**
 * What both transports (src/realtime/ws.ts, sse.ts) do with a subscription request: the checks
 * Apollo's pipeline makes for HTTP (parse with the token limit, the nesting limit, validation with
 * the size limits, the cost limit, errors that never quote a value) made here, since Apollo does
 * not see this traffic; and execution with fresh DataLoaders for each event.
 */

/** The context a subscription runs in, on either transport (each event gets fresh loaders: see subscribeFresh). */
export function subscriptionContext(
  deps: { db: Database; services: Services },
  caller: Caller,
  requestId: string,
  realtime: RealtimeContext,
): GraphQLContext & { realtime: RealtimeContext } {
  const { db, services } = deps;
  // Subscriptions read on the primary: an event is read right after its commit, which a replica may not have replayed.
  return { caller, requestId, services, sql: db.sql, reads: db.sql, loaders: new Loaders(services, caller, db.sql), realtime };
}

/** A subscribe message's payload (graphql-ws) or a request body (graphql-sse). */
export interface SubscriptionParams {
  query?: unknown;
  variables?: unknown;
  operationName?: unknown;
}

const fail = (message: string, code: string) => [new GraphQLError(message, { extensions: { code } })];

/**
 * The execution arguments of a subscription request, or the errors that refuse it (queries and
 * mutations go over HTTP, where the read cache, the transactions of mutations and the HTTP
 * limits apply).
 */
export function prepareSubscription(schema: GraphQLSchema, params: SubscriptionParams, contextValue: GraphQLContext): ExecutionArgs | GraphQLError[] {
  const { query, operationName } = params;
  const variables = params.variables ?? {};
  if (typeof query !== 'string') return fail('query must be a string holding the subscription', 'BAD_REQUEST');
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return fail('operationName must be a string', 'BAD_REQUEST');
  if (typeof variables !== 'object' || variables === null || Array.isArray(variables)) return fail('variables must be an object', 'BAD_REQUEST');
  const { maxNesting, maxTokens } = GRAPHQL_LIMITS;
  const depth = documentNesting(query);
  if (depth > maxNesting)
    return fail(`the document nests braces, brackets or parentheses ${depth} levels deep; at most ${maxNesting} are allowed`, 'GRAPHQL_PARSE_FAILED');
  if (valueNesting(variables, maxNesting + 1) > maxNesting + 1) return fail(`the variables are nested more than ${maxNesting} levels deep`, 'BAD_USER_INPUT');
  let document: DocumentNode;
  try {
    document = parse(query, { maxTokens });
  } catch (err) {
    if (!(err instanceof GraphQLError)) throw err;
    return [new GraphQLError(err.message, { source: err.source, positions: err.positions, extensions: { code: 'GRAPHQL_PARSE_FAILED' } })];
  }
  const invalid = validate(schema, document, [...specifiedRules, sizeLimitRule]);
  if (invalid.length) {
    for (const error of invalid) error.extensions.code ??= 'GRAPHQL_VALIDATION_FAILED';
    noteValueProblems(schema, document, invalid);
    return [...invalid];
  }
  const name = typeof operationName === 'string' ? operationName : null;
  const operation = getOperationAST(document, name);
  if (!operation) {
    const count = document.definitions.filter((d) => d.kind === 'OperationDefinition').length;
    return fail(
      name !== null ? `the document has no operation named "${name}"` : `the document has ${count} operations: name the one to run in operationName`,
      'OPERATION_RESOLUTION_FAILURE',
    );
  }
  if (operation.operation !== 'subscription')
    return fail(`send a ${operation.operation} over HTTP (POST /graphql); this connection runs subscriptions`, 'BAD_REQUEST');
  const variableValues = variables as Record<string, unknown>;
  const tooCostly = costProblem(schema, document, variableValues, name);
  if (tooCostly) return [tooCostly];
  return { schema, document, variableValues, operationName: name, contextValue };
}

/** Errors as the wire carries them: formatted as over HTTP, with the connection's request id. */
export function formatErrors(errors: readonly GraphQLError[], requestId: string): GraphQLFormattedError[] {
  return errors.map((error) => {
    const formatted = formatError(error.toJSON(), error);
    return { ...formatted, extensions: { ...formatted.extensions, requestId } };
  });
}

/** A result with its errors formatted (a result without errors is passed as it is). */
export function formatResult(result: ExecutionResult, requestId: string): ExecutionResult | null {
  if (!result.errors?.length) return null;
  return { ...result, errors: formatErrors(result.errors, requestId) as unknown as GraphQLError[] };
}

/**
 * A subscription's results: each event executed as graphql-js's subscribe would, but with a context
 * of its own (new DataLoaders: the connection lives on, and a loader caches what it loaded).
 * `end(result)` makes the next result the given one and the last (SSE ends a stream so).
 */
export class EventResults implements AsyncIterableIterator<ExecutionResult> {
  private final: ExecutionResult | null = null;
  private ended = false;
  private wake: (() => void) | null = null;

  constructor(
    private readonly events: AsyncIterator<ChangeEvent>,
    private readonly run: (event: ChangeEvent) => Promise<ExecutionResult> | ExecutionResult,
    /** Resolves when the transport can take another result (events wait in their bounded queue until then). */
    private readonly ready?: () => Promise<void>,
  ) {}

  async next(): Promise<IteratorResult<ExecutionResult>> {
    if (this.ended) return this.finish();
    // An end() while waiting (for the transport, or for the next event) wins over both.
    const ended = new Promise<'ended'>((resolve) => (this.wake = () => resolve('ended')));
    if (this.ready) await Promise.race([this.ready(), ended]);
    const step = this.ended ? 'ended' : await Promise.race([this.events.next(), ended]);
    this.wake = null;
    if (step === 'ended' || this.ended) return this.finish();
    if (step.done) return { value: undefined, done: true };
    return { value: await this.run(step.value), done: false };
  }

  async return(): Promise<IteratorResult<ExecutionResult>> {
    this.ended = true;
    this.final = null;
    this.wake?.();
    await this.events.return?.();
    return { value: undefined, done: true };
  }

  /** Ends the results: `result` (an error saying why) comes next, then nothing. */
  end(result: ExecutionResult): void {
    if (this.ended) return;
    this.ended = true;
    this.final = result;
    this.wake?.();
    void this.events.return?.();
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  private finish(): IteratorResult<ExecutionResult> {
    const final = this.final;
    this.final = null;
    return final ? { value: final, done: false } : { value: undefined, done: true };
  }
}

/**
 * graphql-js's subscribe, with a fresh context per event; `options.started` gets the results,
 * `options.ready` paces them (see EventResults).
 */
export async function subscribeFresh(
  args: ExecutionArgs,
  options: { started?: (results: EventResults) => void; ready?: () => Promise<void> } = {},
): Promise<EventResults | ExecutionResult> {
  const source = await createSourceEventStream(args);
  if (!(Symbol.asyncIterator in source)) return source as ExecutionResult;
  const base = args.contextValue as GraphQLContext;
  const results = new EventResults(
    (source as AsyncIterable<ChangeEvent>)[Symbol.asyncIterator](),
    (event) =>
      execute({ ...args, rootValue: event, contextValue: { ...base, loaders: new Loaders(base.services, base.caller, base.sql) } }) as
        Promise<ExecutionResult> | ExecutionResult,
    options.ready,
  );
  options.started?.(results);
  return results;
}
