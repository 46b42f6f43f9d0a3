import { SafeIntResolver } from 'graphql-scalars';
import { DateTime } from './scalars.js';
import { Field, ID, InputType, Int, registerEnumType } from 'type-graphql';
import type { OrderKey } from '../list/list.js';
import { AppError } from '../errors.js';
import type { RecordListInput } from '../resource/service.js';

/**
 * Typed list arguments. Each filter input has the shape of the REST filter language of docs/rest.md#lists-filter-orderby-page-pagesize
 * (`{status: {in: [1, 2]}, and: [...]}`), so it goes through the same compiler with the same limits.
 */
@InputType({ description: 'Conditions on an ID field; all given operators must hold.' })
export class IDFilter {
  @Field(() => ID, { nullable: true }) eq?: string;
  @Field(() => ID, { nullable: true }) ne?: string;
  @Field(() => ID, { nullable: true }) gt?: string;
  @Field(() => ID, { nullable: true }) gte?: string;
  @Field(() => ID, { nullable: true }) lt?: string;
  @Field(() => ID, { nullable: true }) lte?: string;
  @Field(() => [ID], { nullable: true }) in?: string[];
  @Field(() => [ID], { nullable: true }) nin?: string[];
  @Field({ nullable: true, description: 'true: the field is null; false: it is not.' }) isNull?: boolean;
}

@InputType({ description: 'Conditions on a 32-bit integer field.' })
export class IntFilter {
  @Field(() => Int, { nullable: true }) eq?: number;
  @Field(() => Int, { nullable: true }) ne?: number;
  @Field(() => Int, { nullable: true }) gt?: number;
  @Field(() => Int, { nullable: true }) gte?: number;
  @Field(() => Int, { nullable: true }) lt?: number;
  @Field(() => Int, { nullable: true }) lte?: number;
  @Field(() => [Int], { nullable: true }) in?: number[];
  @Field(() => [Int], { nullable: true }) nin?: number[];
  @Field({ nullable: true, description: 'true: the field is null; false: it is not.' }) isNull?: boolean;
}

@InputType({ description: 'Conditions on a safe-integer field.' })
export class SafeIntFilter {
  @Field(() => SafeIntResolver, { nullable: true }) eq?: number;
  @Field(() => SafeIntResolver, { nullable: true }) ne?: number;
  @Field(() => SafeIntResolver, { nullable: true }) gt?: number;
  @Field(() => SafeIntResolver, { nullable: true }) gte?: number;
  @Field(() => SafeIntResolver, { nullable: true }) lt?: number;
  @Field(() => SafeIntResolver, { nullable: true }) lte?: number;
  @Field(() => [SafeIntResolver], { nullable: true }) in?: number[];
  @Field(() => [SafeIntResolver], { nullable: true }) nin?: number[];
  @Field({ nullable: true, description: 'true: the field is null; false: it is not.' }) isNull?: boolean;
}

@InputType({ description: 'Conditions on a text field; like/ilike take SQL patterns with % and _.' })
export class StringFilter {
  @Field({ nullable: true }) eq?: string;
  @Field({ nullable: true }) ne?: string;
  @Field({ nullable: true }) gt?: string;
  @Field({ nullable: true }) gte?: string;
  @Field({ nullable: true }) lt?: string;
  @Field({ nullable: true }) lte?: string;
  @Field(() => [String], { nullable: true }) in?: string[];
  @Field(() => [String], { nullable: true }) nin?: string[];
  @Field({ nullable: true }) like?: string;
  @Field({ nullable: true }) ilike?: string;
  @Field({ nullable: true, description: 'true: the field is null; false: it is not.' }) isNull?: boolean;
}

@InputType({
  description:
    'Conditions on a secret text field (a token’s accessToken, refreshToken), stored encrypted and matched through a keyed hash: equality only, no patterns, ranges or sorting.',
})
export class SecretFilter {
  @Field({ nullable: true }) eq?: string;
  @Field({ nullable: true }) ne?: string;
  @Field(() => [String], { nullable: true }) in?: string[];
  @Field(() => [String], { nullable: true }) nin?: string[];
}

@InputType({ description: 'Conditions on a true/false field.' })
export class BooleanFilter {
  @Field({ nullable: true }) eq?: boolean;
  @Field({ nullable: true }) ne?: boolean;
  @Field({ nullable: true, description: 'true: the field is null; false: it is not.' }) isNull?: boolean;
}

@InputType({ description: 'Conditions on a date-time field.' })
export class DateTimeFilter {
  @Field(() => DateTime, { nullable: true }) eq?: Date;
  @Field(() => DateTime, { nullable: true }) ne?: Date;
  @Field(() => DateTime, { nullable: true }) gt?: Date;
  @Field(() => DateTime, { nullable: true }) gte?: Date;
  @Field(() => DateTime, { nullable: true }) lt?: Date;
  @Field(() => DateTime, { nullable: true }) lte?: Date;
  @Field(() => [DateTime], { nullable: true }) in?: Date[];
  @Field(() => [DateTime], { nullable: true }) nin?: Date[];
  @Field({ nullable: true, description: 'true: the field is null; false: it is not.' }) isNull?: boolean;
}

export enum SortDirection {
  ASC = 'asc',
  DESC = 'desc',
}
registerEnumType(SortDirection, { name: 'SortDirection' });

/** The `deleted` argument of a top-level list (docs/rest.md#deleted-records-restore-and-deletedonlyinclude); left out: live records only. */
export enum DeletedRecords {
  ONLY = 'only',
  INCLUDE = 'include',
}
registerEnumType(DeletedRecords, {
  name: 'DeletedRecords',
  description: 'Soft-deleted records in a list: ONLY them, or INCLUDE them with the live ones. Each then has its deletedAt.',
  valuesConfig: { ONLY: { description: 'Only deleted records.' }, INCLUDE: { description: 'Live and deleted records.' } },
});

/** The descriptions of `deleted` and `deletedAt`, the same on every record type. */
export const DELETED_ARG = 'Left out: live records only. ONLY or INCLUDE: deleted ones too, with their deletedAt.';
export const DELETED_AT = 'When it was deleted (soft); null for a live record. Read by lists with deleted: ONLY or INCLUDE.';

/** `[{lastName: DESC}, {id: ASC}]`: each item names exactly one field. */
export function orderKeys(items: readonly object[] | undefined | null): OrderKey[] | undefined {
  if (!items) return undefined;
  return items.map((item, i) => {
    const given = Object.entries(item).filter(([, v]) => v !== undefined && v !== null);
    if (given.length !== 1) throw AppError.invalid([{ field: `orderBy[${i}]`, message: 'must name exactly one field' }]);
    return { field: given[0][0], direction: given[0][1] as SortDirection };
  });
}

/** The list arguments of a GraphQL field as the list module takes them. */
export function listInput(args: {
  filter?: object | null;
  orderBy?: readonly object[] | null;
  page?: number | null;
  pageSize?: number | null;
  deleted?: DeletedRecords | null;
}): RecordListInput {
  return {
    filter: args.filter ?? undefined,
    orderBy: orderKeys(args.orderBy),
    page: args.page ?? undefined,
    pageSize: args.pageSize ?? undefined,
    deleted: args.deleted ?? undefined,
  };
}
