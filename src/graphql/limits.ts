import { LIST_LIMITS } from '../list/list.js';
import {
  getNamedType,
  GraphQLError,
  isLeafType,
  Kind,
  visit,
  type DocumentNode,
  type GraphQLSchema,
  type ASTVisitor,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
} from 'graphql';
import { getComplexity, type ComplexityEstimator } from 'graphql-query-complexity';

/**
 * Abuse limits of docs/graphql.md.
 * - depth: levels of fields, introspection's own meta-fields aside;
 * - aliases and fields: counted as the operation runs them, every fragment spread expanded, so a
 *   fragment used twice counts twice (a document cannot hide work in fragments);
 * - tokens: the parser stops at this many (a huge document is refused before it is built);
 * - repeats: how often one response name may stand in one selection set (checking that repeated
 *   fields merge grows with the square of their number; graphql-js gives up past a budget);
 * - cost: roughly the number of records an operation may answer (see `pageCost`).
 */
export const GRAPHQL_LIMITS = { maxDepth: 10, maxAliases: 100, maxFields: 2_000, maxTokens: 10_000, maxCost: 20_000, maxNesting: 64, maxRepeats: 50 } as const;

/**
 * How deeply a document nests `{`, `[` and `(` (strings and comments aside). graphql-js parses,
 * validates and coerces recursively, as type-graphql converts inputs: thousands of levels
 * overflow the stack. The size rule below cannot help, since it runs on the parsed document.
 */
export function documentNesting(text: string): number {
  let depth = 0;
  let max = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '#') {
      while (i < text.length && text[i] !== '\n' && text[i] !== '\r') i++;
    } else if (c === '"') {
      if (text.startsWith('"""', i)) {
        i += 3;
        while (i < text.length && !text.startsWith('"""', i)) i += text.startsWith('\\"""', i) ? 4 : 1;
        i += 2; // the loop's i++ passes the closing quotes' third
      } else {
        for (i++; i < text.length && text[i] !== '"' && text[i] !== '\n'; i++) if (text[i] === '\\') i++;
      }
    } else if (c === '{' || c === '[' || c === '(') {
      max = Math.max(max, ++depth);
    } else if (c === '}' || c === ']' || c === ')') {
      depth = Math.max(0, depth - 1);
    }
  }
  return max;
}

/** How deeply a JSON value nests objects and arrays (at most `limit` + 1), counted without recursion. */
export function valueNesting(value: unknown, limit: number): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [node, depth] = stack.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    max = Math.max(max, depth + 1);
    if (max > limit) return max; // deep enough to refuse; no need to walk on
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return max;
}

const tooBig = (message: string) => new GraphQLError(message, { extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } });

interface Size {
  depth: number;
  aliases: number;
  fields: number;
  /** The most times one response name stands in one selection set. */
  repeats: number;
}

/**
 * The size of a selection set with its fragments expanded. Each fragment is measured once and its
 * size reused at every spread, so the work stays linear in the document even when spreads nest
 * (a chain of fragments each spread twice would otherwise double the work at every link).
 */
function sizeOf(set: SelectionSetNode, fragments: ReadonlyMap<string, FragmentDefinitionNode>, memo: Map<string, Size>): Size {
  const size: Size = { depth: 0, aliases: 0, fields: 0, repeats: 0 };
  const add = (inner: Size, depth: number) => {
    size.depth = Math.max(size.depth, depth);
    size.aliases += inner.aliases;
    size.fields += inner.fields;
    size.repeats = Math.max(size.repeats, inner.repeats);
  };
  const names = new Map<string, number>();
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) {
      const name = (selection.alias ?? selection.name).value;
      const count = (names.get(name) ?? 0) + 1;
      names.set(name, count);
      size.repeats = Math.max(size.repeats, count);
      const inner = selection.selectionSet ? sizeOf(selection.selectionSet, fragments, memo) : { depth: 0, aliases: 0, fields: 0, repeats: 0 };
      const meta = selection.name.value.startsWith('__'); // introspection is as deep as the type system
      add({ ...inner, aliases: inner.aliases + (selection.alias ? 1 : 0), fields: inner.fields + 1 }, meta ? 0 : 1 + inner.depth);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      const inner = sizeOf(selection.selectionSet, fragments, memo);
      add(inner, inner.depth);
    } else {
      const name = selection.name.value;
      let inner = memo.get(name);
      if (!inner) {
        const fragment = fragments.get(name);
        memo.set(name, { depth: 0, aliases: 0, fields: 0, repeats: 0 }); // a cycle (reported by graphql's own rule) counts nothing
        inner = fragment ? sizeOf(fragment.selectionSet, fragments, memo) : { depth: 0, aliases: 0, fields: 0, repeats: 0 };
        memo.set(name, inner);
      }
      add(inner, inner.depth);
    }
  }
  return size;
}

/** Depth, aliases and expanded size of every operation, checked before anything runs. */
export function sizeLimitRule(context: ValidationContext): ASTVisitor {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of context.getDocument().definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
  const memo = new Map<string, Size>();
  return {
    OperationDefinition(node) {
      const { depth, aliases, fields, repeats } = sizeOf(node.selectionSet, fragments, memo);
      const { maxDepth, maxAliases, maxFields, maxRepeats } = GRAPHQL_LIMITS;
      if (repeats > maxRepeats)
        context.reportError(tooBig(`the query repeats the same fields too often to be checked (${repeats} times); select each field once`));
      if (depth > maxDepth) context.reportError(tooBig(`the query is ${depth} levels deep; at most ${maxDepth} are allowed`));
      if (aliases > maxAliases)
        context.reportError(tooBig(`the query has ${aliases} aliases (fragments counted at every use); at most ${maxAliases} are allowed`));
      if (fields > maxFields)
        context.reportError(tooBig(`the query selects ${fields} fields (fragments counted at every use); at most ${maxFields} are allowed`));
    },
  };
}

/**
 * Cost ≈ records answered: a scalar costs nothing, an object 1 plus what it selects, and a page
 * field (UserPage, …) 1 plus its page size (default 20) times what one record of it selects.
 * A page of 50 users with their applications, roles and tokens (nested pages of 20) costs 4 201.
 */
const pageCost: ComplexityEstimator = ({ args, childComplexity, field }) => {
  const type = getNamedType(field.type);
  if (isLeafType(type)) return 0;
  // A subgraph's `_entities` (src/graphql/federation.ts) answers one record per representation.
  if (field.name === '_entities' && Array.isArray(args.representations)) return 1 + args.representations.length * Math.max(childComplexity, 1);
  const paged = type.name.endsWith('Page') || type.name.endsWith('Connection');
  if (!paged) return 1 + childComplexity;
  const asked = [args.pageSize, args.first, args.last].find((n) => typeof n === 'number' && n > 0) as number | undefined;
  // The size the list will use: above the largest page, the largest (list.ts clamps the same way).
  const size = Math.min(asked ?? LIST_LIMITS.defaultPageSize, LIST_LIMITS.maxPageSize);
  return 1 + size * Math.max(childComplexity, 1);
};

/** The arguments whose values change a document's cost (see pageCost). */
const SIZE_ARGUMENTS = new Set(['pageSize', 'first', 'last', 'representations']);

/** Whether an operation's cost depends on its variables: a variable given as a page size. */
function costDependsOnVariables(document: DocumentNode): boolean {
  let depends = false;
  visit(document, {
    Argument(node) {
      if (SIZE_ARGUMENTS.has(node.name.value) && node.value.kind === Kind.VARIABLE) depends = true;
    },
  });
  return depends;
}

/**
 * Costs already computed, per parsed document (the gate keeps one parsed document per query text)
 * and operation name: the walk is paid once per document unless variables set page sizes.
 */
const knownCosts = new WeakMap<DocumentNode, Map<string, number | 'per-request'>>();

/**
 * The error of an operation whose cost is over the limit, or null (also null when the variables do
 * not coerce: nothing will run, and execution answers BAD_USER_INPUT).
 */
export function costProblem(
  schema: GraphQLSchema,
  document: DocumentNode,
  variables: Record<string, unknown>,
  operationName: string | null,
): GraphQLError | null {
  let byOperation = knownCosts.get(document);
  if (!byOperation) knownCosts.set(document, (byOperation = new Map()));
  const key = operationName ?? '';
  let known = byOperation.get(key);
  if (known === undefined && costDependsOnVariables(document)) byOperation.set(key, (known = 'per-request'));
  if (typeof known === 'number') return null; // under the limit: only such costs are remembered
  let cost: number;
  try {
    cost = getComplexity({ schema, query: document, variables, operationName: operationName ?? undefined, estimators: [pageCost] });
  } catch (err) {
    if (err instanceof GraphQLError) return null;
    throw err;
  }
  if (known === undefined && cost <= GRAPHQL_LIMITS.maxCost) byOperation.set(key, cost);
  if (cost <= GRAPHQL_LIMITS.maxCost) return null;
  return new GraphQLError(`the query costs ${cost}; at most ${GRAPHQL_LIMITS.maxCost} is allowed (ask for smaller pages)`, {
    extensions: { code: 'GRAPHQL_VALIDATION_FAILED', cost, maxCost: GRAPHQL_LIMITS.maxCost },
  });
}
