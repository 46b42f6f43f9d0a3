import { DateTime } from '../graphql/scalars.js';
import type { GraphQLResolveInfo } from 'graphql';
import { Arg, Args, ArgsType, Ctx, Field, ID, Info, InputType, Int, Mutation, ObjectType, Query, Resolver, FieldResolver, Root } from 'type-graphql';
import { ApplicationType } from '../applications/application.graphql.js';
import { requirePermission } from '../auth/caller.js';
import { callerOf, type GraphQLContext } from '../graphql/context.js';
import { SafeIntResolver } from 'graphql-scalars';
import { DateTimeFilter, IDFilter, IntFilter, listInput, SafeIntFilter, SortDirection, StringFilter } from '../graphql/filters.js';
import { idValues } from '../graphql/ids.js';
import { PageArgs, PageType } from '../graphql/page.js';
import { RoleConnection, RoleConnectionArgs, RoleListArgs, RolePage } from '../roles/role.graphql.js';
import { parseId } from '../shared/crud.js';
import { AppError } from '../shared/errors.js';
import type { NamedWire } from '../shared/named-record.js';
import { selects } from '../graphql/selection.js';
import { ConnectionArgs, connectionInput, ConnectionType } from '../graphql/connection.js';
import { UserType } from '../users/user.graphql.js';
import type { UserRecord } from '../users/user.presenter.js';

@ObjectType('ApplicationLink', { description: 'A user’s link to an application, with its right.' })
export class ApplicationLinkType {
  @Field(() => ID) applicationID!: number;
  @Field(() => ID) userID!: number;
  @Field(() => SafeIntResolver, { description: 'The original service’s RBAC bit mask: any safe integer.' }) right!: number;
  @Field(() => DateTime, { description: 'When it was created (set by the service).' }) createdAt!: string;
  @Field(() => DateTime, { description: 'When it last changed (set by the service).' }) updatedAt!: string;
  @Field(() => ApplicationType) application!: NamedWire;
}

@ObjectType()
export class ApplicationLinkPage extends PageType(ApplicationLinkType) {}

@ObjectType()
export class ApplicationLinkConnection extends ConnectionType(ApplicationLinkType, 'ApplicationLink') {}

@InputType({ description: 'Conditions on a user’s application links: the application’s id and name; the link’s right and dates.' })
export class ApplicationLinkFilter {
  @Field(() => IDFilter, { nullable: true }) applicationID?: IDFilter;
  @Field(() => StringFilter, { nullable: true, description: 'The application’s name.' }) name?: StringFilter;
  @Field(() => SafeIntFilter, { nullable: true }) right?: SafeIntFilter;
  @Field(() => DateTimeFilter, { nullable: true, description: 'When the link was made.' }) createdAt?: DateTimeFilter;
  @Field(() => DateTimeFilter, { nullable: true, description: 'When the link last changed.' }) updatedAt?: DateTimeFilter;
  @Field(() => [ApplicationLinkFilter], { nullable: true }) and?: ApplicationLinkFilter[];
  @Field(() => [ApplicationLinkFilter], { nullable: true }) or?: ApplicationLinkFilter[];
  @Field(() => ApplicationLinkFilter, { nullable: true }) not?: ApplicationLinkFilter;
}

@InputType({ description: 'One sort key: set exactly one field.' })
export class ApplicationLinkOrderBy {
  @Field(() => SortDirection, { nullable: true }) applicationID?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) name?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) right?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) createdAt?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) updatedAt?: SortDirection;
}

@ArgsType()
class ApplicationLinkListArgs extends PageArgs {
  @Field(() => ApplicationLinkFilter, { nullable: true }) filter?: ApplicationLinkFilter;
  @Field(() => [ApplicationLinkOrderBy], { nullable: true }) orderBy?: ApplicationLinkOrderBy[];
}


@ArgsType()
class ApplicationLinkConnectionArgs extends ConnectionArgs {
  @Field(() => ApplicationLinkFilter, { nullable: true }) filter?: ApplicationLinkFilter;
  @Field(() => [ApplicationLinkOrderBy], { nullable: true }) orderBy?: ApplicationLinkOrderBy[];
}

/** Links over GraphQL: the same link service functions as /user/{id}/application/ and /role/. */
@Resolver(() => ApplicationLinkType)
export class LinkResolver {
  @Query(() => ApplicationLinkType, { nullable: true, description: 'null when the user is not linked to the application.' })
  async userApplication(
    @Arg('userID', () => ID) userID: string,
    @Arg('applicationID', () => ID) applicationID: string,
    @Ctx() ctx: GraphQLContext,
  ) {
    // A malformed userID is named as this argument (the service says "id", its REST path name); 403 still wins over 400.
    requirePermission(callerOf(ctx), 'user:read');
    parseId(userID, 'userID');
    try {
      return await ctx.services.links.getApplicationLink(callerOf(ctx), userID, applicationID);
    } catch (err) {
      if (err instanceof AppError && err.error === 'NOT_FOUND') return null;
      throw err;
    }
  }

  @Mutation(() => Int, { description: 'Links the applications; answers how many links were created.' })
  async linkUserApplications(
    @Arg('id', () => ID) id: string,
    @Arg('applicationIDs', () => [ID]) applicationIDs: string[],
    @Ctx() ctx: GraphQLContext,
  ) {
    return ctx.services.links.linkApplications(callerOf(ctx), id, idValues(applicationIDs));
  }

  @Mutation(() => Int, { description: 'Unlinks the applications; answers how many links were removed.' })
  async unlinkUserApplications(
    @Arg('id', () => ID) id: string,
    @Arg('applicationIDs', () => [ID]) applicationIDs: string[],
    @Ctx() ctx: GraphQLContext,
  ) {
    return ctx.services.links.unlinkApplications(callerOf(ctx), id, idValues(applicationIDs));
  }

  @Mutation(() => ApplicationLinkType, { description: 'Sets the right of an existing link (never creates one).' })
  async updateUserApplication(
    @Arg('id', () => ID) id: string,
    @Arg('applicationID', () => ID) applicationID: string,
    @Arg('right', () => SafeIntResolver) right: number,
    @Ctx() ctx: GraphQLContext,
  ) {
    return ctx.services.links.updateApplicationLink(callerOf(ctx), id, applicationID, { right });
  }

  @Mutation(() => Int, { description: 'Links the roles; answers how many links were created.' })
  async linkUserRoles(@Arg('id', () => ID) id: string, @Arg('roleIDs', () => [ID]) roleIDs: string[], @Ctx() ctx: GraphQLContext) {
    return ctx.services.links.linkRoles(callerOf(ctx), id, idValues(roleIDs));
  }

  @Mutation(() => Int, { description: 'Unlinks the roles; answers how many links were removed.' })
  async unlinkUserRoles(@Arg('id', () => ID) id: string, @Arg('roleIDs', () => [ID]) roleIDs: string[], @Ctx() ctx: GraphQLContext) {
    return ctx.services.links.unlinkRoles(callerOf(ctx), id, idValues(roleIDs));
  }
}


/** User.applications(…) and User.roles(…): one statement each for a whole page of users. */
@Resolver(() => UserType)
export class UserLinksResolver {
  @FieldResolver(() => ApplicationLinkPage, { nullable: true, description: 'null (with a FORBIDDEN error) when the token lacks user:read; the rest of the user still comes back.' })
  async applications(
    @Root() user: UserRecord,
    @Args(() => ApplicationLinkListArgs) args: ApplicationLinkListArgs,
    @Ctx() ctx: GraphQLContext,
    @Info() info: GraphQLResolveInfo,
  ) {
    return ctx.loaders.byParent('applications', listInput(args), selects(info, 'total'), ctx.services.links.listApplicationsForUsers).load(user.id);
  }

  @FieldResolver(() => RolePage, { nullable: true, description: 'null (with a FORBIDDEN error) when the token lacks user:read; the rest of the user still comes back.' })
  async roles(
    @Root() user: UserRecord,
    @Args(() => RoleListArgs) args: InstanceType<typeof RoleListArgs>,
    @Ctx() ctx: GraphQLContext,
    @Info() info: GraphQLResolveInfo,
  ) {
    return ctx.loaders.byParent('roles', listInput(args), selects(info, 'total'), ctx.services.links.listRolesForUsers).load(user.id);
  }

  @FieldResolver(() => ApplicationLinkConnection, { nullable: true, description: 'The user’s application links as keyset pages; null (with a FORBIDDEN error) when the token lacks user:read.' })
  async applicationsConnection(
    @Root() user: UserRecord,
    @Args(() => ApplicationLinkConnectionArgs) args: ApplicationLinkConnectionArgs,
    @Ctx() ctx: GraphQLContext,
    @Info() info: GraphQLResolveInfo,
  ) {
    const input = connectionInput(args);
    return ctx.loaders.byParent('applicationsConnection', input, selects(info, 'totalCount'), ctx.services.links.applicationConnectionsForUsers).load(user.id);
  }

  @FieldResolver(() => RoleConnection, { nullable: true, description: 'The user’s roles as keyset pages; null (with a FORBIDDEN error) when the token lacks user:read.' })
  async rolesConnection(
    @Root() user: UserRecord,
    @Args(() => RoleConnectionArgs) args: InstanceType<typeof RoleConnectionArgs>,
    @Ctx() ctx: GraphQLContext,
    @Info() info: GraphQLResolveInfo,
  ) {
    return ctx.loaders.byParent('rolesConnection', connectionInput(args), selects(info, 'totalCount'), ctx.services.links.roleConnectionsForUsers).load(user.id);
  }
}
