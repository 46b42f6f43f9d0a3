import { InMemoryLRUCache, type KeyValueCache, type KeyValueCacheSetOptions } from '@apollo/utils.keyvaluecache';
import type { DocumentNode, Token } from 'graphql';
import { LRUCache } from 'lru-cache';

/**
 * How much parsed documents Apollo keeps, in bytes. A parsed document keeps its text and every
 * token (each with its AST node and location: ~300 bytes of heap, measured on Node 22), so it
 * counts as its text plus 300 bytes a token; counting by text length alone undercounts a
 * token-dense query tenfold. 8 MiB holds ~360–1,000 documents of the size of the docs' examples
 * (8–23 KiB each): more than the few hundred operations a real client set sends.
 */
export const DOCUMENT_STORE_BYTES = 8 * 1024 * 1024;
const BYTES_PER_TOKEN = 300;

/** How many query texts (their hashes) the store remembers having seen once. */
const SEEN_ONCE_MAX = 5_000;

export function documentBytes(document: DocumentNode): number {
  const loc = document.loc;
  if (!loc) return 64 * 1024;
  let tokens = 0;
  for (let token: Token | null = loc.startToken; token; token = token.next) tokens++;
  return loc.source.body.length + BYTES_PER_TOKEN * tokens;
}

/**
 * Apollo's document store (its `documentStore` option: a KeyValueCache of parsed and validated
 * documents by the hash of their text), keeping a document only the second time its text comes.
 * A text sent once (a client inlining values, a one-off script) would otherwise take a place in
 * the store for nothing, pushing out the documents real clients send again and again: 6,000
 * unique 2 KB texts made the store hold 16 MiB of documents no request would ask for again. A text
 * seen once is remembered by its hash alone (~200 bytes, at most SEEN_ONCE_MAX of them), the same
 * rule as the executor's compiling an operation from its second run (src/graphql/executor.ts).
 * A repeated text costs one more parse and validation, once. Apollo's InMemoryLRUCache holds the
 * documents; this wrapper is only the admission rule, which no store of Apollo's has.
 */
export class DocumentStore implements KeyValueCache<DocumentNode> {
  private readonly documents = new InMemoryLRUCache<DocumentNode>({ maxSize: DOCUMENT_STORE_BYTES, sizeCalculation: documentBytes });
  private readonly seenOnce = new LRUCache<string, true>({ max: SEEN_ONCE_MAX });

  get(key: string): Promise<DocumentNode | undefined> {
    return this.documents.get(key);
  }

  async set(key: string, document: DocumentNode, options?: KeyValueCacheSetOptions): Promise<void> {
    if (!this.seenOnce.delete(key)) {
      this.seenOnce.set(key, true);
      return;
    }
    await this.documents.set(key, document, options);
  }

  async delete(key: string): Promise<boolean> {
    const seen = this.seenOnce.delete(key);
    return (await this.documents.delete(key)) || seen;
  }
}
