import { DateTime } from '../graphql/scalars.js';
import type { GraphQLResolveInfo } from 'graphql';
import { Arg, Args, ArgsType, Ctx, Field, ID, Info, InputType, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import { callerOf, type GraphQLContext } from '../graphql/context.js';
import { inInput } from '../graphql/errors.js';
import { DateTimeFilter, DELETED_ARG, DELETED_AT, DeletedRecords, IDFilter, listInput, SortDirection, StringFilter } from '../graphql/filters.js';
import { PageArgs, PageType } from '../graphql/page.js';
import type { Services } from '../services.js';
import { selects } from '../graphql/selection.js';
import { ConnectionArgs, connectionInput, ConnectionType } from '../graphql/connection.js';

/**
 * The GraphQL side of a named record (Application, Role): its type, page, inputs, filter, order,
 * and the queries and mutations `<plural>`, `<singular>(id)`, `create…`, `update…`, `patch…`,
 * `destroy…`, all over the record's service.
 */
export function namedRecordGraphQL(names: { type: 'Application' | 'Role'; service: 'applications' | 'roles' }) {
  const { type } = names;
  const singular = type.toLowerCase();
  const serviceOf = (ctx: GraphQLContext) => ctx.services[names.service] as Services['applications'];

  @ObjectType(type)
  class RecordType {
    @Field(() => ID) id!: number;
    @Field(() => String) name!: string;
    @Field(() => DateTime, { description: 'When it was created (set by the service).' }) createdAt!: string;
    @Field(() => DateTime, { description: 'When it last changed (set by the service).' }) updatedAt!: string;
    @Field(() => DateTime, { nullable: true, description: DELETED_AT }) deletedAt?: string | null;
  }

  @ObjectType(`${type}Page`)
  class RecordPage extends PageType(RecordType) {}

  @ObjectType(`${type}Connection`)
  class RecordConnection extends ConnectionType(RecordType, type) {}

  @InputType(`${type}Input`)
  class RecordInput {
    @Field(() => String) name!: string;
  }

  @InputType(`${type}Patch`, { description: 'The fields to change; fields left out stay as they are.' })
  class RecordPatch {
    @Field(() => String, { nullable: true }) name?: string;
  }

  @InputType(`${type}Filter`, { description: `Conditions on ${singular}s; sibling fields are and-ed.` })
  class RecordFilter {
    @Field(() => IDFilter, { nullable: true }) id?: IDFilter;
    @Field(() => StringFilter, { nullable: true }) name?: StringFilter;
    @Field(() => DateTimeFilter, { nullable: true }) createdAt?: DateTimeFilter;
    @Field(() => DateTimeFilter, { nullable: true }) updatedAt?: DateTimeFilter;
    @Field(() => [RecordFilter], { nullable: true }) and?: RecordFilter[];
    @Field(() => [RecordFilter], { nullable: true }) or?: RecordFilter[];
    @Field(() => RecordFilter, { nullable: true }) not?: RecordFilter;
  }

  @InputType(`${type}OrderBy`, { description: 'One sort key: set exactly one field.' })
  class RecordOrderBy {
    @Field(() => SortDirection, { nullable: true }) id?: SortDirection;
    @Field(() => SortDirection, { nullable: true }) name?: SortDirection;
    @Field(() => SortDirection, { nullable: true }) createdAt?: SortDirection;
    @Field(() => SortDirection, { nullable: true }) updatedAt?: SortDirection;
  }

  @ArgsType()
  class RecordListArgs extends PageArgs {
    @Field(() => RecordFilter, { nullable: true }) filter?: RecordFilter;
    @Field(() => [RecordOrderBy], { nullable: true }) orderBy?: RecordOrderBy[];
    @Field(() => DeletedRecords, { nullable: true, description: DELETED_ARG }) deleted?: DeletedRecords;
  }

  @ArgsType()
  class RecordConnectionArgs extends ConnectionArgs {
    @Field(() => RecordFilter, { nullable: true }) filter?: RecordFilter;
    @Field(() => [RecordOrderBy], { nullable: true }) orderBy?: RecordOrderBy[];
    @Field(() => DeletedRecords, { nullable: true, description: DELETED_ARG }) deleted?: DeletedRecords;
  }

  @Resolver(() => RecordType)
  class RecordResolver {
    @Query(() => RecordPage, { name: `${singular}s` })
    async list(@Args(() => RecordListArgs) args: RecordListArgs, @Ctx() ctx: GraphQLContext, @Info() info: GraphQLResolveInfo) {
      return serviceOf(ctx).list(callerOf(ctx), listInput(args), { count: selects(info, 'total') });
    }

    @Query(() => RecordConnection, { name: `${singular}sConnection`, description: `${type}s as keyset pages (Relay connection): first/after or last/before.` })
    async connection(@Args(() => RecordConnectionArgs) args: RecordConnectionArgs, @Ctx() ctx: GraphQLContext, @Info() info: GraphQLResolveInfo) {
      return serviceOf(ctx).connection(callerOf(ctx), connectionInput(args), { count: selects(info, 'totalCount') });
    }

    @Query(() => RecordType, { name: singular, nullable: true, description: `null when there is no live ${singular} with this id.` })
    async one(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext) {
      return serviceOf(ctx).find(callerOf(ctx), id);
    }

    @Mutation(() => RecordType, { name: `create${type}` })
    async create(@Arg('input', () => RecordInput) input: RecordInput, @Ctx() ctx: GraphQLContext) {
      return inInput(serviceOf(ctx).create(callerOf(ctx), input));
    }

    @Mutation(() => RecordType, { name: `update${type}`, description: 'Replaces every writable field.' })
    async replace(@Arg('id', () => ID) id: string, @Arg('input', () => RecordInput) input: RecordInput, @Ctx() ctx: GraphQLContext) {
      return (await inInput(serviceOf(ctx).replace(callerOf(ctx), id, input))).record;
    }

    @Mutation(() => RecordType, { name: `patch${type}`, description: 'Changes only the fields given.' })
    async patch(@Arg('id', () => ID) id: string, @Arg('input', () => RecordPatch) input: RecordPatch, @Ctx() ctx: GraphQLContext) {
      return inInput(serviceOf(ctx).patch(callerOf(ctx), id, input));
    }

    @Mutation(() => Boolean, { name: `destroy${type}` })
    async destroy(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext) {
      await serviceOf(ctx).destroy(callerOf(ctx), id);
      return true;
    }

    @Mutation(() => RecordType, {
      name: `restore${type}`,
      description: `Brings a deleted ${singular} back (its name must not be taken by a live one); its links stay deleted.`,
    })
    async restore(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext) {
      return serviceOf(ctx).restore(callerOf(ctx), id);
    }
  }

  return { RecordType, RecordPage, RecordConnection, RecordFilter, RecordOrderBy, RecordListArgs, RecordConnectionArgs, RecordResolver };
}
