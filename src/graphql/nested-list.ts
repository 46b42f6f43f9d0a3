import type { GraphQLResolveInfo } from 'graphql';
import { Args, Ctx, Extensions, FieldResolver, Info, Root, type ClassType } from 'type-graphql';
import { CACHEABLE } from './cacheable.js';
import type { GraphQLContext } from './context.js';
import { PlainResolver } from './plain-resolvers.js';
import { READ_AHEAD, type NestedRead } from './prefetch.js';
import { method, params } from './record-resolver.js';

/**
 * A nested list field on a parent type (`User.applications`, `User.tokensConnection`), declared
 * from one definition: its type, arguments and description with type-graphql (one schema), its
 * resolver (the value its list read ahead, else its batch through the request's loader), and the
 * batch under the `readAhead` extension for the lists of its parents (src/graphql/prefetch.ts). A
 * field declared here cannot be read ahead without being answered from it, nor the reverse.
 */
export interface NestedListField {
  returns: () => ClassType;
  args: () => ClassType;
  description: string;
  /** The field's batch for a list of parents. */
  read: NestedRead;
  /** Whether its answers may be kept by the read cache. */
  cacheable?: boolean;
}

/** The field's resolver. Not `async`: a value read ahead is answered as it is. */
const resolveNested = (read: NestedRead) => (root: { id: number }, args: Record<string, unknown>, ctx: GraphQLContext, info: GraphQLResolveInfo) =>
  ctx.loaders.readyFor(info, root.id) ?? ctx.loaders.byField(info, () => read(ctx, info, args)).load(root.id);

/** Declares `name` on the resolver class of the parent type (nullable: null with its error, the rest of the parent answered). */
export function nestedListField(Resolver_: ClassType, name: string, field: NestedListField): void {
  const d = method(Resolver_, name, resolveNested(field.read));
  params(Resolver_, name, Root(), Args(field.args), Ctx(), Info());
  PlainResolver()(Resolver_.prototype, name, d);
  Extensions({ [READ_AHEAD]: field.read })(Resolver_.prototype, name, d);
  if (field.cacheable) Extensions(CACHEABLE)(Resolver_.prototype, name, d);
  FieldResolver(field.returns, { nullable: true, description: field.description })(Resolver_.prototype, name, d);
}
