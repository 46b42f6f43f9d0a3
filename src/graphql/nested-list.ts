import type { GraphQLResolveInfo } from 'graphql';
import { Args, Ctx, Extensions, FieldResolver, Info, Root, type ClassType } from 'type-graphql';
import type { Permission } from '../auth/caller.js';
import { compileKeyset, type CompiledKeyset } from '../list/keyset.js';
import { compileList, type CompiledList, type ListFields } from '../list/list.js';
import { CACHEABLE } from './cacheable.js';
import { connectionInput } from './connection.js';
import type { GraphQLContext, NestedBatch } from './context.js';
import { listInput } from './filters.js';
import { PlainResolver } from './plain-resolvers.js';
import { READ_AHEAD, type NestedRead } from './prefetch.js';
import { method, params } from './record-resolver.js';
import { selects, type FieldAt } from './selection.js';

/**
 * A parent's list of children over GraphQL (`User.applications`, `User.tokensConnection`), as a
 * page field `<name>` and a keyset connection field `<name>Connection`, declared from one
 * definition: their types, arguments and descriptions with type-graphql (one schema), their
 * resolvers (the value the parents' list read ahead, else the batch through the request's loader),
 * and the batch under the `readAhead` extension for the lists of their parents
 * (src/graphql/prefetch.ts). A field declared here cannot be read ahead without being answered
 * from it, nor the reverse; both kinds parse their arguments and check the permission alike.
 */
export interface NestedLists {
  /** The page field's name; the connection's is `<name>Connection`. */
  name: string;
  types: () => { Page: ClassType; Connection: ClassType; ListArgs: ClassType; ConnectionArgs: ClassType };
  /** What the descriptions name: the parent (`user`), its items (`tokens`, `application links`) and the permission a read needs. */
  parent: string;
  items: string;
  permission: Permission;
  /** Whether the answers may be kept by the read cache. */
  cacheable?: boolean;
  /** The read for one request: the permission checked (throws as the resolver would), the fields its lists filter and order by, and the batches. */
  open(ctx: GraphQLContext): OpenedLists;
}

export interface OpenedLists {
  listFields: ListFields;
  /** Each parent's page; `count`: whether `total` is asked for; `at`: the field's node (for the selection). */
  pages(list: CompiledList, count: boolean, at: FieldAt): NestedBatch<unknown>;
  connections(keyset: CompiledKeyset, count: boolean, at: FieldAt): NestedBatch<unknown>;
}

/** The field's resolver. Not `async`: a value read ahead is answered as it is. */
const resolveNested = (read: NestedRead) => (root: { id: number }, args: Record<string, unknown>, ctx: GraphQLContext, info: GraphQLResolveInfo) =>
  ctx.loaders.readyFor(info, root.id) ?? ctx.loaders.byField(info, () => read(ctx, info, args)).load(root.id);

/** Declares the page field (`kind: 'page'`) or the connection field of `lists` on the resolver class of the parent type (nullable: null with its error, the rest of the parent answered). */
export function nestedListField(Resolver_: ClassType, lists: NestedLists, kind: 'page' | 'connection'): void {
  const page = kind === 'page';
  const name = page ? lists.name : `${lists.name}Connection`;
  const read: NestedRead = page
    ? (ctx, at, args) => {
        const opened = lists.open(ctx);
        return opened.pages(compileList(listInput(args), opened.listFields), selects(at, 'total'), at);
      }
    : (ctx, at, args) => {
        const opened = lists.open(ctx);
        return opened.connections(compileKeyset(connectionInput(args), opened.listFields), selects(at, 'totalCount'), at);
      };
  const lacks = `null (with a FORBIDDEN error) when the token lacks ${lists.permission}`;
  const description = page ? `${lacks}; the rest of the ${lists.parent} still comes back.` : `The ${lists.parent}’s ${lists.items} as keyset pages; ${lacks}.`;
  const d = method(Resolver_, name, resolveNested(read));
  params(
    Resolver_,
    name,
    Root(),
    Args(() => (page ? lists.types().ListArgs : lists.types().ConnectionArgs)),
    Ctx(),
    Info(),
  );
  PlainResolver()(Resolver_.prototype, name, d);
  Extensions({ [READ_AHEAD]: read })(Resolver_.prototype, name, d);
  if (lists.cacheable) Extensions(CACHEABLE)(Resolver_.prototype, name, d);
  FieldResolver(() => (page ? lists.types().Page : lists.types().Connection), { nullable: true, description })(Resolver_.prototype, name, d);
}
