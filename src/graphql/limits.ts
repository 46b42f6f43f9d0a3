import type { ApolloServerPlugin } from '@apollo/server';
import {
  GraphQLError,
  Kind,
  type ASTVisitor,
  type FragmentDefinitionNode,
  type SelectionSetNode,
  type ValidationContext,
} from 'graphql';
import { getComplexity, simpleEstimator, type ComplexityEstimator } from 'graphql-query-complexity';
import type { GraphQLContext } from './context.js';

/**
 * Abuse limits of SPEC §7. The cost limit leaves room for SPEC §7's batching case: a page of 50
 * users with their applications, roles and tokens at the default nested page size costs about 10 000.
 */
export const GRAPHQL_LIMITS = { maxDepth: 10, maxAliases: 100, maxCost: 20_000 } as const;

const badRequest = (message: string) => new GraphQLError(message, { extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } });

function depthOf(set: SelectionSetNode | undefined, fragments: Record<string, FragmentDefinitionNode>, seen: Set<string>): number {
  if (!set) return 0;
  let deepest = 0;
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) {
      if (selection.name.value.startsWith('__')) continue; // introspection meta-fields
      deepest = Math.max(deepest, selection.selectionSet ? 1 + depthOf(selection.selectionSet, fragments, seen) : 1);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      deepest = Math.max(deepest, depthOf(selection.selectionSet, fragments, seen));
    } else {
      const name = selection.name.value;
      if (seen.has(name) || !fragments[name]) continue; // cycles are reported by graphql's own rule
      deepest = Math.max(deepest, depthOf(fragments[name].selectionSet, fragments, new Set(seen).add(name)));
    }
  }
  return deepest;
}

/** Query depth: `{ users { data { applications { data { application { id } } } } } }` is 6. */
export function depthLimitRule(context: ValidationContext): ASTVisitor {
  const fragments: Record<string, FragmentDefinitionNode> = {};
  for (const def of context.getDocument().definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments[def.name.value] = def;
  return {
    OperationDefinition(node) {
      const depth = depthOf(node.selectionSet, fragments, new Set());
      if (depth > GRAPHQL_LIMITS.maxDepth) {
        context.reportError(badRequest(`the query is ${depth} levels deep; at most ${GRAPHQL_LIMITS.maxDepth} are allowed`));
      }
    },
  };
}

export function aliasLimitRule(context: ValidationContext): ASTVisitor {
  let aliases = 0;
  return {
    Field(node) {
      if (node.alias) aliases += 1;
    },
    Document: {
      leave() {
        if (aliases > GRAPHQL_LIMITS.maxAliases) {
          context.reportError(badRequest(`the query has ${aliases} aliases; at most ${GRAPHQL_LIMITS.maxAliases} are allowed`));
        }
      },
    },
  };
}

/** A list field costs its items' cost times the page size it asks for (default 20). */
const pageEstimator: ComplexityEstimator = ({ args, childComplexity, field }) => {
  const returns = String(field.type);
  if (!/Page!?$/.test(returns)) return undefined;
  const size = typeof args.pageSize === 'number' && args.pageSize > 0 ? args.pageSize : 20;
  return 1 + size * Math.max(childComplexity, 1);
};

/** Rejects an operation whose estimated cost is over the limit, before it runs. */
export function costLimitPlugin(): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ request, document, schema }) {
          let cost: number;
          try {
            cost = getComplexity({
              schema,
              query: document,
              variables: request.variables ?? {},
              operationName: request.operationName ?? undefined,
              estimators: [pageEstimator, simpleEstimator({ defaultComplexity: 1 })],
            });
          } catch (err) {
            // Variables that do not coerce: nothing will run, and execution answers BAD_USER_INPUT (400).
            if (err instanceof GraphQLError) return;
            throw err;
          }
          if (cost > GRAPHQL_LIMITS.maxCost) {
            throw new GraphQLError(`the query costs ${cost}; at most ${GRAPHQL_LIMITS.maxCost} is allowed (ask for smaller pages)`, {
              extensions: { code: 'GRAPHQL_VALIDATION_FAILED', cost, maxCost: GRAPHQL_LIMITS.maxCost, http: { status: 400 } },
            });
          }
        },
      };
    },
  };
}
