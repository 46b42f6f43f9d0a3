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
  if (value.length > max) return bad(`must be at most ${max} characters`);
  // PostgreSQL text cannot hold NUL, and lone surrogates are not valid UTF-8.
  if (value.includes('\u0000')) return bad('must not contain NUL characters');
  if (!value.isWellFormed()) return bad('must be valid Unicode');
  return ok(value);
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

const ISO_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?([Zz]|[+-]\d{2}(?::?\d{2})?)$/;

/** An ISO 8601 date-time with an offset ("Z" or ±hh:mm); a Date passes through (GraphQL scalar). */
export function checkDate(value: unknown): Checked<Date> {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? bad('must be a valid date-time') : ok(value);
  if (typeof value !== 'string') return bad('must be an ISO 8601 date-time with an offset, e.g. 2026-11-21T09:30:00.000Z');
  const m = ISO_DATE_TIME.exec(value);
  if (!m) return bad('must be an ISO 8601 date-time with an offset, e.g. 2026-11-21T09:30:00.000Z');
  const [, y, mo, d, h, mi, s = '00', fraction = '0', zone] = m.map((part) => part ?? undefined) as string[];
  const offset = /^[Zz]$/.test(zone) ? 'Z' : `${zone.slice(0, 3)}:${zone.slice(3).replace(':', '') || '00'}`;
  const date = new Date(`${y}-${mo}-${d}T${h}:${mi}:${s}.${fraction.padEnd(3, '0').slice(0, 3)}${offset}`);
  // Date() rolls impossible fields over (Feb 30 → Mar 2); compare the fields against the calendar.
  const daysInMonth = new Date(Date.UTC(Number(y), Number(mo), 0)).getUTCDate();
  if (
    Number.isNaN(date.getTime()) ||
    Number(mo) < 1 || Number(mo) > 12 ||
    Number(d) < 1 || Number(d) > daysInMonth ||
    Number(h) > 23 || Number(mi) > 59 || Number(s) > 59
  ) {
    return bad('must be a valid date-time');
  }
  return ok(date);
}
