import type pg from 'pg';

/**
 * Named prepared statements for reads, on PostgreSQL. An unnamed statement is parsed and planned
 * again on every execution; a named one is parsed once per connection and then only bound and
 * executed (PostgreSQL also switches it to a cached generic plan when that plans as well). For the
 * statements every request sends (the bearer lookup, a record by id, a page and its nested lists)
 * that was most of PostgreSQL's CPU per request.
 *
 * MikroORM (through Kysely) sends every statement as `client.query(text, values)`. This wraps each
 * pooled client's `query` so that a `select` whose text has been seen before goes out under a name
 * derived from the text: values remain bind parameters, only the planning is saved. Names are
 * handed out for at most MAX_NAMED distinct texts per process (a filter's shape is part of the text,
 * so a client inventing shapes could otherwise grow every connection's statement cache without
 * bound); later texts run unnamed, as before. A locking select (`for update`/`for share`) stays
 * unnamed: those belong to writes.
 */
const MAX_NAMED = 500;
const names = new Map<string, string>();

function nameOf(text: string): string | undefined {
  let name = names.get(text);
  if (name === undefined && names.size < MAX_NAMED && text.startsWith('select') && !/ for (update|share|no key update|key share)\b/.test(text)) {
    name = `uts_${names.size + 1}`;
    names.set(text, name);
  }
  return name;
}

export function nameReadStatements(pool: pg.Pool): void {
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (config: unknown, values?: unknown, callback?: unknown) => {
      if (typeof config === 'string' && Array.isArray(values) && typeof callback !== 'function') {
        const name = nameOf(config);
        if (name) return query({ name, text: config, values });
      }
      return query(config, values, callback);
    };
  });
}
