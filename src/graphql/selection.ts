import {
  Kind,
  visit,
  type ASTNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLResolveInfo,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

/** Where a field is in the document: its nodes (one response key asked once or more) and the document's fragments. */
export type FieldAt = Pick<GraphQLResolveInfo, 'fieldNodes' | 'fragments'>;

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
export function selectedFields(info: FieldAt, path: readonly string[] = []): ReadonlySet<string> {
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
export const selects = (info: FieldAt, name: string): boolean => selectedFields(info).has(name);

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

/**
 * The fields selected at `path` below the field being resolved on records of type `typeName`, each
 * the only node of its response key there, with no `@skip`/`@include` on it or on the way to it:
 * the nodes graphql-jit and graphql-js then resolve with `fieldNodes` of that one node. Fragments
 * are followed when their condition names `typeName` or nothing; any other condition (even the
 * page's own type, on the way to the records) leaves the fields behind it out, to be resolved as
 * usual. Depends on the document alone: remembered per field node, path and type.
 */
const plainRemembered = new WeakMap<FieldNode, Map<string, FieldNode[]>>();

export function plainFieldsAt(info: FieldAt, path: readonly string[], typeName: string): FieldNode[] {
  if (info.fieldNodes.length !== 1) return [];
  let byPath = plainRemembered.get(info.fieldNodes[0]);
  if (!byPath) plainRemembered.set(info.fieldNodes[0], (byPath = new Map()));
  const key = `${path.join('.')} ${typeName}`;
  let found = byPath.get(key);
  if (!found) byPath.set(key, (found = plainFieldsBelow(info, path, typeName)));
  return found;
}

function plainFieldsBelow(info: FieldAt, path: readonly string[], typeName: string): FieldNode[] {
  let sets: readonly SelectionSetNode[] = info.fieldNodes[0].selectionSet ? [info.fieldNodes[0].selectionSet] : [];
  for (const step of path) {
    const steps = sets.flatMap((set) => plainFieldsOf(set, info.fragments, typeName)).filter((f) => f.name.value === step);
    // A step asked under several response keys (aliases) or with a directive: not followed.
    if (steps.length !== 1 || steps[0].directives?.length || !steps[0].selectionSet) return [];
    sets = [steps[0].selectionSet];
  }
  const byKey = new Map<string, FieldNode[]>();
  const skipped = new Set<string>();
  for (const set of sets)
    for (const field of plainFieldsOf(set, info.fragments, typeName, skipped)) {
      const key = field.alias?.value ?? field.name.value;
      byKey.set(key, [...(byKey.get(key) ?? []), field]);
    }
  return [...byKey].filter(([key, nodes]) => nodes.length === 1 && !skipped.has(key) && !nodes[0].directives?.length).map(([, [node]]) => node);
}

/**
 * The fields of a selection set, through fragments whose condition is `typeName` or absent; the
 * response keys of fields behind a directive, or behind a fragment with a directive or another
 * condition, go into `skipped` (and those fields are left out).
 */
function plainFieldsOf(
  set: SelectionSetNode,
  fragments: Record<string, FragmentDefinitionNode>,
  typeName: string,
  skipped = new Set<string>(),
  seen = new Set<string>(),
  out: FieldNode[] = [],
): FieldNode[] {
  const skipAll = (inner: SelectionSetNode) => {
    for (const field of fieldsOf(inner, fragments)) skipped.add(field.alias?.value ?? field.name.value);
  };
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) out.push(selection);
    else if (selection.kind === Kind.INLINE_FRAGMENT) {
      const plain = !selection.directives?.length && (!selection.typeCondition || selection.typeCondition.name.value === typeName);
      if (plain) plainFieldsOf(selection.selectionSet, fragments, typeName, skipped, seen, out);
      else skipAll(selection.selectionSet);
    } else if (!seen.has(selection.name.value)) {
      seen.add(selection.name.value);
      const fragment = fragments[selection.name.value];
      if (!fragment) continue;
      const plain = !selection.directives?.length && !fragment.directives?.length && fragment.typeCondition.name.value === typeName;
      if (plain) plainFieldsOf(fragment.selectionSet, fragments, typeName, skipped, seen, out);
      else skipAll(fragment.selectionSet);
    }
  }
  return out;
}

/**
 * Whether `node` (a document, a field) has, inside an object or list literal, a variable the
 * request may leave out (nullable, without a default): `input: { avatarUrl: $avatar }`.
 * graphql-jit coerces such a literal with that field set to null when the variable was not sent,
 * where graphql-js (and the spec) leave the field out; a patch then clears the field, a filter
 * reads it as "is null". A variable that is always there (non-null, or with a default) reads alike.
 */
export function mayOmitInLiteral(node: ASTNode, operation: OperationDefinitionNode): boolean {
  const definitions = new Map((operation.variableDefinitions ?? []).map((d) => [d.variable.name.value, d]));
  let depth = 0;
  let found = false;
  const literal = { enter: () => void depth++, leave: () => void depth-- };
  visit(node, {
    ObjectValue: literal,
    ListValue: literal,
    Variable: (variable) => {
      const definition = definitions.get(variable.name.value);
      if (depth > 0 && (!definition || (definition.type.kind !== Kind.NON_NULL_TYPE && !definition.defaultValue))) found = true;
    },
  });
  return found;
}
