import { createSourceEventStream, execute, type ExecutionArgs, type ExecutionResult, type GraphQLError, type GraphQLSchema } from 'graphql';
import { Loaders, type GraphQLContext } from '../graphql/context.js';
import type { Admitted, Gate } from '../graphql/gate.js';
import type { Caller } from '../auth/caller.js';
import type { Database } from '../db/database.js';
import type { ServiceContainer as Services } from '../graphql/context.js';
import type { ChangeEvent } from './events.js';
import type { RealtimeContext } from './realtime.graphql.js';

/**
 * What both transports (src/realtime/ws.ts, sse.ts) do with a subscription the gate admitted
 * (src/graphql/gate.ts checks it as it checks every operation): its context, and its execution
 * with fresh DataLoaders for each event.
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

/**
 * The execution arguments of a subscription the gate admitted (src/graphql/gate.ts: the same
 * checks, limits and words as over HTTP), run with `contextValue`.
 */
export function subscriptionArgs(schema: GraphQLSchema, admitted: Admitted, contextValue: GraphQLContext): ExecutionArgs {
  return { schema, document: admitted.document, variableValues: admitted.variables, operationName: admitted.operationName, contextValue };
}

/** A result with its errors formatted by the gate (a result without errors is passed as it is). */
export function formatResult(gate: Gate, result: ExecutionResult, requestId: string): ExecutionResult | null {
  if (!result.errors?.length) return null;
  return { ...result, errors: gate.format(result.errors, requestId) as unknown as GraphQLError[] };
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
