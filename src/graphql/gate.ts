import type { ApolloServerPlugin } from '@apollo/server';
import { unwrapResolverError } from '@apollo/server/errors';
import type { KeyValueCache } from '@apollo/utils.keyvaluecache';
import { GraphQLError, type DocumentNode, type GraphQLFormattedError, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type { Caller } from '../auth/caller.js';
import type { Logger } from '../observability/log.js';
import type { GraphQLContext } from './context.js';
import { DocumentCache, type PreparedDocument } from './documents.js';
import { formatErrors, isInternal, variableErrors } from './errors.js';
import { costProblem, GRAPHQL_LIMITS, valueNesting } from './limits.js';

/**
 * The one GraphQL gate (docs/architecture.md): every operation, on every transport (POST and GET
 * /graphql through Apollo Server, WebSocket, Server-Sent Events), passes the same checks, in the
 * same order, with the same words:
 *
 * 1. the document: its nesting, syntax and validity (src/graphql/documents.ts: once per text);
 * 2. the variables' nesting;
 * 3. the operation the request names, and whether this transport runs its kind;
 * 4. its cost (src/graphql/limits.ts);
 * 5. the variables against their types, in words that never repeat a value.
 *
 * Apollo Server uses it through its public options: the gate admits a request before Apollo sees
 * it (src/graphql/server.ts), Apollo finds the gate's parsed document in its document store (so it
 * neither parses nor validates again), and the executor runs what the gate admitted. Errors are
 * formatted by one formatter (src/graphql/errors.ts) whoever answers them.
 */

/** What a client sends, on any transport: a POST body, a GET's parameters, a subscribe payload. */
export interface OperationRequest {
  query?: unknown;
  operationName?: unknown;
  variables?: unknown;
  extensions?: unknown;
}

/** How a request came: each runs its own kinds of operation. */
export type Transport = 'post' | 'get' | 'ws' | 'sse';

/** A request the gate let through: what to run. */
export interface Admitted {
  kind: 'admitted';
  document: DocumentNode;
  operation: OperationDefinitionNode;
  operationName: string | null;
  variables: Record<string, unknown>;
  /** The document's text. */
  source: string;
  /** Whether the read cache may keep its answer (every field cacheable). */
  cacheable: boolean;
  /** Only introspection meta-fields: may run without a token where introspection is on. */
  introspectionOnly: boolean;
}

/** A request the gate refused, with why (HTTP: 400), and the operation when it got that far. */
export interface Refused {
  kind: 'refused';
  errors: readonly GraphQLError[];
  operation?: OperationDefinitionNode;
}

/**
 * A request the gate leaves to its transport's own protocol checks, which refuse it in their own
 * words (Apollo Server's for HTTP, graphql-sse's): parameters of the wrong kind, or nothing to
 * run; `errors` says why for a transport whose library let it through.
 */
export interface Unjudged {
  kind: 'unjudged';
  errors: readonly GraphQLError[];
}

export type Verdict = Admitted | Refused | Unjudged;

const badRequest = (message: string) => new GraphQLError(message, { extensions: { code: 'BAD_REQUEST' } });

/** Why an operation of this kind does not run on this transport (null: it does; 'apollo': Apollo Server says so itself). */
function kindProblem(transport: Transport, operation: OperationDefinitionNode): GraphQLError | 'apollo' | null {
  const kind = operation.operation;
  if (transport === 'ws' || transport === 'sse') {
    return kind === 'subscription' ? null : badRequest(`send a ${kind} over HTTP (POST /graphql); this connection runs subscriptions`);
  }
  // A GET runs queries only: Apollo Server answers anything else (405, Allow: POST), before any plugin.
  if (transport === 'get') return kind === 'query' ? null : 'apollo';
  if (kind !== 'subscription') return null;
  return badRequest('subscriptions run over WebSocket (graphql-transport-ws on /graphql) or Server-Sent Events (POST /graphql with Accept: text/event-stream)');
}

/** Parameters of the wrong kind, said for a transport whose library lets them through. */
function shapeProblem(request: OperationRequest): GraphQLError | null {
  const { query, operationName, variables, extensions } = request;
  if (query !== undefined && query !== null && typeof query !== 'string') return badRequest('query must be a string holding the operation');
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return badRequest('operationName must be a string');
  const isObject = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value);
  if (variables !== undefined && variables !== null && !isObject(variables)) return badRequest('variables must be an object');
  if (extensions !== undefined && extensions !== null && !isObject(extensions)) return badRequest('extensions must be an object');
  return null;
}

export interface GateDeps {
  schema: GraphQLSchema;
  /** Introspection on: `__schema` and `__type` may be asked, and errors may hint at names ("Did you mean …?"). */
  introspection: boolean;
  log: Logger;
}

export class Gate {
  readonly schema: GraphQLSchema;
  private readonly log: Logger;
  private readonly documents: DocumentCache;
  /** Apollo's keys for the gate's documents, as Apollo set them (see documentStore). */
  private readonly apolloKeys = new Map<string, DocumentNode>();

  constructor(deps: GateDeps) {
    this.schema = deps.schema;
    this.log = deps.log;
    this.documents = new DocumentCache({ schema: deps.schema, introspection: deps.introspection }, (prepared) => {
      if (prepared.apolloKey) this.apolloKeys.delete(prepared.apolloKey);
    });
  }

  /**
   * Whether and what a request runs. `caller` is null for a request without a token (the HTTP
   * endpoint lets one through only for introspection).
   */
  admit(request: OperationRequest, caller: Caller | null, transport: Transport): Verdict {
    const shape = shapeProblem(request);
    if (shape) return { kind: 'unjudged', errors: [shape] };
    if (typeof request.query !== 'string') return { kind: 'unjudged', errors: [badRequest('query must be a string holding the operation')] };
    return this.check(this.documents.prepare(request.query), request, transport);
  }

  /** The checks of a document the request names (1 to 5 above). */
  private check(prepared: PreparedDocument, request: OperationRequest, transport: Transport): Verdict {
    const variables = (request.variables ?? {}) as Record<string, unknown>;
    const { maxNesting } = GRAPHQL_LIMITS;
    const { refusal } = prepared;
    if (refusal?.stage === 'nesting') return { kind: 'refused', errors: refusal.errors };
    // The variables object itself is one level: its values may nest maxNesting more.
    if (valueNesting(variables, maxNesting + 1) > maxNesting + 1) {
      return {
        kind: 'refused',
        errors: [new GraphQLError(`the variables are nested more than ${maxNesting} levels deep`, { extensions: { code: 'BAD_USER_INPUT' } })],
      };
    }
    if (refusal) return { kind: 'refused', errors: refusal.errors };
    const document = prepared.document!;
    const operationName = typeof request.operationName === 'string' ? request.operationName : null;
    const resolved = prepared.operation(operationName);
    const operation = resolved.operation;
    if (!operation) return { kind: 'refused', errors: [resolved.error!] };
    const kind = kindProblem(transport, operation);
    if (kind === 'apollo') return { kind: 'unjudged', errors: [] };
    if (kind) return { kind: 'refused', errors: [kind], operation };
    const tooCostly = costProblem(this.schema, document, variables, operationName);
    if (tooCostly) return { kind: 'refused', errors: [tooCostly], operation };
    const invalid = variableErrors(this.schema, operation, variables);
    if (invalid.length) return { kind: 'refused', errors: invalid, operation };
    const { schema } = this;
    return {
      kind: 'admitted',
      document,
      operation,
      operationName,
      variables,
      source: prepared.source,
      // Asked only when the read cache is on: found once per document.
      get cacheable() {
        return prepared.isCacheable(schema);
      },
      introspectionOnly: resolved.introspectionOnly,
    };
  }

  /** Logs the errors formatError masks (INTERNAL_SERVER_ERROR), with the request's id: never a driver's message. */
  logInternal(errors: readonly GraphQLError[], requestId: string): void {
    for (const error of errors) {
      if (!isInternal(error)) continue;
      const original = unwrapResolverError(error);
      const code = (original as { code?: unknown })?.code;
      this.log.error('graphql operation failed', {
        requestId,
        path: error.path?.join('.'),
        error: (original as Error)?.name,
        // Driver messages may carry request values: only their code is logged.
        ...(code !== undefined ? { code } : { message: (original as Error)?.message, stack: (original as Error)?.stack }),
      });
    }
  }

  /** Errors for the wire of the gate's own answers (HTTP refusals, WebSocket, SSE), the internal ones logged. */
  format(errors: readonly GraphQLError[], requestId: string): GraphQLFormattedError[] {
    this.logInternal(errors, requestId);
    return formatErrors(errors, requestId);
  }

  /**
   * Apollo Server's `documentStore`: the gate's parsed documents under Apollo's keys. Apollo's keys
   * are its own (a prefix of its choosing and the text's hash), so the store learns them: the
   * first time Apollo meets a text it parses it (never validates it: the gate has), and stores it
   * under its key; the store keeps the gate's document for that text instead, which Apollo then
   * finds every later time. A key is forgotten with the gate's document.
   */
  readonly documentStore: KeyValueCache<DocumentNode> = {
    get: async (key) => this.apolloKeys.get(key),
    set: async (key, parsed) => {
      const text = parsed.loc?.source.body;
      const prepared = text === undefined ? undefined : this.documents.peek(text);
      if (!prepared?.document) return;
      prepared.apolloKey = key;
      this.apolloKeys.set(key, prepared.document);
    },
    delete: async (key) => this.apolloKeys.delete(key),
  };

  /**
   * The gate as an Apollo Server plugin: errors Apollo meets (execution's) logged as the gate logs
   * its own, every error of an answer with the request's id, and a failure Apollo did not expect
   * logged with the request's id (Apollo's own log line of it keeps no request text: server.ts).
   */
  apolloPlugin(): ApolloServerPlugin<GraphQLContext> {
    return {
      requestDidStart: async () => ({
        didEncounterErrors: async ({ errors, contextValue }) => this.logInternal(errors, contextValue.requestId),
        willSendResponse: async ({ response, contextValue }) => {
          if (response.body.kind !== 'single') return;
          for (const error of response.body.singleResult.errors ?? []) {
            (error as { extensions?: Record<string, unknown> }).extensions = { ...error.extensions, requestId: contextValue.requestId };
          }
        },
      }),
      unexpectedErrorProcessingRequest: async ({ requestContext, error }) => {
        this.log.error('graphql request failed', { requestId: requestContext.contextValue.requestId, error: error.name });
      },
    };
  }
}
