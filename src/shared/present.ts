/** Wire format of dates (SPEC §3): ISO 8601 UTC with milliseconds, or null. */
export const isoDate = (date: Date | null | undefined): string | null => (date ? date.toISOString() : null);

/** A list page on the wire (REST body and GraphQL page type alike). */
export function presentPage<T, O>(page: { total: number; page: number; pageSize: number; data: T[] }, present: (record: T) => O) {
  return { total: page.total, page: page.page, pageSize: page.pageSize, data: page.data.map(present) };
}
