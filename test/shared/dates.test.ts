import { isoDate, wireDate } from '../../src/db/wire.js';
import { inStorableRange, parseIsoDateTime } from '../../src/shared/dates.js';
import { checkDate } from '../../src/shared/values.js';

/**
 * Dates (SPEC §3, docs/rest.md#conventions): written as ISO 8601 in UTC with milliseconds
 * (`2026-11-21T09:30:00.000Z`), read as any ISO 8601 date-time with an offset, anything else a 400.
 */

/** The wire form of what a text parses to, or the reason it does not. */
const parsed = (text: string) => {
  const result = parseIsoDateTime(text);
  return result.ok ? result.date.toISOString() : result.reason;
};

describe('reading a date-time', () => {
  test('calendar, ordinal and week dates, extended and basic, name the same day', () => {
    const day = '2026-11-21T09:30:00.000Z';
    for (const text of ['2026-11-21T09:30:00Z', '2026-325T09:30:00Z', '2026-W47-6T09:30:00Z', '20261121T093000Z', '2026325T093000Z', '2026W476T093000Z']) {
      expect([text, parsed(text)]).toEqual([text, day]);
    }
  });

  test('times of hours, minutes or seconds; a fraction belongs to the last part, with . or ,', () => {
    expect(parsed('2026-11-21T09Z')).toBe('2026-11-21T09:00:00.000Z');
    expect(parsed('2026-11-21T09:30Z')).toBe('2026-11-21T09:30:00.000Z');
    expect(parsed('2026-11-21T09.5Z')).toBe('2026-11-21T09:30:00.000Z');
    expect(parsed('2026-11-21T09:30,25Z')).toBe('2026-11-21T09:30:15.000Z');
    expect(parsed('2026-11-21T09:30:00.1Z')).toBe('2026-11-21T09:30:00.100Z');
    expect(parsed('20261121T0930Z')).toBe('2026-11-21T09:30:00.000Z');
  });

  test('seconds beyond milliseconds are cut, not rounded (the column keeps 3 digits)', () => {
    expect(parsed('2026-11-21T09:30:00.123456Z')).toBe('2026-11-21T09:30:00.123Z');
    expect(parsed('2026-11-21T09:30:00.9999Z')).toBe('2026-11-21T09:30:00.999Z');
  });

  test('offsets Z, ±hh, ±hh:mm, ±hhmm are applied; the result is UTC', () => {
    expect(parsed('2026-11-21T09:30:00+02')).toBe('2026-11-21T07:30:00.000Z');
    expect(parsed('2026-11-21T09:30:00-05:30')).toBe('2026-11-21T15:00:00.000Z');
    expect(parsed('2026-11-21T00:30:00+0100')).toBe('2026-11-20T23:30:00.000Z');
    expect(parsed('2026-11-21T09:30:00+24:00')).toBe('calendar');
    expect(parsed('2026-11-21T09:30:00+01:60')).toBe('calendar');
  });

  test('24:00 is the end of the day; any later time is not a time', () => {
    expect(parsed('2026-12-31T24:00Z')).toBe('2027-01-01T00:00:00.000Z');
    expect(parsed('2026-12-31T24:00:00.000Z')).toBe('2027-01-01T00:00:00.000Z');
    expect(parsed('2026-12-31T24:00:00.001Z')).toBe('calendar');
    expect(parsed('2026-12-31T24:01Z')).toBe('calendar');
    expect(parsed('2026-12-31T23:60Z')).toBe('calendar');
    expect(parsed('2026-12-31T23:59:60Z')).toBe('calendar');
  });

  test('days that do not exist: 30 February, 29 February of a common year, day 366, week 53 of a 52-week year', () => {
    expect(parsed('2024-02-29T00:00Z')).toBe('2024-02-29T00:00:00.000Z');
    expect(parsed('2026-02-29T00:00Z')).toBe('calendar');
    expect(parsed('2000-02-29T00:00Z')).toBe('2000-02-29T00:00:00.000Z');
    expect(parsed('1900-02-29T00:00Z')).toBe('calendar');
    expect(parsed('2026-04-31T00:00Z')).toBe('calendar');
    expect(parsed('2026-13-01T00:00Z')).toBe('calendar');
    expect(parsed('2026-00-01T00:00Z')).toBe('calendar');
    expect(parsed('2024-366T00:00Z')).toBe('2024-12-31T00:00:00.000Z');
    expect(parsed('2026-366T00:00Z')).toBe('calendar');
    expect(parsed('2026-000T00:00Z')).toBe('calendar');
    // 2026 starts on a Thursday: 53 weeks; 2027 on a Friday: 52.
    expect(parsed('2026-W53-7T00:00Z')).toBe('2027-01-03T00:00:00.000Z');
    expect(parsed('2027-W53-1T00:00Z')).toBe('calendar');
    expect(parsed('2026-W01-1T00:00Z')).toBe('2025-12-29T00:00:00.000Z');
    expect(parsed('2026-W00-1T00:00Z')).toBe('calendar');
    expect(parsed('2026-W10-8T00:00Z')).toBe('calendar');
  });

  test('what is not an ISO 8601 date-time with an offset is a format error', () => {
    for (const text of [
      '',
      '2026-11-21',
      '2026-11-21T09:30:00',
      '2026-11-21 09:30:00Z',
      '2026-11-21T09:30:00z',
      '26-11-21T09:30:00Z',
      '2026-11-21T9:30Z',
      '2026-1121T09:30Z', // extended date, basic time is not one form
      '2026-11-21T0930:00Z',
      '+2026-11-21T09:30Z',
      '2026-11-21T09:30:00.Z',
      'Sat, 21 Nov 2026 09:30:00 GMT',
      '1763717400000',
    ]) {
      expect([text, parsed(text)]).toEqual([text, 'format']);
    }
  });

  test('the result must fall in the years 0001 to 9999 UTC', () => {
    expect(parsed('0001-01-01T00:00Z')).toBe('0001-01-01T00:00:00.000Z');
    expect(parsed('0050-06-01T00:00Z')).toBe('0050-06-01T00:00:00.000Z'); // not 1950
    expect(parsed('9999-12-31T23:59:59.999Z')).toBe('9999-12-31T23:59:59.999Z');
    expect(parsed('0001-01-01T00:00+01')).toBe('range');
    expect(parsed('9999-12-31T23:30-01')).toBe('range');
    expect(parsed('0000-06-01T00:00Z')).toBe('range');
  });
});

describe('checkDate: the messages a 400 carries', () => {
  test('a text is parsed; a Date passes through when storable', () => {
    expect(checkDate('2026-11-21T09:30:00+01:00')).toEqual({ ok: true, value: new Date('2026-11-21T08:30:00.000Z') });
    const date = new Date('2026-11-21T09:30:00.000Z');
    expect(checkDate(date)).toEqual({ ok: true, value: date });
  });

  test('each reason has its message, and none shows the value', () => {
    expect(checkDate('yesterday')).toEqual({ ok: false, message: 'must be an ISO 8601 date-time with an offset, e.g. 2026-11-21T09:30:00.000Z' });
    expect(checkDate(1763717400000)).toEqual({ ok: false, message: 'must be an ISO 8601 date-time with an offset, e.g. 2026-11-21T09:30:00.000Z' });
    expect(checkDate(null)).toMatchObject({ ok: false });
    expect(checkDate('2026-02-30T00:00Z')).toEqual({ ok: false, message: 'must be a valid date-time' });
    expect(checkDate('0001-01-01T00:00+01')).toEqual({ ok: false, message: 'must be between 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z' });
    expect(checkDate(new Date(Number.NaN))).toEqual({ ok: false, message: 'must be a valid date-time' });
    expect(checkDate(new Date('+010000-01-01T00:00:00Z'))).toMatchObject({ ok: false, message: expect.stringMatching(/^must be between/) });
  });

  test('inStorableRange is the years 0001–9999 UTC', () => {
    expect(inStorableRange(new Date('0001-01-01T00:00:00.000Z'))).toBe(true);
    expect(inStorableRange(new Date('9999-12-31T23:59:59.999Z'))).toBe(true);
    expect(inStorableRange(new Date('+010000-01-01T00:00:00.000Z'))).toBe(false);
    expect(inStorableRange(new Date('0000-12-31T23:59:59.999Z'))).toBe(false);
  });
});

describe('writing a date-time: UTC with milliseconds', () => {
  test('PostgreSQL timestamptz text in UTC, with 0 to 6 fraction digits', () => {
    expect(wireDate('2026-11-21 09:30:00+00')).toBe('2026-11-21T09:30:00.000Z');
    expect(wireDate('2026-11-21 09:30:00.1+00')).toBe('2026-11-21T09:30:00.100Z');
    expect(wireDate('2026-11-21 09:30:00.123+00')).toBe('2026-11-21T09:30:00.123Z');
    expect(wireDate('2026-11-21 09:30:00.123456+00')).toBe('2026-11-21T09:30:00.123Z');
    expect(wireDate(null)).toBeNull();
  });

  test('another session time zone is converted to UTC, its offset in hours, minutes or seconds', () => {
    expect(wireDate('2026-11-21 10:30:00.5+01')).toBe('2026-11-21T09:30:00.500Z');
    expect(wireDate('2026-11-21 04:00:00-05:30')).toBe('2026-11-21T09:30:00.000Z');
    expect(wireDate('1900-01-01 00:19:32+00:19:32')).toBe('1900-01-01T00:00:00.000Z');
    expect(wireDate('1879-12-31 19:03:58-04:56:02')).toBe('1880-01-01T00:00:00.000Z');
  });

  test('a Date is written by isoDate; none is null', () => {
    expect(isoDate(new Date(Date.UTC(2026, 10, 21, 9, 30)))).toBe('2026-11-21T09:30:00.000Z');
    expect(isoDate(null)).toBeNull();
    expect(isoDate(undefined)).toBeNull();
  });

  test('what was written reads back as the same instant', () => {
    for (const text of ['0001-01-01T00:00:00.000Z', '2026-11-21T09:30:00.123Z', '9999-12-31T23:59:59.999Z']) expect(parsed(text)).toBe(text);
  });
});
