import { inStorableRange, parseIsoDateTime } from './dates.js';

/**
 * Checks of single input values, shared by write bodies, list filters and path parameters.
 * Each returns the clean value or a message saying what is wrong (never the value itself:
 * it may be a secret).
 */
export type Checked<T> = { ok: true; value: T } | { ok: false; message: string };

const ok = <T>(value: T): Checked<T> => ({ ok: true, value });
const bad = (message: string): Checked<never> => ({ ok: false, message });

export const INT32_MIN = -2147483648;
export const INT32_MAX = 2147483647;

export function checkString(value: unknown, max: number): Checked<string> {
  if (typeof value !== 'string') return bad('must be a string');
  // Characters as PostgreSQL's varchar(n) counts them (code points), not UTF-16 units: an emoji is one.
  if (value.length > max && (value.length > 2 * max || codePoints(value) > max)) return bad(`must be at most ${max} characters`);
  // PostgreSQL text cannot hold NUL, and lone surrogates are not valid UTF-8.
  if (value.includes('\u0000')) return bad('must not contain NUL characters');
  if (!value.isWellFormed()) return bad('must be valid Unicode');
  return ok(value);
}

function codePoints(value: string): number {
  let count = 0;
  for (const _ of value) count += 1;
  return count;
}

export function checkInteger(value: unknown, min: number, max: number): Checked<number> {
  if (typeof value !== 'number' || !Number.isInteger(value)) return bad('must be an integer');
  if (value < min || value > max) return bad(`must be between ${min} and ${max}`);
  return ok(value);
}

export const checkInt32 = (value: unknown) => checkInteger(value, INT32_MIN, INT32_MAX);
export const checkSafeInteger = (value: unknown) => checkInteger(value, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);

/** A record id: a positive safe integer, given as a JSON number or (path, GraphQL ID) a decimal string. */
export function checkId(value: unknown): Checked<number> {
  if (typeof value === 'string') {
    if (!/^[1-9]\d{0,15}$/.test(value)) return bad('must be a positive integer');
    value = Number(value);
  }
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) return bad('must be a positive integer');
  return ok(value);
}

const DATE_FORMAT = 'must be an ISO 8601 date-time with an offset, e.g. 2026-11-21T09:30:00.000Z';
const DATE_RANGE = 'must be between 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z';

/** An ISO 8601 date-time with an offset (see dates.ts); a Date passes through (GraphQL scalar). */
export function checkDate(value: unknown): Checked<Date> {
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) return bad('must be a valid date-time');
    return inStorableRange(value) ? ok(value) : bad(DATE_RANGE);
  }
  if (typeof value !== 'string') return bad(DATE_FORMAT);
  const parsed = parseIsoDateTime(value);
  if (parsed.ok) return ok(parsed.date);
  return bad(parsed.reason === 'format' ? DATE_FORMAT : parsed.reason === 'range' ? DATE_RANGE : 'must be a valid date-time');
}
