import { DateTime } from '../graphql/scalars.js';
import type { GraphQLResolveInfo } from 'graphql';
import { Arg, Args, ArgsType, Ctx, Field, FieldResolver, ID, Info, InputType, Int, Mutation, ObjectType, Query, Resolver, Root } from 'type-graphql';
import { callerOf, type GraphQLContext } from '../graphql/context.js';
import { inInput } from '../graphql/errors.js';
import { DateTimeFilter, DELETED_ARG, DELETED_AT, DeletedRecords, IDFilter, listInput, SecretFilter, SortDirection, StringFilter } from '../graphql/filters.js';
import { idValue } from '../graphql/ids.js';
import { PageArgs, PageType } from '../graphql/page.js';
import { selects } from '../graphql/selection.js';
import { ConnectionArgs, connectionInput, ConnectionType } from '../graphql/connection.js';
import { UserType } from '../users/user.graphql.js';
import type { UserRecord } from '../users/user.presenter.js';
import type { TokenRecord } from './token.presenter.js';

@ObjectType('Token')
export class TokenType {
  @Field(() => ID) id!: number;
  @Field(() => ID) userID!: number;
  @Field(() => String) accessToken!: string;
  @Field(() => String) refreshToken!: string;
  @Field(() => String) scope!: string;
  @Field(() => String) code!: string;
  @Field(() => String, { nullable: true }) codeChallenge!: string | null;
  @Field(() => String) tokenType!: string;
  @Field(() => DateTime, { nullable: true }) expireAt!: string | null;
  @Field(() => String) client!: string;
  @Field(() => String, { description: 'The record revision: "1" on create, incremented on every change.' }) version!: string;
  @Field(() => DateTime, { description: 'When it was created (set by the service).' }) createdAt!: string;
  @Field(() => DateTime, { description: 'When it last changed (set by the service).' }) updatedAt!: string;
  @Field(() => DateTime, { nullable: true, description: DELETED_AT }) deletedAt?: string | null;
}

@ObjectType()
export class TokenPage extends PageType(TokenType) {}

@ObjectType()
export class TokenConnection extends ConnectionType(TokenType, 'Token') {}

@InputType({ description: 'Every writable field of a token; absent optional fields take their defaults.' })
export class TokenInput {
  @Field(() => ID) userID!: string;
  @Field(() => String) accessToken!: string;
  @Field(() => String, { nullable: true }) refreshToken?: string;
  @Field(() => String, { nullable: true }) scope?: string;
  @Field(() => String, { nullable: true }) code?: string;
  @Field(() => String, { nullable: true }) codeChallenge?: string | null;
  @Field(() => String, { nullable: true }) tokenType?: string;
  @Field(() => DateTime, { nullable: true }) expireAt?: Date | null;
}

@InputType({ description: 'The fields to change; fields left out stay as they are.' })
export class TokenPatch {
  @Field(() => ID, { nullable: true }) userID?: string;
  @Field(() => String, { nullable: true }) accessToken?: string;
  @Field(() => String, { nullable: true }) refreshToken?: string;
  @Field(() => String, { nullable: true }) scope?: string;
  @Field(() => String, { nullable: true }) code?: string;
  @Field(() => String, { nullable: true }) codeChallenge?: string | null;
  @Field(() => String, { nullable: true }) tokenType?: string;
  @Field(() => DateTime, { nullable: true }) expireAt?: Date | null;
}

@InputType({ description: 'Conditions on tokens; sibling fields are and-ed.' })
export class TokenFilter {
  @Field(() => IDFilter, { nullable: true }) id?: IDFilter;
  @Field(() => IDFilter, { nullable: true }) userID?: IDFilter;
  @Field(() => SecretFilter, { nullable: true }) accessToken?: SecretFilter;
  @Field(() => SecretFilter, { nullable: true }) refreshToken?: SecretFilter;
  @Field(() => StringFilter, { nullable: true }) scope?: StringFilter;
  @Field(() => StringFilter, { nullable: true }) code?: StringFilter;
  @Field(() => StringFilter, { nullable: true }) codeChallenge?: StringFilter;
  @Field(() => StringFilter, { nullable: true }) tokenType?: StringFilter;
  @Field(() => DateTimeFilter, { nullable: true }) expireAt?: DateTimeFilter;
  @Field(() => StringFilter, { nullable: true }) client?: StringFilter;
  @Field(() => IDFilter, { nullable: true, description: 'Compared as a number.' }) version?: IDFilter;
  @Field(() => DateTimeFilter, { nullable: true }) createdAt?: DateTimeFilter;
  @Field(() => DateTimeFilter, { nullable: true }) updatedAt?: DateTimeFilter;
  @Field(() => [TokenFilter], { nullable: true }) and?: TokenFilter[];
  @Field(() => [TokenFilter], { nullable: true }) or?: TokenFilter[];
  @Field(() => TokenFilter, { nullable: true }) not?: TokenFilter;
}

@InputType({ description: 'One sort key: set exactly one field (accessToken and refreshToken are stored encrypted and cannot be sorted on).' })
export class TokenOrderBy {
  @Field(() => SortDirection, { nullable: true }) id?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) userID?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) scope?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) code?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) codeChallenge?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) tokenType?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) expireAt?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) client?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) version?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) createdAt?: SortDirection;
  @Field(() => SortDirection, { nullable: true }) updatedAt?: SortDirection;
}

@ArgsType()
export class TokenListArgs extends PageArgs {
  @Field(() => TokenFilter, { nullable: true }) filter?: TokenFilter;
  @Field(() => [TokenOrderBy], { nullable: true }) orderBy?: TokenOrderBy[];
}

@ArgsType()
export class TokenConnectionArgs extends ConnectionArgs {
  @Field(() => TokenFilter, { nullable: true }) filter?: TokenFilter;
  @Field(() => [TokenOrderBy], { nullable: true }) orderBy?: TokenOrderBy[];
}

@ObjectType('TokenRevocation', { description: 'What a bulk revoke did.' })
export class TokenRevocationType {
  @Field(() => Int, { description: 'Tokens revoked (soft-deleted).' }) revoked!: number;
  @Field(() => Int, { description: 'Matching tokens left alone: their scope is one this token could not have granted.' }) skipped!: number;
}

/** The top-level lists also read deleted tokens; a user's nested tokens are its live ones. */
@ArgsType()
class TokensArgs extends TokenListArgs {
  @Field(() => DeletedRecords, { nullable: true, description: DELETED_ARG }) deleted?: DeletedRecords;
}

@ArgsType()
class TokensConnectionArgs extends TokenConnectionArgs {
  @Field(() => DeletedRecords, { nullable: true, description: DELETED_ARG }) deleted?: DeletedRecords;
}

/** A write input as the token service takes it: the ID-typed userID as a number. */
const tokenBody = (input: TokenInput | TokenPatch) => (input.userID === undefined ? input : { ...input, userID: idValue(input.userID) });

@Resolver(() => TokenType)
export class TokenResolver {
  @Query(() => TokenPage)
  async tokens(@Args(() => TokensArgs) args: TokensArgs, @Ctx() ctx: GraphQLContext, @Info() info: GraphQLResolveInfo) {
    return ctx.services.tokens.list(callerOf(ctx), listInput(args), { count: selects(info, 'total') });
  }

  @Query(() => TokenConnection, { description: 'Tokens as keyset pages (Relay connection): first/after or last/before.' })
  async tokensConnection(@Args(() => TokensConnectionArgs) args: TokensConnectionArgs, @Ctx() ctx: GraphQLContext, @Info() info: GraphQLResolveInfo) {
    return ctx.services.tokens.connection(callerOf(ctx), connectionInput(args), { count: selects(info, 'totalCount') });
  }

  @Query(() => TokenType, { nullable: true, description: 'null when there is no live token with this id.' })
  async token(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext) {
    return ctx.services.tokens.find(callerOf(ctx), id);
  }

  @Query(() => TokenType, { description: 'The token this request was made with.' })
  async viewer(@Ctx() ctx: GraphQLContext) {
    return ctx.services.tokens.viewer(callerOf(ctx));
  }

  @Mutation(() => TokenType)
  async createToken(@Arg('input', () => TokenInput) input: TokenInput, @Ctx() ctx: GraphQLContext) {
    return inInput(ctx.services.tokens.create(callerOf(ctx), tokenBody(input)));
  }

  @Mutation(() => TokenType, { description: 'Replaces every writable field; creates the token on an id reserved by applyTokenID.' })
  async updateToken(@Arg('id', () => ID) id: string, @Arg('input', () => TokenInput) input: TokenInput, @Ctx() ctx: GraphQLContext) {
    return (await inInput(ctx.services.tokens.replace(callerOf(ctx), id, tokenBody(input)))).record;
  }

  @Mutation(() => TokenType, { description: 'Changes only the fields given.' })
  async patchToken(@Arg('id', () => ID) id: string, @Arg('input', () => TokenPatch) input: TokenPatch, @Ctx() ctx: GraphQLContext) {
    return inInput(ctx.services.tokens.patch(callerOf(ctx), id, tokenBody(input)));
  }

  @Mutation(() => Boolean)
  async destroyToken(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext) {
    await ctx.services.tokens.destroy(callerOf(ctx), id);
    return true;
  }

  @Mutation(() => TokenRevocationType, {
    description: 'Revokes every live token matching the filter (an empty filter is refused), except those this token could not have granted.',
  })
  async destroyTokens(@Arg('filter', () => TokenFilter) filter: TokenFilter, @Ctx() ctx: GraphQLContext) {
    return ctx.services.tokens.destroyMatching(callerOf(ctx), listInput({ filter }).filter ?? {});
  }

  @Mutation(() => TokenType, { description: 'Brings a deleted token back (its user must be live, its accessToken not taken).' })
  async restoreToken(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext) {
    return ctx.services.tokens.restore(callerOf(ctx), id);
  }

  @Mutation(() => ID, { description: 'Reserves the next token id; updateToken on it creates the token.' })
  async applyTokenID(@Ctx() ctx: GraphQLContext) {
    return String(await ctx.services.tokens.applyId(callerOf(ctx)));
  }

  @FieldResolver(() => UserType, { nullable: true, description: 'The owning user (batched).' })
  async user(@Root() token: TokenRecord, @Ctx() ctx: GraphQLContext) {
    return ctx.loaders.userById.load(token.userID);
  }
}

/** User.tokens(…): the user's tokens, one statement for a whole page of users. */
@Resolver(() => UserType)
export class UserTokensResolver {
  @FieldResolver(() => TokenPage, { nullable: true, description: 'null (with a FORBIDDEN error) when the token lacks token:read; the rest of the user still comes back.' })
  async tokens(@Root() user: UserRecord, @Args(() => TokenListArgs) args: TokenListArgs, @Ctx() ctx: GraphQLContext, @Info() info: GraphQLResolveInfo) {
    return ctx.loaders.byParent('tokens', listInput(args), selects(info, 'total'), ctx.services.tokens.listForUsers).load(user.id);
  }

  @FieldResolver(() => TokenConnection, { nullable: true, description: 'The user’s tokens as keyset pages; null (with a FORBIDDEN error) when the token lacks token:read.' })
  async tokensConnection(
    @Root() user: UserRecord,
    @Args(() => TokenConnectionArgs) args: TokenConnectionArgs,
    @Ctx() ctx: GraphQLContext,
    @Info() info: GraphQLResolveInfo,
  ) {
    return ctx.loaders.byParent('tokensConnection', connectionInput(args), selects(info, 'totalCount'), ctx.services.tokens.connectionsForUsers).load(user.id);
  }
}
