import { StaleTokenHint } from '../auth/checked-sql.js';
import type { ApolloServerPlugin } from '@apollo/server';
import { unwrapResolverError } from '@apollo/server/errors';
import type { PersistedQueryOptions } from '@apollo/server';
import { PrefixingKeyValueCache, type KeyValueCache } from '@apollo/utils.keyvaluecache';
import { LRUCache } from 'lru-cache';
import { GraphQLError, type DocumentNode, type GraphQLFormattedError, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import type { Caller } from '../auth/caller.js';
import type { Logger } from '../observability/log.js';
import type { TrustedDocumentMetrics } from '../observability/metrics.js';
import type { GraphQLContext } from './context.js';
import { DocumentCache, PreparedDocument, sha256 as sha256Of } from './documents.js';
import { formatErrors, isInternal, variableErrors } from './errors.js';
import { costProblem, GRAPHQL_LIMITS, valueNesting } from './limits.js';
import { loadTrustedDocuments, type TrustedDocuments, type TrustedDocumentsMode } from './trusted-documents.js';

/**
 * The one GraphQL gate (docs/architecture.md): every operation, on every transport (POST and GET
 * /graphql through Apollo Server, WebSocket, Server-Sent Events), passes the same checks, in the
 * same order, with the same words:
 *
 * 0. which document the request names: its text, or an id (`extensions.persistedQuery.sha256Hash`,
 *    `documentId: "sha256:<id>"`) of a trusted document (GRAPHQL_TRUSTED_DOCUMENTS: a listed
 *    operation by id is parsed and validated at start, never per request) or of a persisted query
 *    Apollo registered; with a list, whether a text may run (src/graphql/trusted-documents.ts);
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
  /** `sha256:<id>` (the GraphQL over HTTP persisted documents form). */
  documentId?: unknown;
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
  /** The id the request named its document by (null: it sent the text). */
  byId: string | null;
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

/**
 * An admitted request. A class, not an object literal with a getter: V8 makes a literal with
 * accessors in the old generation, where it would keep the request's variables until the next full
 * collection (src/graphql/executor.ts tells the same of Apollo's gateway context).
 */
class AdmittedOperation implements Admitted {
  readonly kind = 'admitted' as const;
  readonly document: DocumentNode;
  readonly source: string;

  constructor(
    private readonly prepared: PreparedDocument,
    private readonly schema: GraphQLSchema,
    readonly operation: OperationDefinitionNode,
    readonly operationName: string | null,
    readonly variables: Record<string, unknown>,
    readonly introspectionOnly: boolean,
    readonly byId: string | null,
  ) {
    this.document = prepared.document!;
    this.source = prepared.source;
  }

  /** Asked only when the read cache is on: found once per document. */
  get cacheable(): boolean {
    return this.prepared.isCacheable(this.schema);
  }
}

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

/**
 * The id a request names its document by: Apollo Client's persisted query link sends
 * `extensions.persistedQuery: {"version": 1, "sha256Hash": "<id>"}`, the GraphQL over HTTP
 * persisted documents form `documentId: "sha256:<id>"`. Null: none (another persisted query
 * version is Apollo Server's to refuse).
 */
function idOf(request: OperationRequest): string | null {
  const persisted = (request.extensions as { persistedQuery?: unknown } | null | undefined)?.persistedQuery as Record<string, unknown> | undefined;
  if (typeof persisted === 'object' && persisted !== null && persisted.version === 1 && typeof persisted.sha256Hash === 'string') return persisted.sha256Hash;
  if (typeof request.documentId === 'string') return request.documentId.startsWith('sha256:') ? request.documentId.slice('sha256:'.length) : request.documentId;
  return null;
}

/** An id as an error may quote it: only one that looks like a SHA-256 (a client may send anything). */
const quoted = (id: string) => (/^[0-9a-f]{64}$/i.test(id) ? `"${id}"` : 'given');

// The codes Apollo Router gives the same refusals.
const notInList = (id: string) =>
  new GraphQLError(`no trusted document has the id ${quoted(id)}: this service runs only the operations its clients shipped`, {
    extensions: { code: 'PERSISTED_QUERY_NOT_IN_LIST' },
  });
const notInSafelist = () =>
  new GraphQLError(
    'this operation is not one of the trusted documents: send the id of a listed operation (extensions.persistedQuery or documentId); only a token holding "*" may send other operations',
    { extensions: { code: 'QUERY_NOT_IN_SAFELIST' } },
  );

/**
 * The persisted queries Apollo Server registers (automatic persisted queries, without a list of
 * trusted documents): texts by their SHA-256, the least recently used going first past this many bytes.
 */
const PERSISTED_QUERY_BYTES = 4 * 1024 * 1024;

export interface GateDeps {
  schema: GraphQLSchema;
  /** Introspection on: `__schema` and `__type` may be asked, and errors may hint at names ("Did you mean …?"). */
  introspection: boolean;
  log: Logger;
  /** The trusted documents (null: none, any operation runs). */
  trusted: TrustedDocuments | null;
  /** Where operations outside the trusted documents are counted (null: no metrics). */
  metrics: TrustedDocumentMetrics | null;
}

/**
 * The gate, with the list of trusted documents at `trustedDocuments.path` when one is given (each
 * document checked as every request's is; a ConfigError, `Could not start: …`, when the list
 * cannot be read or holds anything but valid operations under their SHA-256).
 */
export async function createGate(
  deps: Omit<GateDeps, 'trusted'> & { trustedDocuments?: { path: string | undefined; mode: TrustedDocumentsMode } },
): Promise<Gate> {
  const { path, mode } = deps.trustedDocuments ?? {};
  const rules = { schema: deps.schema, introspection: deps.introspection };
  const trusted = path ? await loadTrustedDocuments(path, mode ?? 'enforce', (text) => new PreparedDocument(text, rules)) : null;
  if (trusted) deps.log.info('trusted documents loaded', { path, mode: trusted.mode, operations: trusted.size });
  return new Gate({ ...deps, trusted });
}

export class Gate {
  readonly schema: GraphQLSchema;
  private readonly log: Logger;
  private readonly documents: DocumentCache;
  /** Apollo's keys for the gate's documents, as Apollo set them (see documentStore). */
  private readonly apolloKeys = new Map<string, DocumentNode>();
  private readonly trusted: TrustedDocuments | null;
  /** Without trusted documents: the persisted queries Apollo registered, by SHA-256. */
  private readonly registered: LRUCache<string, string> | null;
  private readonly metrics: TrustedDocumentMetrics | null;

  constructor(deps: GateDeps) {
    this.schema = deps.schema;
    this.log = deps.log;
    this.trusted = deps.trusted;
    this.metrics = deps.metrics;
    this.registered = deps.trusted ? null : new LRUCache({ maxSize: PERSISTED_QUERY_BYTES, sizeCalculation: (text) => text.length + 64 });
    this.documents = new DocumentCache({ schema: deps.schema, introspection: deps.introspection }, (prepared) => {
      if (prepared.apolloKey) this.apolloKeys.delete(prepared.apolloKey);
    });
  }

  /**
   * Whether the request runs a mutation or a subscription, as far as the gate knows already
   * without preparing anything: true only for a text it has prepared before (by itself, not a
   * trusted document's or a persisted query's id) whose named operation is not a query. The read
   * cache never answers one, so the endpoint does not have its token lookup read the snapshot for
   * it, and the write can carry the token's check (src/graphql/server.ts). False when not known.
   */
  knownNotQuery(request: OperationRequest | null): boolean {
    const text = request?.query;
    if (typeof text !== 'string' || this.trusted) return false;
    const prepared = this.documents.peek(text);
    if (!prepared?.document || prepared.refusal) return false;
    const kind = prepared.operation(typeof request!.operationName === 'string' ? request!.operationName : null).operation?.operation;
    return kind !== undefined && kind !== 'query';
  }

  /**
   * Whether and what a request runs. `caller` is null for a request without a token (the HTTP
   * endpoint lets one through only for introspection).
   */
  admit(request: OperationRequest, caller: Caller | null, transport: Transport, requestId = ''): Verdict {
    const shape = shapeProblem(request);
    if (shape) return { kind: 'unjudged', errors: [shape] };
    const id = idOf(request);
    // An empty query with an id names the document by the id (graphql-ws and graphql-sse require a query string).
    const text = typeof request.query === 'string' && !(request.query === '' && id !== null) ? request.query : undefined;
    if (this.trusted) return this.admitTrusted(this.trusted, { request, text, id, caller, transport, requestId });
    if (text !== undefined) return this.check(this.documents.prepare(text), request, transport, null);
    // A persisted query Apollo registered (else Apollo answers PERSISTED_QUERY_NOT_FOUND, its default).
    const registered = id === null ? undefined : this.registered?.get(id);
    if (registered !== undefined) return this.check(this.documents.prepare(registered), request, transport, id);
    return { kind: 'unjudged', errors: [badRequest('query must be a string holding the operation')] };
  }

  /**
   * With a list of trusted documents: a listed id or text runs; an id not listed is refused; a
   * text not listed is refused in enforce mode (unless the token holds `*`: the explorers), and
   * runs in log mode, logged (its name and hash, never its variables) and counted.
   */
  private admitTrusted(
    trusted: TrustedDocuments,
    {
      request,
      text,
      id,
      caller,
      transport,
      requestId,
    }: { request: OperationRequest; text: string | undefined; id: string | null; caller: Caller | null; transport: Transport; requestId: string },
  ): Verdict {
    if (text === undefined) {
      if (id === null) return { kind: 'unjudged', errors: [badRequest('query must be a string holding the operation')] };
      const listed = trusted.withId(id);
      if (listed) return this.check(listed, request, transport, id);
      this.outside({ transport, outcome: 'refused', requestId, request, hash: id });
      return { kind: 'refused', errors: [notInList(id)] };
    }
    const listed = trusted.withText(text);
    if (listed) return this.check(listed, request, transport, null);
    const explorer = caller?.scopes.has('*') ?? false;
    if (trusted.mode === 'enforce' && !explorer) {
      this.outside({ transport, outcome: 'refused', requestId, request, hash: null });
      return { kind: 'refused', errors: [notInSafelist()] };
    }
    const prepared = this.documents.prepare(text);
    const verdict = this.check(prepared, request, transport, null);
    const operation = verdict.kind === 'unjudged' ? undefined : verdict.operation;
    this.outside({ transport, outcome: trusted.mode === 'log' ? 'logged' : 'explorer', requestId, request, hash: prepared.hash, operation });
    return verdict;
  }

  /** Counts an operation outside the trusted documents, and logs it: its name and hash (never its variables). */
  private outside(what: {
    transport: Transport;
    outcome: 'logged' | 'refused' | 'explorer';
    requestId: string;
    request: OperationRequest;
    hash: string | null;
    operation?: OperationDefinitionNode;
  }): void {
    const { transport, outcome, requestId, request, operation } = what;
    this.metrics?.outside(transport, outcome);
    const named = operation ? (operation.name?.value ?? null) : typeof request.operationName === 'string' ? request.operationName : null;
    const hash = what.hash ?? (typeof request.query === 'string' ? this.documents.peek(request.query)?.hash : undefined) ?? null;
    const line = {
      requestId,
      transport,
      mode: this.trusted?.mode,
      outcome,
      operationName: named?.slice(0, 64) ?? null,
      // A text refused unparsed: its hash, unless it is a very large one (hashing it is the client's bill).
      hash: hash ?? (typeof request.query === 'string' && request.query.length <= 64 * 1024 ? sha256Of(request.query) : null),
    };
    if (outcome === 'logged') this.log.warn('graphql operation outside the trusted documents', line);
    else this.log.info('graphql operation outside the trusted documents', line);
  }

  /** The checks of a document the request names (1 to 5 above); `byId`: the id it was named by. */
  private check(prepared: PreparedDocument, request: OperationRequest, transport: Transport, byId: string | null): Verdict {
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
    return new AdmittedOperation(prepared, this.schema, operation, operationName, variables, resolved.introspectionOnly, byId);
  }

  /** Logs the errors formatError masks (INTERNAL_SERVER_ERROR), with the request's id: never a driver's message. */
  logInternal(errors: readonly GraphQLError[], requestId: string): void {
    for (const error of errors) {
      if (!isInternal(error)) continue;
      const original = unwrapResolverError(error);
      // Not a failure: the request runs again with its token looked up afresh (src/auth/checked-sql.ts).
      if (original instanceof StaleTokenHint) continue;
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
      // A trusted document's, or one the gate prepared for a request.
      const prepared = text === undefined ? undefined : (this.trusted?.withText(text) ?? this.documents.peek(text));
      if (!prepared?.document) return;
      prepared.apolloKey = key;
      this.apolloKeys.set(key, prepared.document);
    },
    delete: async (key) => this.apolloKeys.delete(key),
  };

  /**
   * Apollo Server's `persistedQueries`: with trusted documents, the list (read only: registering
   * new hashes is off); without, automatic persisted queries as Apollo Server's defaults
   * (PERSISTED_QUERY_NOT_FOUND for an unknown hash, then the client sends the text once), kept in
   * a bounded cache the gate reads too, so that a hash Apollo registered is admitted as its text.
   * Keys are the hashes themselves (no prefix: the cache is this gate's alone).
   */
  get persistedQueries(): PersistedQueryOptions {
    const { trusted, registered } = this;
    const texts: KeyValueCache<string> = {
      get: async (hash) => (trusted ? trusted.withId(hash)?.source : registered!.get(hash)),
      set: async (hash, text) => {
        if (!trusted) registered!.set(hash, text);
      },
      delete: async (hash) => (trusted ? false : registered!.delete(hash)),
    };
    return { cache: PrefixingKeyValueCache.cacheDangerouslyDoesNotNeedPrefixesForIsolation(texts) };
  }

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
