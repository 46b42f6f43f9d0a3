import { Kind, type FieldNode, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';

/**
 * Whether the field being resolved selects `name` directly (through fragments too): a page's
 * `total` is counted only when a client asks for it. The answer depends on the document alone,
 * which Apollo caches per query text, so it is remembered per field node.
 */
const remembered = new WeakMap<FieldNode, Map<string, boolean>>();

export function selects(info: GraphQLResolveInfo, name: string): boolean {
  return info.fieldNodes.some((node) => {
    let byName = remembered.get(node);
    if (!byName) remembered.set(node, (byName = new Map()));
    let found = byName.get(name);
    if (found === undefined) {
      found = !!node.selectionSet && inSet(node.selectionSet, name, info, new Set());
      byName.set(name, found);
    }
    return found;
  });
}

function inSet(set: SelectionSetNode, name: string, info: GraphQLResolveInfo, seen: Set<string>): boolean {
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) {
      if (selection.name.value === name) return true;
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      if (inSet(selection.selectionSet, name, info, seen)) return true;
    } else if (!seen.has(selection.name.value)) {
      seen.add(selection.name.value);
      const fragment = info.fragments[selection.name.value];
      if (fragment && inSet(fragment.selectionSet, name, info, seen)) return true;
    }
  }
  return false;
}
