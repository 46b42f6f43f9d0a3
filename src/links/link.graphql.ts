import type { GraphQLResolveInfo } from 'graphql';
import { SafeIntResolver } from 'graphql-scalars';
import {
  Args,
  ArgsType,
  Ctx,
  Extensions,
  Field,
  FieldResolver,
  ID,
  Info,
  InputType,
  Int,
  Mutation,
  ObjectType,
  Query,
  Resolver,
  Root,
  type ClassType,
} from 'type-graphql';
import { applications } from '../applications/application.resource.js';
import { requirePermission } from '../auth/caller.js';
import { CACHEABLE } from '../graphql/cacheable.js';
import { ConnectionArgs, connectionInput, ConnectionType } from '../graphql/connection.js';
import { callerOf, type GraphQLContext } from '../graphql/context.js';
import { DateTimeFilter, IDFilter, listInput, SafeIntFilter, SortDirection, StringFilter } from '../graphql/filters.js';
import { PageArgs, PageType } from '../graphql/page.js';
import { PlainResolver } from '../graphql/plain-resolvers.js';
import { DateTime } from '../graphql/scalars.js';
import { CONNECTION_RECORDS, PAGE_RECORDS, selectedFields, selects } from '../graphql/selection.js';
import { compileKeyset } from '../list/keyset.js';
import { compileList } from '../list/list.js';
import { parseId } from '../resource/input.js';
import { namedTypes } from '../graphql/named.js';
import type { GraphQLApi } from '../module/module.js';
import { roles } from '../roles/role.resource.js';
import { userTypes } from '../users/user.graphql.js';
import type { UserRecord } from '../users/user.resource.js';
import { APPLICATION_LINK_LIST_FIELDS, parseIdList, USER_ROLE_LIST_FIELDS, type LinkService } from './link.service.js';

/** A GraphQL ID list as the link service takes it: digits become numbers; anything else is left for the check to refuse. */
const idValues = (ids: readonly string[]) => ids.map((id) => (/^[1-9]\d{0,15}$/.test(id) ? Number(id) : id));

/**
 * Links over GraphQL: `userApplication`, the link mutations, and the nested `User.applications(…)`
 * and `User.roles(…)` (one statement for a whole page of users), over the same link service as
 * /user/{id}/application/ and /role/. Built in a function: type-graphql's metadata is global, and
 * the schema lists operations in the order they are defined.
 */
export function linkResolvers(api: GraphQLApi<LinkService>): ClassType[] {
  const Application = namedTypes(applications);
  const Role = namedTypes(roles);

  @ObjectType('ApplicationLink', { description: 'A user’s link to an application, with its right.', simpleResolvers: true })
  class ApplicationLinkType {
    @Field(() => ID) @Extensions(CACHEABLE) applicationID!: number;
    @Field(() => ID) @Extensions(CACHEABLE) userID!: number;
    @Field(() => SafeIntResolver, { description: 'The original service’s RBAC bit mask: any safe integer.' }) @Extensions(CACHEABLE) right!: number;
    @Field(() => DateTime, { description: 'When it was created (set by the service).' }) @Extensions(CACHEABLE) createdAt!: string;
    @Field(() => DateTime, { description: 'When it last changed (set by the service).' }) @Extensions(CACHEABLE) updatedAt!: string;
    @Field(() => Application.Type) @Extensions(CACHEABLE) application!: object;
  }

  @ObjectType({ simpleResolvers: true })
  class ApplicationLinkPage extends PageType(ApplicationLinkType, true) {}

  @ObjectType({ simpleResolvers: true })
  class ApplicationLinkConnection extends ConnectionType(ApplicationLinkType, 'ApplicationLink', true) {}

  @InputType({ description: 'Conditions on a user’s application links: the application’s id and name; the link’s right and dates.' })
  class ApplicationLinkFilter {
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
  class ApplicationLinkOrderBy {
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

  // Arguments as ArgsType classes: their fields keep the order they are declared in.
  @ArgsType()
  class UserApplicationArgs {
    @Field(() => ID) userID!: string;
    @Field(() => ID) applicationID!: string;
  }

  @ArgsType()
  class LinkApplicationsArgs {
    @Field(() => ID) id!: string;
    @Field(() => [ID]) applicationIDs!: string[];
  }

  @ArgsType()
  class LinkRolesArgs {
    @Field(() => ID) id!: string;
    @Field(() => [ID]) roleIDs!: string[];
  }

  @ArgsType()
  class LinkRightArgs {
    @Field(() => ID) id!: string;
    @Field(() => ID) applicationID!: string;
    @Field(() => SafeIntResolver) right!: number;
  }

  @Resolver(() => ApplicationLinkType)
  class LinkResolver {
    @Query(() => ApplicationLinkType, { nullable: true, description: 'null when the user is not linked to the application.' })
    @Extensions(CACHEABLE)
    async userApplication(@Args(() => UserApplicationArgs) args: UserApplicationArgs, @Ctx() ctx: GraphQLContext) {
      const caller = callerOf(ctx);
      requirePermission(caller, 'user:read');
      const userId = parseId(args.userID, 'userID');
      const applicationId = parseId(args.applicationID, 'applicationID');
      return api.service(ctx).findApplicationLink(caller, ctx.sql, userId, applicationId);
    }

    @Mutation(() => Int, { description: 'Links the applications; answers how many links were created.' })
    async linkUserApplications(@Args(() => LinkApplicationsArgs) args: LinkApplicationsArgs, @Ctx() ctx: GraphQLContext) {
      const caller = callerOf(ctx);
      requirePermission(caller, 'user:write');
      const userId = parseId(args.id);
      return api.service(ctx).linkApplications(caller, ctx.sql, userId, parseIdList(idValues(args.applicationIDs), 'applicationIDs'));
    }

    @Mutation(() => Int, { description: 'Unlinks the applications; answers how many links were removed.' })
    async unlinkUserApplications(@Args(() => LinkApplicationsArgs) args: LinkApplicationsArgs, @Ctx() ctx: GraphQLContext) {
      const caller = callerOf(ctx);
      requirePermission(caller, 'user:write');
      const userId = parseId(args.id);
      return api.service(ctx).unlinkApplications(caller, ctx.sql, userId, parseIdList(idValues(args.applicationIDs), 'applicationIDs'));
    }

    @Mutation(() => ApplicationLinkType, { description: 'Sets the right of an existing link (never creates one).' })
    async updateUserApplication(@Args(() => LinkRightArgs) args: LinkRightArgs, @Ctx() ctx: GraphQLContext) {
      const caller = callerOf(ctx);
      requirePermission(caller, 'user:write');
      const userId = parseId(args.id);
      const applicationId = parseId(args.applicationID, 'applicationID');
      return api.service(ctx).updateApplicationLink(caller, ctx.sql, userId, applicationId, args.right);
    }

    @Mutation(() => Int, { description: 'Links the roles; answers how many links were created.' })
    async linkUserRoles(@Args(() => LinkRolesArgs) args: LinkRolesArgs, @Ctx() ctx: GraphQLContext) {
      const caller = callerOf(ctx);
      requirePermission(caller, 'user:write');
      const userId = parseId(args.id);
      return api.service(ctx).linkRoles(caller, ctx.sql, userId, parseIdList(idValues(args.roleIDs), 'roleIDs'));
    }

    @Mutation(() => Int, { description: 'Unlinks the roles; answers how many links were removed.' })
    async unlinkUserRoles(@Args(() => LinkRolesArgs) args: LinkRolesArgs, @Ctx() ctx: GraphQLContext) {
      const caller = callerOf(ctx);
      requirePermission(caller, 'user:write');
      const userId = parseId(args.id);
      return api.service(ctx).unlinkRoles(caller, ctx.sql, userId, parseIdList(idValues(args.roleIDs), 'roleIDs'));
    }
  }

  const forbidden = 'null (with a FORBIDDEN error) when the token lacks user:read; the rest of the user still comes back.';

  /** User.applications(…) and User.roles(…): one statement each for a whole page of users. */
  @Resolver(() => userTypes().Type)
  class UserLinksResolver {
    @FieldResolver(() => ApplicationLinkPage, { nullable: true, description: forbidden })
    @Extensions(CACHEABLE)
    @PlainResolver()
    async applications(
      @Root() user: UserRecord,
      @Args(() => ApplicationLinkListArgs) args: object,
      @Ctx() ctx: GraphQLContext,
      @Info() info: GraphQLResolveInfo,
    ) {
      return ctx.loaders
        .byField(info, () => {
          requirePermission(callerOf(ctx), 'user:read');
          const list = compileList(listInput(args), APPLICATION_LINK_LIST_FIELDS);
          const count = selects(info, 'total');
          const fields = { link: selectedFields(info, PAGE_RECORDS), application: selectedFields(info, [...PAGE_RECORDS, 'application']) };
          return (caller, sql, ids) => api.service(ctx).listApplicationsForUsers(caller, sql, ids, list, count, fields);
        })
        .load(user.id);
    }

    @FieldResolver(() => Role.Page, { nullable: true, description: forbidden })
    @Extensions(CACHEABLE)
    @PlainResolver()
    async roles(@Root() user: UserRecord, @Args(() => Role.ListArgsWithDeleted) args: object, @Ctx() ctx: GraphQLContext, @Info() info: GraphQLResolveInfo) {
      return ctx.loaders
        .byField(info, () => {
          requirePermission(callerOf(ctx), 'user:read');
          const list = compileList(listInput(args), USER_ROLE_LIST_FIELDS);
          const count = selects(info, 'total');
          const fields = selectedFields(info, PAGE_RECORDS);
          return (caller, sql, ids) => api.service(ctx).listRolesForUsers(caller, sql, ids, list, count, fields);
        })
        .load(user.id);
    }

    @FieldResolver(() => ApplicationLinkConnection, {
      nullable: true,
      description: 'The user’s application links as keyset pages; null (with a FORBIDDEN error) when the token lacks user:read.',
    })
    @Extensions(CACHEABLE)
    @PlainResolver()
    async applicationsConnection(
      @Root() user: UserRecord,
      @Args(() => ApplicationLinkConnectionArgs) args: object,
      @Ctx() ctx: GraphQLContext,
      @Info() info: GraphQLResolveInfo,
    ) {
      return ctx.loaders
        .byField(info, () => {
          requirePermission(callerOf(ctx), 'user:read');
          const keyset = compileKeyset(connectionInput(args), APPLICATION_LINK_LIST_FIELDS);
          const count = selects(info, 'totalCount');
          const fields = { link: selectedFields(info, CONNECTION_RECORDS), application: selectedFields(info, [...CONNECTION_RECORDS, 'application']) };
          return (caller, sql, ids) => api.service(ctx).applicationConnectionsForUsers(caller, sql, ids, keyset, count, fields);
        })
        .load(user.id);
    }

    @FieldResolver(() => Role.Connection, {
      nullable: true,
      description: 'The user’s roles as keyset pages; null (with a FORBIDDEN error) when the token lacks user:read.',
    })
    @Extensions(CACHEABLE)
    @PlainResolver()
    async rolesConnection(
      @Root() user: UserRecord,
      @Args(() => Role.ConnectionArgsWithDeleted) args: object,
      @Ctx() ctx: GraphQLContext,
      @Info() info: GraphQLResolveInfo,
    ) {
      return ctx.loaders
        .byField(info, () => {
          requirePermission(callerOf(ctx), 'user:read');
          const keyset = compileKeyset(connectionInput(args), USER_ROLE_LIST_FIELDS);
          const count = selects(info, 'totalCount');
          const fields = selectedFields(info, CONNECTION_RECORDS);
          return (caller, sql, ids) => api.service(ctx).roleConnectionsForUsers(caller, sql, ids, keyset, count, fields);
        })
        .load(user.id);
    }
  }
  return [LinkResolver, UserLinksResolver];
}
