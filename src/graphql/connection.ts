import { ArgsType, Extensions, Field, Int, ObjectType, type ClassType } from 'type-graphql';
import type { RecordConnectionInput } from '../resource/service.js';
import { CACHEABLE } from './cacheable.js';
import { orderKeys, type DeletedRecords } from './filters.js';

/** Relay's page info: where a keyset page sits (what it says depends on the page's records alone: cacheable with them). */
@ObjectType('PageInfo', { simpleResolvers: true })
export class PageInfoType {
  @Field(() => Boolean) @Extensions(CACHEABLE) hasNextPage!: boolean;
  @Field(() => Boolean) @Extensions(CACHEABLE) hasPreviousPage!: boolean;
  @Field(() => String, { nullable: true }) @Extensions(CACHEABLE) startCursor!: string | null;
  @Field(() => String, { nullable: true }) @Extensions(CACHEABLE) endCursor!: string | null;
}

/**
 * `{edges {cursor node} pageInfo totalCount}` for one record type (UserConnection, …): Relay's
 * connection shape over keyset pages, so that page 200 costs what page 1 costs.
 */
export function ConnectionType<T extends object>(item: ClassType<T>, name: string, cacheable = false) {
  const mark = (): PropertyDecorator => (cacheable ? Extensions(CACHEABLE) : () => {});

  @ObjectType(`${name}Edge`, { simpleResolvers: true })
  class Edge {
    @Field(() => String, { description: 'Opaque; pass it as `after` or `before` with the same filter and orderBy.' })
    @mark()
    cursor!: string;

    @Field(() => item)
    @mark()
    node!: T;
  }

  @ObjectType({ simpleResolvers: true }) // abstract: only the concrete subclasses (UserConnection, …) reach the schema
  abstract class Connection {
    @Field(() => [Edge])
    @mark()
    edges!: Edge[];

    @Field(() => PageInfoType)
    @mark()
    pageInfo!: PageInfoType;

    @Field(() => Int, { description: 'How many records match the filter, on all pages (counted only when selected).' })
    @mark()
    totalCount!: number;
  }
  return Connection;
}

/** first/after and last/before of every connection (docs/rest.md#lists-filter-orderby-page-pagesize's limits: at most 1000 a page). */
@ArgsType()
export class ConnectionArgs {
  @Field(() => Int, { nullable: true, description: 'Records after `after` (or from the start); 0 to 1000, default 20.' })
  first?: number;

  @Field(() => String, { nullable: true })
  after?: string;

  @Field(() => Int, { nullable: true, description: 'Records before `before` (or up to the end); 0 to 1000. Not with `first`.' })
  last?: number;

  @Field(() => String, { nullable: true })
  before?: string;
}

/** The arguments of a connection field as the keyset module takes them. */
export function connectionInput(
  args: ConnectionArgs & { filter?: object | null; orderBy?: readonly object[] | null; deleted?: DeletedRecords | null },
): RecordConnectionInput {
  return {
    deleted: args.deleted ?? undefined,
    filter: args.filter ?? undefined,
    orderBy: orderKeys(args.orderBy),
    first: args.first,
    after: args.after,
    last: args.last,
    before: args.before,
  };
}
