import type { MikroORM } from '@mikro-orm/postgresql';
import type { SqlFragment } from '../list/list.js';
import { sharedTransaction } from './transaction.js';

/**
 * The read path: plain rows from SQL, never entities. A read builds no entity, touches no
 * identity map and has no unit of work to flush, which is what made reads 4–12× slower than raw
 * SQL (hydrating ~550 entities for a page of 50 users). Writes keep entities and transactions.
 *
 * Statements still go through MikroORM's connection (`execute`): on PostgreSQL with values as bind
 * parameters (and, for a select, as a named prepared statement: see prepared.ts), on the embedded
 * database escaped into the text; and every statement reaches the same query listener (statement
 * counts in tests). Inside a GraphQL mutation's shared transaction a read runs on that
 * transaction's connection, so it sees the transaction's own writes.
 */
export type Rows = <T = Record<string, unknown>>(sql: string, params?: readonly unknown[]) => Promise<T[]>;

export function readerFor(orm: MikroORM): Rows {
  const connection = orm.em.getConnection();
  return <T>(sql: string, params: readonly unknown[] = []): Promise<T[]> => {
    const shared = sharedTransaction();
    if (shared) return shared.getConnection().execute(sql, params as unknown[], 'all', shared.getTransactionContext()) as Promise<T[]>;
    return connection.execute(sql, params as unknown[], 'all') as Promise<T[]>;
  };
}

/** ` where a and b` of the conditions given, or '' when there is none. */
export function whereSql(where: SqlFragment | null): string {
  return where ? ` where ${where.sql}` : '';
}

/**
 * A `timestamptz` as PostgreSQL writes it in text (`2026-11-21 09:30:00.123+00`; MikroORM keeps
 * date columns as strings) in the wire format of SPEC §3: `2026-11-21T09:30:00.123Z`. The columns
 * hold milliseconds at most; a session time zone other than UTC (an offset other than +00) takes
 * the slower path through Date.
 */
export function wireDate(text: string | null): string | null {
  if (text === null) return null;
  if (text.length >= 22 && text.endsWith('+00') && text[10] === ' ' && text.charCodeAt(0) !== 45 /* a '-' year */) {
    const dot = text.indexOf('.', 19);
    const fraction = dot === -1 ? '.000' : `${text.slice(dot, text.length - 3)}000`.slice(0, 4);
    return `${text.slice(0, 10)}T${text.slice(11, 19)}${fraction}Z`;
  }
  const iso = text.replace(' ', 'T').replace(/([+-]\d{2})$/, '$1:00').replace(/([+-]\d{2}):?(\d{2}):(\d{2})$/, '$1:$2');
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? text : date.toISOString();
}

/** A `bigint` column (pg hands it over as text) as the number the API promises (a safe integer). */
export const wireInt = (value: string | number): number => (typeof value === 'number' ? value : Number(value));

/** A PostgreSQL array literal of ids, for `= any(?::bigint[])`: one placeholder however many ids. */
export const idArray = (ids: readonly number[]): string => `{${ids.join(',')}}`;
