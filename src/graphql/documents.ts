import { createHash } from 'node:crypto';
import { ApolloServerErrorCode } from '@apollo/server/errors';
import {
  getOperationAST,
  GraphQLError,
  Kind,
  NoSchemaIntrospectionCustomRule,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type Token,
  type ValidationRule,
} from 'graphql';
import { LRUCache } from 'lru-cache';
import { isCacheableDocument } from './cacheable.js';
import { noteValueProblems } from './errors.js';
import { documentNesting, GRAPHQL_LIMITS, sizeLimitRule } from './limits.js';

/**
 * Document texts as the gate (src/graphql/gate.ts) knows them: each text checked once, however
 * often it comes and on whichever transport: its nesting, its syntax (with the token limit), its
 * validity against the schema with the size limits, and then, per operation name, which
 * operation it runs. A refused text is kept with its errors, so that sending it again costs a
 * lookup.
 */

/** How a text was refused: its nesting is judged before a request's variables, its syntax and validity after. */
export interface Refusal {
  stage: 'nesting' | 'parse' | 'validation';
  errors: readonly GraphQLError[];
}

/** The operation a document runs under an operation name, or why it runs none. */
export interface ResolvedOperation {
  operation: OperationDefinitionNode | null;
  error: GraphQLError | null;
  /** A query of what tells the schema only (`__schema`, `__type`, `__typename`, a subgraph's `_service`): runs without a token where introspection is on. */
  introspectionOnly: boolean;
}

/** What the checks of a text need: the schema, and whether it may be introspected (else no "Did you mean …?" either). */
export interface DocumentRules {
  schema: GraphQLSchema;
  introspection: boolean;
}

const badDocument = (message: string, code: string) => new GraphQLError(message, { extensions: { code } });

/** A document text, checked once. */
export class PreparedDocument {
  /** The parsed document; null when the text was refused. */
  readonly document: DocumentNode | null;
  readonly refusal: Refusal | null;
  /** Apollo's key for this document in its document store, once Apollo has told it (src/graphql/gate.ts). */
  apolloKey?: string;
  private readonly operations = new Map<string | null, ResolvedOperation>();
  private sha256?: string;
  private cacheable?: boolean;

  constructor(
    readonly source: string,
    private readonly rules: DocumentRules,
  ) {
    const { maxNesting, maxTokens } = GRAPHQL_LIMITS;
    // graphql-js parses and validates recursively: thousands of levels would overflow its stack.
    const depth = documentNesting(source);
    if (depth > maxNesting) {
      const message = `the document nests braces, brackets or parentheses ${depth} levels deep; at most ${maxNesting} are allowed`;
      this.document = null;
      this.refusal = { stage: 'nesting', errors: [badDocument(message, ApolloServerErrorCode.GRAPHQL_PARSE_FAILED)] };
      return;
    }
    let document: DocumentNode;
    try {
      document = parse(source, { maxTokens });
    } catch (err) {
      const error = err instanceof GraphQLError ? err : new GraphQLError((err as Error).message, { originalError: err as Error });
      this.document = null;
      this.refusal = {
        stage: 'parse',
        errors: [
          new GraphQLError(error.message, {
            source: error.source,
            positions: error.positions,
            originalError: error,
            extensions: { ...error.extensions, code: ApolloServerErrorCode.GRAPHQL_PARSE_FAILED },
          }),
        ],
      };
      return;
    }
    const invalid = validate(rules.schema, document, validationRules(rules), { hideSuggestions: !rules.introspection });
    if (invalid.length) {
      // Where a literal value does not fit, and why, said without the value (formatError reads the notes).
      noteValueProblems(rules.schema, document, invalid);
      const errors = invalid.map(
        (e) =>
          new GraphQLError(e.message, {
            nodes: e.nodes,
            originalError: e.originalError ?? e,
            extensions: { ...e.extensions, code: ApolloServerErrorCode.GRAPHQL_VALIDATION_FAILED },
          }),
      );
      this.document = null;
      this.refusal = { stage: 'validation', errors };
      return;
    }
    this.document = document;
    this.refusal = null;
  }

  /** The SHA-256 (hex) of the text: the id a persisted query or a trusted document has. */
  get hash(): string {
    return (this.sha256 ??= sha256(this.source));
  }

  /** Whether the read cache may answer it (src/graphql/cacheable.ts), found once. */
  isCacheable(schema: GraphQLSchema): boolean {
    return (this.cacheable ??= this.document !== null && isCacheableDocument(schema, this.document));
  }

  /**
   * The operation `name` (null: the only one) names. Resolutions are kept for the names the
   * document holds (a client cannot grow the map with names of its own invention).
   */
  operation(name: string | null): ResolvedOperation {
    const known = this.operations.get(name);
    if (known) return known;
    const document = this.document!;
    const operation = getOperationAST(document, name);
    if (!operation) {
      const count = document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION).length;
      const message =
        name !== null ? `the document has no operation named "${name}"` : `the document has ${count} operations: name the one to run in operationName`;
      return { operation: null, error: badDocument(message, ApolloServerErrorCode.OPERATION_RESOLUTION_FAILURE), introspectionOnly: false };
    }
    const introspectionOnly =
      operation.operation === 'query' && operation.selectionSet.selections.every((s) => s.kind === Kind.FIELD && tellsSchema(this.rules.schema, s.name.value));
    const resolved: ResolvedOperation = { operation, error: null, introspectionOnly };
    this.operations.set(name, resolved);
    return resolved;
  }
}

export const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Whether a root field of a query only tells the schema: introspection's meta-fields and, in a
 * subgraph (GRAPHQL_FEDERATION), `_service` (what introspection tells, in the form routers read).
 */
const tellsSchema = (schema: GraphQLSchema, field: string) =>
  field.startsWith('__') || (field === '_service' && schema.getQueryType()?.getFields()._service !== undefined);

/** GraphQL's rules, the size limits (src/graphql/limits.ts), and no introspection where it is off. */
function validationRules(rules: DocumentRules): ValidationRule[] {
  return [...specifiedRules, sizeLimitRule, ...(rules.introspection ? [] : [NoSchemaIntrospectionCustomRule])];
}

/**
 * How many bytes of parsed documents the gate keeps, however many distinct texts clients send. A
 * parsed document keeps its text and every token (each with its AST node and location: ~300 bytes
 * of heap, measured on Node 22), so it counts as its text plus 300 bytes a token; counting by text
 * length alone undercounts a token-dense query tenfold. A refused text keeps its text and errors.
 * 8 MiB holds ~360–1,000 documents of the size of the docs' examples (8–23 KiB each): more than
 * the few hundred operations a real client set sends.
 */
export const DOCUMENTS_BYTES = 8 * 1024 * 1024;
/** How many texts (their hashes) the cache remembers having seen once. */
const SEEN_ONCE_MAX = 5_000;
const BYTES_PER_TOKEN = 300;
const REFUSAL_BYTES = 2 * 1024;
function preparedBytes(prepared: PreparedDocument): number {
  const loc = prepared.document?.loc;
  if (!loc) return 2 * prepared.source.length + REFUSAL_BYTES;
  let tokens = 0;
  for (let token: Token | null = loc.startToken; token; token = token.next) tokens++;
  return loc.source.body.length + BYTES_PER_TOKEN * tokens;
}

/**
 * The texts clients sent, prepared, kept from a text's second request on: the least recently used
 * go first past DOCUMENTS_BYTES. A text sent once (a client inlining values, a one-off script)
 * would otherwise take a place for nothing, pushing out the documents real clients send again and
 * again (6,000 unique 2 KB texts filled 16 MiB with documents no request asked for again); a text
 * seen once is remembered by its SHA-256 alone (~200 bytes, at most SEEN_ONCE_MAX of them), the
 * rule the executor compiles an operation by (from its second run: src/graphql/executor.ts). A
 * repeated text costs one more parse and validation, once.
 */
export class DocumentCache {
  private readonly texts: LRUCache<string, PreparedDocument>;
  private readonly seenOnce = new LRUCache<string, true>({ max: SEEN_ONCE_MAX });

  constructor(
    private readonly rules: DocumentRules,
    /** Called when a document leaves the cache (Apollo's document store forgets it too). */
    onEvict: (prepared: PreparedDocument) => void,
  ) {
    this.texts = new LRUCache<string, PreparedDocument>({
      maxSize: DOCUMENTS_BYTES,
      sizeCalculation: preparedBytes,
      dispose: (prepared) => onEvict(prepared),
    });
  }

  /** The text, prepared (from the cache, or now: then kept if the text came before). */
  prepare(text: string): PreparedDocument {
    let prepared = this.texts.get(text);
    if (prepared) return prepared;
    prepared = new PreparedDocument(text, this.rules);
    if (this.seenOnce.delete(prepared.hash)) this.texts.set(text, prepared);
    else this.seenOnce.set(prepared.hash, true);
    return prepared;
  }

  /** The text, if prepared already (no change to its recency). */
  peek(text: string): PreparedDocument | undefined {
    return this.texts.peek(text);
  }
}
