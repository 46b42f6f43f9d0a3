import { ArgsType, Extensions, Field, Int, ObjectType, type ClassType } from 'type-graphql';
import { CACHEABLE } from './cacheable.js';

/** `{total page pageSize data}` for one record type (UserPage, TokenPage, …); `cacheable` when its records are. */
export function PageType<T extends object>(item: ClassType<T>, cacheable = false) {
  const mark = (): PropertyDecorator => (cacheable ? Extensions(CACHEABLE) : () => {});

  @ObjectType({ simpleResolvers: true }) // abstract: only the concrete subclasses (UserPage, …) reach the schema
  abstract class Page {
    @Field(() => Int, { description: 'How many records match the filter, on all pages.' })
    @mark()
    total!: number;

    @Field(() => Int)
    @mark()
    page!: number;

    @Field(() => Int)
    @mark()
    pageSize!: number;

    @Field(() => [item])
    @mark()
    data!: T[];
  }
  return Page;
}

/** page and pageSize of every list (defaults and limits: docs/rest.md#lists-filter-orderby-page-pagesize). */
@ArgsType()
export class PageArgs {
  @Field(() => Int, { nullable: true, description: 'Default 1; below 1 reads as 1.' })
  page?: number;

  @Field(() => Int, { nullable: true, description: 'Default 20; below 1 reads as 20, above 1000 as 1000.' })
  pageSize?: number;
}
