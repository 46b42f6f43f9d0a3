import type { GraphQLResolveInfo } from 'graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import { Args, ArgsType, Ctx, Field, ID, Info, InputType, ObjectType, Query, Resolver } from 'type-graphql';
import { callerOf, type GraphQLContext } from '../graphql/context.js';
import { DateTimeFilter, IDFilter, listInput, SortDirection, StringFilter } from '../graphql/filters.js';
import { PageArgs, PageType } from '../graphql/page.js';
import { DateTime } from '../graphql/scalars.js';
import { selects } from '../graphql/selection.js';

@ObjectType('AuditEvent', { description: 'One record changed by one successful write (append-only).' })
export class AuditEventType {
  @Field(() => ID) id!: number;
  @Field(() => DateTime) at!: string;
  @Field(() => ID, { nullable: true, description: 'The token that made the write; null for the service’s own writes.' }) actorTokenID!: number | null;
  @Field(() => ID, { nullable: true }) actorUserID!: number | null;
  @Field(() => String, { nullable: true, description: 'The X-Request-Id of the write.' }) requestId!: string | null;
  @Field(() => String, { description: 'create, update, patch, status, delete, link, unlink, right, apply, revoke or restore.' }) action!: string;
  @Field(() => String, { description: 'user, token, application, role, application_link or role_link.' }) resource!: string;
  @Field(() => ID, { description: 'The record (for a link: the user).' }) recordID!: number;
  @Field(() => GraphQLJSONObject, { description: 'The changed fields: {"field": {"before": …, "after": …}}; secrets as "[redacted]".' }) changes!: object;
}

@ObjectType()
export class AuditEventPage extends PageType(AuditEventType) {}

@InputType({ description: 'Conditions on audit events; sibling fields are and-ed.' })
export class AuditEventFilter {
  @Field(() => IDFilter, { nullable: true }) id?: IDFilter;
  @Field(() => DateTimeFilter, { nullable: true }) at?: DateTimeFilter;
  @Field(() => IDFilter, { nullable: true }) actorTokenID?: IDFilter;
  @Field(() => IDFilter, { nullable: true }) actorUserID?: IDFilter;
  @Field(() => StringFilter, { nullable: true }) requestId?: StringFilter;
  @Field(() => StringFilter, { nullable: true }) action?: StringFilter;
  @Field(() => StringFilter, { nullable: true }) resource?: StringFilter;
  @Field(() => IDFilter, { nullable: true }) recordID?: IDFilter;
  @Field(() => [AuditEventFilter], { nullable: true }) and?: AuditEventFilter[];
  @Field(() => [AuditEventFilter], { nullable: true }) or?: AuditEventFilter[];
  @Field(() => AuditEventFilter, { nullable: true }) not?: AuditEventFilter;
}

@InputType({ description: 'One sort key: set exactly one field.' })
export class AuditEventOrderBy {
  @Field(() => SortDirection, { nullable: true }) id?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) at?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) action?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) resource?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) recordID?: SortDirection;
}

@ArgsType()
export class AuditEventListArgs extends PageArgs {
  @Field(() => AuditEventFilter, { nullable: true }) filter?: AuditEventFilter;
  @Field(() => [AuditEventOrderBy], { nullable: true }) orderBy?: AuditEventOrderBy[];
}

@Resolver(() => AuditEventType)
export class AuditResolver {
  @Query(() => AuditEventPage, { description: 'The audit log (needs audit:read).' })
  async auditEvents(@Args(() => AuditEventListArgs) args: AuditEventListArgs, @Ctx() ctx: GraphQLContext, @Info() info: GraphQLResolveInfo) {
    return ctx.services.audit.list(callerOf(ctx), listInput(args), { count: selects(info, 'total') });
  }
}
