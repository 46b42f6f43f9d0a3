/**
 * GraphQL IDs arrive as strings; the services take record ids as numbers (a REST body's ids are
 * JSON numbers). Digits become a number; anything else is passed on for the service to reject
 * with a BAD_USER_INPUT naming the field.
 */
export const idValue = (id: string | number): string | number => (typeof id === 'string' && /^[1-9]\d{0,15}$/.test(id) ? Number(id) : id);
export const idValues = (ids: readonly (string | number)[]) => ids.map(idValue);
