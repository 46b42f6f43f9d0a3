import { getArgumentValues, getNamedType, isObjectType, type GraphQLObjectType, type GraphQLOutputType, type GraphQLResolveInfo } from 'graphql';
import type { GraphQLContext, NestedBatch } from './context.js';
import { plainFieldsAt, type FieldAt } from './selection.js';

/**
 * Nested lists read ahead: a list of records (`users { data { … } }`) reads the nested lists its
 * records select (`applications`, `roles`, `tokens`, as pages or connections) for all of them
 * before it answers, in the batches their resolvers would make, so that each record's nested
 * field is then answered from what was read (src/graphql/context.ts: `readyFor`) instead of a
 * promise per record.
 *
 * The statements are the same ones, in the same order (the list, then every nested list at once).
 * What it spares is the executor's work per record: a resolver returning a promise, a DataLoader
 * key, the promise's settling and its callbacks, for each of a page's 50 records and each nested
 * list. The bare stack with the page's links read in its root field against the same stack with a
 * DataLoader per nested field (bench/apollo-floor.mjs, side by side): 1.45–1.86 against 2.09–2.45
 * ms of Node a page of 50 with their applications and roles (docs/benchmarks.md).
 *
 * Only what is certain to be resolved as read is read ahead (selection.ts: `plainFieldsAt`: one
 * node per response key, no `@skip`/`@include`), with the arguments its resolver gets: read here by
 * graphql-js, as graphql-jit reads them too in every document it is given (one with a variable that
 * may be left out inside a literal runs on graphql-js: executor.ts, `mayOmitInLiteral`). Anything else,
 * and a nested list whose batch cannot be made (a permission the token lacks, an argument that
 * does not parse), is left to its resolver, which reports the error at its own path. A read that
 * fails in the database is answered as its resolver's batch would have: the error, at each
 * record's field (not read a second time).
 */

/** The extension under which a nested list field declares how it is read for a list of parents (src/graphql/nested-list.ts). */
export const READ_AHEAD = 'readAhead';

/** How a nested list field is read for a list of parents, from its node in the document (throws as its resolver would). */
export type NestedRead = (ctx: GraphQLContext, at: FieldAt, args: Record<string, unknown>) => NestedBatch<unknown>;

/** The object type of the records at `path` below a field of type `type` (a page's `data`, a connection's `edges.node`). */
function recordType(type: GraphQLOutputType, path: readonly string[]): GraphQLObjectType | null {
  let named = getNamedType(type);
  for (const step of path) {
    if (!isObjectType(named)) return null;
    const field = named.getFields()[step];
    if (!field) return null;
    named = getNamedType(field.type);
  }
  return isObjectType(named) ? named : null;
}

/** Reads ahead the nested lists that `records` (at `path` below the field being resolved) select. */
export async function readNestedAhead(
  ctx: GraphQLContext,
  info: GraphQLResolveInfo,
  records: readonly { id: number }[],
  path: readonly string[],
): Promise<void> {
  if (records.length === 0) return;
  const type = recordType(info.returnType, path);
  if (!type) return;
  const ids = records.map((record) => record.id);
  const reads: Promise<void>[] = [];
  for (const node of plainFieldsAt(info, path, type.name)) {
    const field = type.getFields()[node.name.value];
    const read = field?.extensions?.[READ_AHEAD] as NestedRead | undefined;
    if (typeof read !== 'function') continue;
    let batch: NestedBatch<unknown>;
    try {
      batch = read(ctx, { fieldNodes: [node], fragments: info.fragments }, getArgumentValues(field, node, info.variableValues));
    } catch {
      continue; // its resolver says why
    }
    reads.push(ctx.loaders.readAhead(node, batch, ids));
  }
  await Promise.all(reads);
}
