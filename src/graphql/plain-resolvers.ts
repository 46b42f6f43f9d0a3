import { MapperKind, mapSchema } from '@graphql-tools/utils';
import type { GraphQLFieldResolver, GraphQLSchema } from 'graphql';
import { Extensions } from 'type-graphql';

/**
 * Nested fields that run once per parent record (`User.applications` for each of a page's 50
 * users), and the standard root fields of a record type (src/graphql/record-resolver.ts), run as
 * plain graphql-js resolvers: the method is called as `(root, args, context, info)`,
 * with the arguments as the executor coerced them.
 *
 * type-graphql calls a resolver method through its own wrapper: for each call it sorts the
 * parameter list, turns the arguments into instances of their input classes, checks them in an
 * `async` step even with validation off, and joins the parameters with `Promise.all`. On a GraphQL
 * page of 50 users with their applications and roles (100 such calls) that was ~30 % of the bytes
 * a page allocated (a sampling heap profile); without it the page serves 15–20 % more requests a
 * second (docs/benchmarks.md). type-graphql has no public switch around the wrapper, so such a
 * field keeps declaring its type and arguments with type-graphql (one declaration, one schema) and
 * is marked `@PlainResolver()`; the schema type-graphql builds is then mapped with
 * @graphql-tools/utils' public `mapSchema`, which makes the marked method the field's `resolve`.
 *
 * So the method's parameters must be `@Root()`, `@Args(…)`, `@Ctx()`, `@Info()` in that order
 * (graphql-js's), it must not use `this`, and type-graphql's middlewares and `@Authorized` do not
 * run for it (the service uses neither: permissions are checked in the resolver). The method is
 * taken as it is defined: no decorator may replace it.
 */
const PLAIN = 'plainResolver';

/** Marks a resolver method (root, args, context, info) to be the field's `resolve` itself. */
export function PlainResolver(): MethodDecorator {
  return (prototype, name, descriptor) => {
    if (typeof descriptor.value !== 'function') throw new Error(`@PlainResolver() marks a method, not ${String(name)}`);
    Extensions({ [PLAIN]: descriptor.value })(prototype, name, descriptor);
  };
}

/**
 * Makes `resolve` (graphql-js's `(root, args, context, info)`) the field's resolver: for a field
 * declared with type-graphql whose method takes its own parameters (src/graphql/record-resolver.ts's
 * root fields adapt theirs).
 */
export function plainResolve(prototype: object, name: string, resolve: GraphQLFieldResolver<unknown, unknown>): void {
  Extensions({ [PLAIN]: resolve })(prototype, name);
}

/** The schema with every field marked by `@PlainResolver()` resolved by its method. */
export function withPlainResolvers(schema: GraphQLSchema): GraphQLSchema {
  return mapSchema(schema, {
    [MapperKind.OBJECT_FIELD]: (field) => {
      const resolve = field.extensions?.[PLAIN];
      return typeof resolve === 'function' ? { ...field, resolve: resolve as GraphQLFieldResolver<unknown, unknown> } : field;
    },
  });
}
