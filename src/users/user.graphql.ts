import { SafeIntResolver } from 'graphql-scalars';
import { DateTime } from '../graphql/scalars.js';
import type { GraphQLResolveInfo } from 'graphql';
import { Arg, Args, ArgsType, Ctx, Field, ID, Info, InputType, Int, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import { callerOf, type GraphQLContext } from '../graphql/context.js';
import { inInput } from '../graphql/errors.js';
import {
  DateTimeFilter,
  DELETED_ARG,
  DELETED_AT,
  DeletedRecords,
  IDFilter,
  IntFilter,
  listInput,
  SafeIntFilter,
  SortDirection,
  StringFilter,
} from '../graphql/filters.js';
import { PageArgs, PageType } from '../graphql/page.js';
import { selects } from '../graphql/selection.js';
import { ConnectionArgs, connectionInput, ConnectionType } from '../graphql/connection.js';

@ObjectType('User')
export class UserType {
  @Field(() => ID) id!: number;
  @Field(() => SafeIntResolver) ref!: number;
  @Field(() => String, { nullable: true }) outKey!: string | null;
  @Field(() => String) firstName!: string;
  @Field(() => String) lastName!: string;
  @Field(() => String, { nullable: true }) avatarUrl!: string | null;
  @Field(() => String, { nullable: true }) photoUrl!: string | null;
  @Field(() => Int) status!: number;
  @Field(() => DateTime, { description: 'When it was created (set by the service).' }) createdAt!: string;
  @Field(() => DateTime, { description: 'When it last changed (set by the service).' }) updatedAt!: string;
  @Field(() => DateTime, { nullable: true, description: DELETED_AT }) deletedAt?: string | null;
}

@ObjectType()
export class UserPage extends PageType(UserType) {}

@ObjectType()
export class UserConnection extends ConnectionType(UserType, 'User') {}

@InputType({ description: 'Every writable field of a user; absent optional fields take their defaults.' })
export class UserInput {
  @Field(() => SafeIntResolver, { nullable: true }) ref?: number;
  @Field(() => String, { nullable: true }) outKey?: string | null;
  @Field(() => String) firstName!: string;
  @Field(() => String) lastName!: string;
  @Field(() => String, { nullable: true }) avatarUrl?: string | null;
  @Field(() => String, { nullable: true }) photoUrl?: string | null;
  @Field(() => Int, { nullable: true }) status?: number;
}

@InputType({ description: 'The fields to change; fields left out stay as they are.' })
export class UserPatch {
  @Field(() => SafeIntResolver, { nullable: true }) ref?: number;
  @Field(() => String, { nullable: true }) outKey?: string | null;
  @Field(() => String, { nullable: true }) firstName?: string;
  @Field(() => String, { nullable: true }) lastName?: string;
  @Field(() => String, { nullable: true }) avatarUrl?: string | null;
  @Field(() => String, { nullable: true }) photoUrl?: string | null;
  @Field(() => Int, { nullable: true }) status?: number;
}

@InputType({ description: 'Conditions on users; sibling fields are and-ed.' })
export class UserFilter {
  @Field(() => IDFilter, { nullable: true }) id?: IDFilter;
  @Field(() => SafeIntFilter, { nullable: true }) ref?: SafeIntFilter;
  @Field(() => StringFilter, { nullable: true }) outKey?: StringFilter;
  @Field(() => StringFilter, { nullable: true }) firstName?: StringFilter;
  @Field(() => StringFilter, { nullable: true }) lastName?: StringFilter;
  @Field(() => StringFilter, { nullable: true }) avatarUrl?: StringFilter;
  @Field(() => StringFilter, { nullable: true }) photoUrl?: StringFilter;
  @Field(() => IntFilter, { nullable: true }) status?: IntFilter;
  @Field(() => DateTimeFilter, { nullable: true }) createdAt?: DateTimeFilter;
  @Field(() => DateTimeFilter, { nullable: true }) updatedAt?: DateTimeFilter;
  @Field(() => [UserFilter], { nullable: true }) and?: UserFilter[];
  @Field(() => [UserFilter], { nullable: true }) or?: UserFilter[];
  @Field(() => UserFilter, { nullable: true }) not?: UserFilter;
}

@InputType({ description: 'One sort key: set exactly one field.' })
export class UserOrderBy {
  @Field(() => SortDirection, { nullable: true }) id?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) ref?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) outKey?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) firstName?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) lastName?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) avatarUrl?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) photoUrl?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) status?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) createdAt?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) updatedAt?: SortDirection;
}

@ArgsType()
class UserListArgs extends PageArgs {
  @Field(() => UserFilter, { nullable: true }) filter?: UserFilter;
  @Field(() => [UserOrderBy], { nullable: true }) orderBy?: UserOrderBy[];
  @Field(() => DeletedRecords, { nullable: true, description: DELETED_ARG }) deleted?: DeletedRecords;
}

@ArgsType()
class UserConnectionArgs extends ConnectionArgs {
  @Field(() => UserFilter, { nullable: true }) filter?: UserFilter;
  @Field(() => [UserOrderBy], { nullable: true }) orderBy?: UserOrderBy[];
  @Field(() => DeletedRecords, { nullable: true, description: DELETED_ARG }) deleted?: DeletedRecords;
}

/** Users over GraphQL: each field parses its arguments, calls the user service, presents the result. */
@Resolver(() => UserType)
export class UserResolver {
  @Query(() => UserPage)
  async users(@Args(() => UserListArgs) args: UserListArgs, @Ctx() ctx: GraphQLContext, @Info() info: GraphQLResolveInfo) {
    return ctx.services.users.list(callerOf(ctx), listInput(args), { count: selects(info, 'total') });
  }

  @Query(() => UserConnection, { description: 'Users as keyset pages (Relay connection): first/after or last/before.' })
  async usersConnection(@Args(() => UserConnectionArgs) args: UserConnectionArgs, @Ctx() ctx: GraphQLContext, @Info() info: GraphQLResolveInfo) {
    return ctx.services.users.connection(callerOf(ctx), connectionInput(args), { count: selects(info, 'totalCount') });
  }

  @Query(() => UserType, { nullable: true, description: 'null when there is no live user with this id.' })
  async user(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext) {
    return ctx.services.users.find(callerOf(ctx), id);
  }

  @Mutation(() => UserType)
  async createUser(@Arg('input', () => UserInput) input: UserInput, @Ctx() ctx: GraphQLContext) {
    return inInput(ctx.services.users.create(callerOf(ctx), input));
  }

  @Mutation(() => UserType, { description: 'Replaces every writable field; creates the user on an id reserved by applyUserID.' })
  async updateUser(@Arg('id', () => ID) id: string, @Arg('input', () => UserInput) input: UserInput, @Ctx() ctx: GraphQLContext) {
    return (await inInput(ctx.services.users.replace(callerOf(ctx), id, input))).record;
  }

  @Mutation(() => UserType, { description: 'Changes only the fields given.' })
  async patchUser(@Arg('id', () => ID) id: string, @Arg('input', () => UserPatch) input: UserPatch, @Ctx() ctx: GraphQLContext) {
    return inInput(ctx.services.users.patch(callerOf(ctx), id, input));
  }

  @Mutation(() => UserType)
  async updateUserStatus(@Arg('id', () => ID) id: string, @Arg('status', () => Int) status: number, @Ctx() ctx: GraphQLContext) {
    return ctx.services.users.updateStatus(callerOf(ctx), id, { status });
  }

  @Mutation(() => Boolean)
  async destroyUser(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext) {
    await ctx.services.users.destroy(callerOf(ctx), id);
    return true;
  }

  @Mutation(() => UserType, { description: 'Brings a deleted user back; its tokens and links stay deleted.' })
  async restoreUser(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext) {
    return ctx.services.users.restore(callerOf(ctx), id);
  }

  @Mutation(() => ID, { description: 'Reserves the next user id; updateUser on it creates the user.' })
  async applyUserID(@Ctx() ctx: GraphQLContext) {
    return String(await ctx.services.users.applyId(callerOf(ctx)));
  }
}
