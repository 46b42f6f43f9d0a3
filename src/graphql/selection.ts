import { Kind, type FieldNode, type FragmentDefinitionNode, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';

/**
 * What a field being resolved selects below it, read from the document (fragments and inline
 * fragments followed; a field under `@skip`/`@include` counts as selected, which only ever reads
 * a column more). The answer depends on the document alone, which Apollo keeps per query text, so
 * it is remembered per field node and path.
 */
const remembered = new WeakMap<FieldNode, Map<string, ReadonlySet<string>>>();

/**
 * The names of the fields selected at `path` below the field being resolved: `[]` its own
 * selection (a record's fields), `['data']` a page's records' fields, `['edges', 'node']` a
 * connection's. Several field nodes (one response key asked twice) give their union.
 */
export function selectedFields(info: GraphQLResolveInfo, path: readonly string[] = []): ReadonlySet<string> {
  const key = path.join('.');
  if (info.fieldNodes.length === 1) return selectedBelow(info.fieldNodes[0], key, path, info.fragments);
  const union = new Set<string>();
  for (const node of info.fieldNodes) for (const name of selectedBelow(node, key, path, info.fragments)) union.add(name);
  return union;
}

/** Where a page's records are (`{ data { … } }`), and a connection's (`{ edges { node { … } } }`). */
export const PAGE_RECORDS = ['data'] as const;
export const CONNECTION_RECORDS = ['edges', 'node'] as const;

/** Whether the field being resolved selects `name` directly (a page's `total` is counted only when asked for). */
export const selects = (info: GraphQLResolveInfo, name: string): boolean => selectedFields(info).has(name);

function selectedBelow(node: FieldNode, key: string, path: readonly string[], fragments: Record<string, FragmentDefinitionNode>): ReadonlySet<string> {
  let byPath = remembered.get(node);
  if (!byPath) remembered.set(node, (byPath = new Map()));
  let found = byPath.get(key);
  if (!found) {
    const names = new Set<string>();
    let sets: SelectionSetNode[] = node.selectionSet ? [node.selectionSet] : [];
    for (const step of path)
      sets = sets.flatMap((set) =>
        fieldsOf(set, fragments)
          .filter((f) => f.name.value === step && f.selectionSet)
          .map((f) => f.selectionSet!),
      );
    for (const set of sets) for (const field of fieldsOf(set, fragments)) names.add(field.name.value);
    byPath.set(key, (found = names));
  }
  return found;
}

/** The fields of a selection set, its fragments' included (each fragment once). */
function fieldsOf(set: SelectionSetNode, fragments: Record<string, FragmentDefinitionNode>, seen = new Set<string>(), out: FieldNode[] = []): FieldNode[] {
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) out.push(selection);
    else if (selection.kind === Kind.INLINE_FRAGMENT) fieldsOf(selection.selectionSet, fragments, seen, out);
    else if (!seen.has(selection.name.value)) {
      seen.add(selection.name.value);
      const fragment = fragments[selection.name.value];
      if (fragment) fieldsOf(fragment.selectionSet, fragments, seen, out);
    }
  }
  return out;
}
