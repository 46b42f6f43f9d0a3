import { GraphQLError, GraphQLScalarType, Kind } from 'graphql';
import { isoDate } from '../db/wire.js';
import { checkDate } from '../shared/values.js';

/**
 * Dates as docs/rest.md#conventions has them on both protocols: written as ISO 8601 UTC with milliseconds, read as
 * any ISO 8601 date-time with an offset, through the very check REST uses.
 */
export const DateTime = new GraphQLScalarType<Date, string>({
  name: 'DateTime',
  description: 'An ISO 8601 date-time. Answers are UTC with milliseconds (2026-11-21T09:30:00.000Z); inputs may carry any offset (2026-11-21T10:30+01:00).',
  serialize(value) {
    if (value instanceof Date) return isoDate(value)!;
    if (typeof value === 'string') return value; // presenters already write the wire format
    throw new GraphQLError('DateTime cannot represent this value');
  },
  parseValue(value) {
    const checked = checkDate(value);
    if (!checked.ok) throw new GraphQLError(`DateTime ${checked.message}`);
    return checked.value;
  },
  parseLiteral(node) {
    if (node.kind !== Kind.STRING) throw new GraphQLError('DateTime must be a string such as "2026-11-21T09:30:00.000Z"', { nodes: node });
    const checked = checkDate(node.value);
    if (!checked.ok) throw new GraphQLError(`DateTime ${checked.message}`, { nodes: node });
    return checked.value;
  },
});
