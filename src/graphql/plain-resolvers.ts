import { MapperKind, mapSchema } from '@graphql-tools/utils';
import type { GraphQLFieldResolver, GraphQLResolveInfo, GraphQLSchema } from 'graphql';
import { Extensions } from 'type-graphql';
import type { GraphQLContext } from './context.js';

/**
 * Nested fields that run once per parent record (`User.applications` for each of a page's 50
 * users) as plain graphql-js resolvers: `(root, args, context, info)`, arguments as the executor
 * coerced them.
 *
 * type-graphql calls a field resolver through its own wrapper: it copies the parent into a new
 * instance of its object type class, turns the arguments into instances of their input classes,
 * checks them in an `async` step even with validation off, and joins the parameters with
 * `Promise.all`. Measured on a GraphQL page of 50 users with their applications and roles (100
 * such calls), that was ~30 % of the bytes a page allocates. type-graphql has no public switch
 * around it, so such a field still declares its type and arguments with type-graphql (one
 * declaration, one schema) and names its plain resolver with `@PlainResolver(fn)`; the schema
 * built by type-graphql is then mapped with @graphql-tools/utils' public `mapSchema`, which gives
 * each marked field that function as its `resolve`. The decorated method calls the same function,
 * so the field answers the same with or without the mapping.
 */
const PLAIN = 'plainResolver';

/** The field's arguments are its own (plain objects); the parent is the record the parent field answered. */
export type PlainFieldResolver<Root, Args> = (root: Root, args: Args, context: GraphQLContext, info: GraphQLResolveInfo) => unknown;

/** Marks a field resolver to be run as `resolve` itself, without type-graphql's parameter wrapper. */
export function PlainResolver<Root, Args>(resolve: PlainFieldResolver<Root, Args>): MethodDecorator {
  return Extensions({ [PLAIN]: resolve });
}

/** The schema with every field marked by `@PlainResolver` resolved by its plain function. */
export function withPlainResolvers(schema: GraphQLSchema): GraphQLSchema {
  return mapSchema(schema, {
    [MapperKind.OBJECT_FIELD]: (field) => {
      const resolve = field.extensions?.[PLAIN];
      return typeof resolve === 'function' ? { ...field, resolve: resolve as GraphQLFieldResolver<unknown, unknown> } : field;
    },
  });
}
