import { readFile } from 'node:fs/promises';
import { ConfigError } from '../config.js';
import type { PreparedDocument } from './documents.js';

/**
 * Trusted documents (docs/graphql.md#trusted-documents): the operations this service's clients
 * shipped, loaded at start from GRAPHQL_TRUSTED_DOCUMENTS, each parsed and validated then (a
 * listed operation sent by its id costs no parsing or validation). Read in either format:
 *
 * - the manifest `@apollo/generate-persisted-query-manifest` writes:
 *   `{"format": "apollo-persisted-query-manifest", "version": 1, "operations": [{"id", "name", "type", "body"}]}`;
 * - a plain map `{"<sha256 hex>": "<document>"}` (GraphQL Code Generator's persisted documents, say).
 *
 * Every id must be the SHA-256 (hex) of its document, as the clients compute it; every document
 * must be valid against the schema. Anything else stops the start: a list that half loads would
 * refuse what the clients were built to send.
 */

/** enforce: what is not listed is refused (but for tokens holding `*`); log: it runs, and is logged and counted. */
export type TrustedDocumentsMode = 'enforce' | 'log';

export class TrustedDocuments {
  private readonly byId = new Map<string, PreparedDocument>();
  private readonly byText = new Map<string, PreparedDocument>();

  constructor(
    readonly mode: TrustedDocumentsMode,
    documents: readonly PreparedDocument[],
  ) {
    for (const document of documents) {
      this.byId.set(document.hash, document);
      this.byText.set(document.source, document);
    }
  }

  /** The listed document with this id (lower-case hex), if any. */
  withId(id: string): PreparedDocument | undefined {
    return this.byId.get(id);
  }

  /** The listed document with this very text, if any (equal texts, equal SHA-256: no hashing needed). */
  withText(text: string): PreparedDocument | undefined {
    return this.byText.get(text);
  }

  get size(): number {
    return this.byId.size;
  }
}

/** An operation of the list, as read. */
interface ListedOperation {
  id: string;
  /** How to name it in an error: its name, else its position. */
  label: string;
  body: string;
}

const HEX_ID = /^[0-9a-f]{64}$/i;
const fail = (path: string, reason: string) => new ConfigError(`GRAPHQL_TRUSTED_DOCUMENTS (${path}): ${reason}`);

/** The operations of a parsed list, in either format; a ConfigError naming what is wrong otherwise. */
function operationsOf(path: string, list: unknown): ListedOperation[] {
  if (typeof list !== 'object' || list === null || Array.isArray(list)) {
    throw fail(path, 'the list must be a JSON object: an Apollo persisted query manifest, or {"<sha256 hex>": "<document>"}');
  }
  const record = list as Record<string, unknown>;
  if ('format' in record) {
    if (record.format !== 'apollo-persisted-query-manifest')
      throw fail(path, `format "${String(record.format).slice(0, 64)}" is not apollo-persisted-query-manifest`);
    if (record.version !== 1) throw fail(path, `version ${JSON.stringify(record.version)} of the manifest format is not known (1 is)`);
    if (!Array.isArray(record.operations)) throw fail(path, 'the manifest has no "operations" list');
    return record.operations.map((operation: unknown, index) => {
      const { id, name, body } = (typeof operation === 'object' && operation !== null ? operation : {}) as Record<string, unknown>;
      const label = typeof name === 'string' && name ? `"${name.slice(0, 64)}"` : `#${index + 1}`;
      if (typeof id !== 'string' || typeof body !== 'string') throw fail(path, `operation ${label} needs a string "id" and a string "body"`);
      return { id, label, body };
    });
  }
  return Object.entries(record).map(([id, body], index) => {
    if (typeof body !== 'string') throw fail(path, `the document of id ${id.slice(0, 64)} (entry #${index + 1}) is not a string`);
    return { id, label: `#${index + 1} (id ${id.slice(0, 64)})`, body };
  });
}

/**
 * Reads, checks and prepares the list at `path` (`prepare` parses and validates a document as
 * every request's is). A ConfigError (`Could not start: …`) when it cannot be read or is not a
 * list of valid operations with their SHA-256 ids.
 */
export async function loadTrustedDocuments(path: string, mode: TrustedDocumentsMode, prepare: (text: string) => PreparedDocument): Promise<TrustedDocuments> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw fail(path, `the file cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  let list: unknown;
  try {
    list = JSON.parse(text);
  } catch (err) {
    throw fail(path, `the file is not JSON (${(err as Error).message})`);
  }
  const documents = operationsOf(path, list).map(({ id, label, body }) => {
    if (!HEX_ID.test(id)) throw fail(path, `operation ${label}: the id must be the SHA-256 of its document in hex (64 characters)`);
    const prepared = prepare(body);
    if (prepared.hash !== id.toLowerCase()) throw fail(path, `operation ${label}: the id is not the SHA-256 of its document (it is ${prepared.hash})`);
    if (prepared.refusal) throw fail(path, `operation ${label} is not valid against this service's schema: ${prepared.refusal.errors[0].message}`);
    return prepared;
  });
  return new TrustedDocuments(mode, documents);
}
