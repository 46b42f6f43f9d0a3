import { getNamedType, isLeafType, parse, TypeInfo, visit, visitWithTypeInfo, Kind, type GraphQLSchema } from 'graphql';
import { LRUCache } from 'lru-cache';
import type { Caller } from '../auth/caller.js';
import { ownBytes, type ReadCache } from '../db/read-cache.js';
import type { AppContext } from '../http/context.js';
import { GRAPHQL_LIMITS } from './limits.js';

/**
 * The types a cached answer may be made of: the directory (users, applications, roles, the links
 * between them) and their pages. What any of them holds changes only by a write to the directory
 * tables, which moves the directory version (read-cache.ts), and none depends on the caller beyond
 * its scopes (part of the key). Tokens (secrets, expiry by the clock, `viewer`), audit events and
 * introspection are never cached.
 */
const DIRECTORY_TYPES = new Set([
  'User', 'UserPage', 'UserConnection', 'UserEdge',
  'Application', 'ApplicationPage', 'ApplicationConnection', 'ApplicationEdge',
  'Role', 'RolePage', 'RoleConnection', 'RoleEdge',
  'ApplicationLink', 'ApplicationLinkPage', 'ApplicationLinkConnection', 'ApplicationLinkEdge',
  'PageInfo',
]);
const DIRECTORY_QUERIES = new Set([
  'users', 'usersConnection', 'user',
  'applications', 'applicationsConnection', 'application',
  'roles', 'rolesConnection', 'role',
  'userApplication',
]);

/**
 * Whether every operation of the document is a query and every field it selects reads the
 * directory: a Query field of DIRECTORY_QUERIES, or a field of a directory type whose value is a
 * scalar, an enum or another directory type. An invalid document is not cacheable (it never gets
 * a clean answer to cache anyway).
 */
export function readsOnlyDirectory(schema: GraphQLSchema, query: string): boolean {
  let document;
  try {
    document = parse(query, { maxTokens: GRAPHQL_LIMITS.maxTokens, noLocation: true });
  } catch {
    return false;
  }
  const typeInfo = new TypeInfo(schema);
  let cacheable = true;
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      OperationDefinition(node) {
        if (node.operation !== 'query') cacheable = false;
      },
      Field(node) {
        if (node.name.value === '__typename') return;
        const parent = typeInfo.getParentType();
        const field = typeInfo.getFieldDef();
        if (!parent || !field) {
          cacheable = false;
          return;
        }
        const allowed = parent.name === 'Query' ? DIRECTORY_QUERIES.has(field.name) : DIRECTORY_TYPES.has(parent.name);
        const value = getNamedType(field.type);
        if (!allowed || !(isLeafType(value) || DIRECTORY_TYPES.has(value.name))) cacheable = false;
      },
      Directive(node) {
        // @skip and @include only choose among the fields above; anything else is not known here.
        if (node.name.value !== 'skip' && node.name.value !== 'include') cacheable = false;
      },
    }),
  );
  return cacheable && document.definitions.every((d) => d.kind === Kind.OPERATION_DEFINITION || d.kind === Kind.FRAGMENT_DEFINITION);
}

/** A clean answer as Apollo made it, and the operation it ran (for the request log and metrics). */
export interface CachedAnswer {
  /** The body as bytes: written as they are, where a string would be encoded again for every answer. */
  body: Buffer;
  type: string;
  operation: { name: string | null; type: string };
}

/** Query texts longer than this are not cached (nor remembered): a few directory queries are. */
export const MAX_QUERY_CHARS = 16 * 1024;

/**
 * The key of a request's answer: everything the answer depends on but the caller's scopes (which
 * read-cache.ts adds). Also used by front-cache.ts, which looks a POST's answer up before the app.
 */
export function graphqlAnswerKey(method: string, contentType: string, accept: string, params: Record<string, unknown>): string {
  const { query, operationName, variables, extensions } = params;
  return JSON.stringify(['graphql', method, contentType, accept, query, operationName ?? null, variables ?? null, extensions ?? null]);
}

/**
 * Clean answers to directory queries (read-cache.ts says why they are exact), served without
 * running Apollo again: the same body, type and status. Keyed by everything the answer depends on:
 * the method, what the client sends and accepts (Content-Type, Accept: a type Apollo refuses is
 * never a hit), the caller's scopes (read-cache.ts adds them), and the request's query,
 * operationName, variables and extensions as sent. Only 200 answers without errors are kept: an
 * error carries its request's id, and a FORBIDDEN one depends on the scopes.
 */
export class GraphQLResponseCache {
  /** Whether a query text reads only the directory: parsed and walked once per text. */
  private readonly documents = new LRUCache<string, boolean>({ maxSize: 2 * 1024 * 1024, sizeCalculation: (_, text) => text.length });

  constructor(private readonly schema: GraphQLSchema, private readonly answers: ReadCache) {}

  /** The cache key of a request, or null when its answer may not be cached. */
  keyOf(ctx: AppContext, caller: Caller | null, params: Record<string, unknown>): string | null {
    if (!caller?.directoryVersion || (ctx.method !== 'POST' && ctx.method !== 'GET')) return null;
    const { query } = params;
    if (typeof query !== 'string' || query.length > MAX_QUERY_CHARS) return null;
    let cacheable = this.documents.get(query);
    if (cacheable === undefined) {
      cacheable = readsOnlyDirectory(this.schema, query);
      this.documents.set(query, cacheable);
    }
    if (!cacheable) return null;
    return graphqlAnswerKey(ctx.method, ctx.get('Content-Type'), ctx.get('Accept'), params);
  }

  /** Whether a query text has been seen and found to read only the directory: false for one not seen yet. */
  knownCacheable(query: string): boolean {
    return this.documents.get(query) === true;
  }

  /** Answers the request from the cache; false when there is nothing for its version. */
  serve(ctx: AppContext, caller: Caller, key: string): boolean {
    const answer = this.answers.get<CachedAnswer>(caller, key);
    ctx.state.readCache = answer ? 'hit' : 'miss';
    if (!answer) return false;
    ctx.state.graphql = answer.operation;
    ctx.status = 200;
    ctx.type = answer.type;
    ctx.body = answer.body;
    return true;
  }

  /** Keeps Apollo's answer when it is a clean one (200, data and no errors). */
  keep(ctx: AppContext, caller: Caller, key: string): void {
    const body: unknown = ctx.body;
    const operation = ctx.state.graphql;
    // Inside JSON strings quotes are escaped, so `"errors":` can only be a key: Apollo's errors, or
    // an alias named errors (not cached either, which is only a missed chance).
    if (ctx.status !== 200 || typeof body !== 'string' || !operation || !body.startsWith('{"data":') || body.includes('"errors":')) return;
    const bytes = ownBytes(body);
    ctx.body = bytes;
    this.answers.set(caller, key, { body: bytes, type: String(ctx.response.get('Content-Type')), operation } satisfies CachedAnswer, bytes.length);
  }
}
