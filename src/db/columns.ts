import { BigIntType } from '@mikro-orm/core';

/**
 * Column types shared by every entity. Ids are PostgreSQL `bigint` identities, mapped to JS numbers
 * (the API promises safe integers); timestamps are `timestamptz(3)` so that what is stored is exactly
 * what the wire format (ISO 8601 with milliseconds) can say.
 */
export const bigintNumber = () => new BigIntType('number');
export const TIMESTAMP = 'timestamptz(3)';
