import { DocumentCache } from '../../src/graphql/documents.js';
import { serviceSchema as graphQLSchema } from '../../src/services.js';

/** The gate (src/graphql/documents.ts) keeps a prepared document from the second time its text comes (no database). */
test('a text seen once is not kept; seen again, its document is kept and served, refused ones too', async () => {
  const cache = new DocumentCache({ schema: await graphQLSchema(), introspection: true }, () => {});
  const once = cache.prepare('{ users { data { id } } }');
  expect(once.document).not.toBeNull();
  expect(cache.peek('{ users { data { id } } }')).toBeUndefined();

  const first = cache.prepare('{ viewer { id } }');
  const second = cache.prepare('{ viewer { id } }');
  expect(second).not.toBe(first);
  expect(cache.peek('{ viewer { id } }')).toBe(second);
  expect(cache.prepare('{ viewer { id } }')).toBe(second);
  // A refused text is kept the same way, with its errors.
  cache.prepare('{ nosuch }');
  const refused = cache.prepare('{ nosuch }');
  expect(refused.refusal?.stage).toBe('validation');
  expect(cache.prepare('{ nosuch }')).toBe(refused);
});
