/**
 * Values as they travel on the wire (the API's JSON), from what PostgreSQL writes in text.
 */

/**
 * A `timestamptz` as PostgreSQL writes it in text (`2026-11-21 09:30:00.123+00`) in the wire format
 * of dates: ISO 8601 in UTC with milliseconds (`2026-11-21T09:30:00.123Z`). The columns hold
 * milliseconds at most; a session time zone other than UTC (an offset other than +00) takes the
 * slower path through Date.
 */
export function wireDate(text: string | null): string | null {
  if (text === null) return null;
  if (text.length >= 22 && text.endsWith('+00') && text[10] === ' ' && text.charCodeAt(0) !== 45 /* a '-' year */) {
    const dot = text.indexOf('.', 19);
    const fraction = dot === -1 ? '.000' : `${text.slice(dot, text.length - 3)}000`.slice(0, 4);
    return `${text.slice(0, 10)}T${text.slice(11, 19)}${fraction}Z`;
  }
  const iso = text
    .replace(' ', 'T')
    .replace(/([+-]\d{2})$/, '$1:00')
    .replace(/([+-]\d{2}):?(\d{2}):(\d{2})$/, '$1:$2');
  const date = new Date(iso);
  // An offset with seconds (a zone's local mean time before its standard time: Amsterdam's +00:19:32
  // until 1937) has no ISO 8601 form: the seconds dropped above are taken off here.
  const offsetSeconds = /([+-])\d{2}:\d{2}:(\d{2})$/.exec(text);
  if (offsetSeconds) date.setTime(date.getTime() - (offsetSeconds[1] === '-' ? -1 : 1) * Number(offsetSeconds[2]) * 1000);
  return Number.isNaN(date.getTime()) ? text : date.toISOString();
}

/** Wire format of a Date (ISO 8601 UTC with milliseconds), or null. */
export const isoDate = (date: Date | null | undefined): string | null => (date ? date.toISOString() : null);

/** A PostgreSQL array literal of ids, for `= any(?::bigint[])`: one placeholder however many ids. */
export const idArray = (ids: readonly number[]): string => `{${ids.join(',')}}`;
