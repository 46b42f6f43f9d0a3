/** Wire format of dates (SPEC §3): ISO 8601 UTC with milliseconds, or null. */
export const isoDate = (date: Date | null | undefined): string | null => (date ? date.toISOString() : null);
