/**
 * ISO 8601 date-times with an offset (docs/rest.md#conventions: "any ISO 8601 date-time with an offset"):
 *
 * - dates: calendar `2026-11-21`, ordinal `2026-325`, week `2026-W47-6`, in the extended form
 *   (with hyphens) or the basic form (`20261121`, `2026325`, `2026W476`);
 * - times after `T`: `hh`, `hh:mm` or `hh:mm:ss` (basic `hh`, `hhmm`, `hhmmss`), the last part may
 *   carry a decimal fraction with `.` or `,` (`09:30:00.123456`, `09.5` = 09:30); `24:00` is the
 *   end of the day; the time has the same form as the date (extended or basic);
 * - offsets: `Z`, `±hh`, `±hh:mm` or `±hhmm`.
 *
 * The result must fall in the years 0001 to 9999 in UTC: what the wire format (four-digit years)
 * writes back and what PostgreSQL reads. Precision beyond milliseconds is cut (the column keeps 3).
 */

export type ParsedDate = { ok: true; date: Date } | { ok: false; reason: 'format' | 'calendar' | 'range' };

const EXTENDED = /^(\d{4})-(?:(\d{2})-(\d{2})|(\d{3})|W(\d{2})-(\d))T(\d{2})(?::(\d{2})(?::(\d{2}))?)?(?:[.,](\d+))?(Z|[+-]\d{2}(?::?\d{2})?)$/;
const BASIC = /^(\d{4})(?:(\d{2})(\d{2})|(\d{3})|W(\d{2})(\d))T(\d{2})(?:(\d{2})(\d{2})?)?(?:[.,](\d+))?(Z|[+-]\d{2}(?::?\d{2})?)$/;

const HOUR = 3_600_000;
const MINUTE = 60_000;
const DAY = 24 * HOUR;

const isLeap = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;

/** Midnight UTC of a calendar day (setUTCFullYear: Date.UTC would read years 0–99 as 1900–1999). */
function utcDay(year: number, month: number, day: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return date.getTime();
}

/** Midnight UTC of the day a calendar, ordinal or week date names, or null when there is no such day. */
function dayOf(year: number, m: (string | undefined)[]): number | null {
  const [month, dayOfMonth, ordinal, week, weekday] = m.map((part) => (part === undefined ? undefined : Number(part)));
  if (month !== undefined && dayOfMonth !== undefined) {
    const days = [31, isLeap(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
    return days !== undefined && dayOfMonth >= 1 && dayOfMonth <= days ? utcDay(year, month, dayOfMonth) : null;
  }
  if (ordinal !== undefined) {
    return ordinal >= 1 && ordinal <= (isLeap(year) ? 366 : 365) ? utcDay(year, 1, ordinal) : null;
  }
  // Week 1 is the week (Monday first) that holds 4 January; a year has 53 weeks when it starts on
  // a Thursday, or on a Wednesday in a leap year.
  const jan4 = utcDay(year, 1, 4);
  const jan4Weekday = new Date(jan4).getUTCDay() || 7;
  const jan1Weekday = new Date(utcDay(year, 1, 1)).getUTCDay() || 7;
  const weeks = jan1Weekday === 4 || (jan1Weekday === 3 && isLeap(year)) ? 53 : 52;
  if (week! < 1 || week! > weeks || weekday! < 1 || weekday! > 7) return null;
  return jan4 - (jan4Weekday - 1) * DAY + (week! - 1) * 7 * DAY + (weekday! - 1) * DAY;
}

export function parseIsoDateTime(text: string): ParsedDate {
  const m = EXTENDED.exec(text) ?? BASIC.exec(text);
  if (!m) return { ok: false, reason: 'format' };
  const [, y, month, dayOfMonth, ordinal, week, weekday, hh, mm, ss, fraction, zone] = m;
  const year = Number(y);
  const day = dayOf(year, [month, dayOfMonth, ordinal, week, weekday]);
  const [hours, minutes, seconds] = [hh, mm, ss].map((part) => (part === undefined ? 0 : Number(part)));
  const endOfDay = hours === 24 && minutes === 0 && seconds === 0 && !/[1-9]/.test(fraction ?? '');
  if (day === null || (hours > 23 && !endOfDay) || minutes > 59 || seconds > 59) return { ok: false, reason: 'calendar' };

  // The fraction belongs to the last part written: seconds, else minutes, else hours.
  // Seconds' digits are cut at milliseconds as written; a fraction of a minute or an hour is rounded
  // to the nearest millisecond (in binary, 0.123 * 1000 is 122.99…).
  const fractionMs = !fraction
    ? 0
    : ss !== undefined
      ? Number(fraction.padEnd(3, '0').slice(0, 3))
      : Math.round(Number(`0.${fraction.slice(0, 12)}`) * (mm !== undefined ? MINUTE : HOUR));
  let offsetMinutes = 0;
  if (zone !== 'Z') {
    const digits = zone.slice(1).replace(':', '');
    const [oh, om] = [Number(digits.slice(0, 2)), Number(digits.slice(2) || '0')];
    if (oh > 23 || om > 59) return { ok: false, reason: 'calendar' };
    offsetMinutes = (zone[0] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const time = day + hours * HOUR + minutes * MINUTE + seconds * 1000 + fractionMs - offsetMinutes * MINUTE;
  const date = new Date(time);
  const utcYear = date.getUTCFullYear();
  if (utcYear < 1 || utcYear > 9999) return { ok: false, reason: 'range' };
  return { ok: true, date };
}

/** Whether a Date can be stored and written back in the wire format (years 0001–9999 UTC). */
export const inStorableRange = (date: Date) => date.getUTCFullYear() >= 1 && date.getUTCFullYear() <= 9999;
