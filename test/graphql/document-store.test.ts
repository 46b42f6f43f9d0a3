import { parse } from 'graphql';
import { DocumentStore } from '../../src/graphql/document-store.js';

/** Apollo's document store keeps a parsed document from the second time its text comes (no database). */
test('a text seen once is not kept; seen again, its document is kept and served; delete forgets both', async () => {
  const store = new DocumentStore();
  const once = parse('{ users { data { id } } }');
  await store.set('schema:once', once);
  expect(await store.get('schema:once')).toBeUndefined();

  const twice = parse('{ viewer { id } }');
  await store.set('schema:twice', twice);
  await store.set('schema:twice', twice);
  expect(await store.get('schema:twice')).toBe(twice);

  expect(await store.delete('schema:twice')).toBe(true);
  expect(await store.get('schema:twice')).toBeUndefined();
  // Deleted, it starts over: seen once again, not kept.
  await store.set('schema:twice', twice);
  expect(await store.get('schema:twice')).toBeUndefined();
  expect(await store.delete('schema:once')).toBe(true);
  expect(await store.delete('schema:never')).toBe(false);
});
