import { AppError, type FieldProblem } from '../errors.js';
import { checkDate } from '../shared/values.js';
import { andAll, compileQuery, LIST_LIMITS, type CompiledQuery, type ListFields, type OrderKey, type SortKey, type SqlFragment } from './list.js';

/**
 * Keyset pages (GraphQL's Relay connections): `first`/`after` and `last`/`before` over the same
 * filter and order as the offset pages. A page starts where the cursor's row sorts, found through
 * the order's own columns, so page 200 costs what page 1 costs (an offset reads and throws away
 * every row before it).
 *
 * A cursor is opaque to clients: base64url of JSON `[order, ...values]`, the order's signature
 * (`lastName:desc,id:asc`) and the sort values of the row it points at. A cursor that does not
 * decode, carries values of the wrong kind, or was made for another order is a 400 naming the
 * argument; a cursor of a row since deleted still marks a place in the order and keeps working.
 */

export interface ConnectionInput {
  filter?: unknown;
  orderBy?: readonly OrderKey[] | null;
  first?: number | null;
  after?: string | null;
  last?: number | null;
  before?: string | null;
}

export interface CompiledKeyset extends CompiledQuery {
  /** Rows wanted (one more is fetched to learn whether another page follows). */
  limit: number;
  /** true for `last`/`before`: the query runs in the reversed order and its rows are reversed back. */
  backward: boolean;
  /** The cursor conditions (after and/or before), or null. */
  bound: SqlFragment | null;
  after: boolean;
  before: boolean;
}

export interface Edge<T> {
  cursor: string;
  node: T;
}

export interface PageInfo {
  hasNextPage: boolean;
  hasPreviousPage: boolean;
  startCursor: string | null;
  endCursor: string | null;
}

export interface Connection<T> {
  edges: Edge<T>[];
  pageInfo: PageInfo;
  /** null when not asked for. */
  totalCount: number | null;
}

const signatureOf = (order: readonly SortKey[]) => order.map((k) => `${k.field}:${k.direction}`).join(',');

/** The select-list entries that carry a row's sort values, aliased k0, k1, … */
export const sortColumns = (order: readonly SortKey[]) => order.map((k, i) => `${k.column} as k${i}`).join(', ');

function parseCount(raw: number | null | undefined, name: string, problems: FieldProblem[]): number | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!Number.isInteger(raw) || raw < 0 || raw > LIST_LIMITS.maxPageSize) {
    problems.push({ field: name, message: `must be an integer from 0 to ${LIST_LIMITS.maxPageSize}` });
    return undefined;
  }
  return raw;
}

export function compileKeyset(input: ConnectionInput, fields: ListFields): CompiledKeyset {
  const query = compileQuery({ filter: input.filter, orderBy: input.orderBy }, fields);
  const problems: FieldProblem[] = [];
  const first = parseCount(input.first, 'first', problems);
  const last = parseCount(input.last, 'last', problems);
  if (first !== undefined && last !== undefined) problems.push({ field: 'last', message: 'cannot be given with first: ask for one direction at a time' });
  const after = input.after == null ? null : decodeCursor(input.after, 'after', query.order, problems);
  const before = input.before == null ? null : decodeCursor(input.before, 'before', query.order, problems);
  if (problems.length) throw AppError.invalid(problems);
  const backward = last !== undefined || (first === undefined && before !== null && after === null);
  const bound = andAll(after && beyond(query.order, after, false), before && beyond(query.order, before, true));
  return {
    ...query,
    limit: (backward ? last : first) ?? LIST_LIMITS.defaultPageSize,
    backward,
    bound,
    after: after !== null,
    before: before !== null,
  };
}

/**
 * Rows strictly past the cursor's values in the order (`reverse`: strictly before them). PostgreSQL
 * sorts nulls last ascending and first descending; the condition follows the same rule, so it
 * agrees with `order by` on nullable columns too. Keys that cannot be null and share one direction
 * (the usual case, `id` alone) become one row comparison, which an index serves.
 */
function beyond(order: readonly SortKey[], values: readonly unknown[], reverse: boolean): SqlFragment {
  const ascending = (k: SortKey) => (k.direction === 'asc') !== reverse;
  if (order.every((k) => !k.nullable && ascending(k) === ascending(order[0])) && values.every((v) => v !== null)) {
    const op = ascending(order[0]) ? '>' : '<';
    return order.length === 1
      ? { sql: `${order[0].column} ${op} ?`, params: [values[0]] }
      : { sql: `(${order.map((k) => k.column).join(', ')}) ${op} (${order.map(() => '?').join(', ')})`, params: [...values] };
  }
  const alternatives: SqlFragment[] = [];
  for (let i = 0; i < order.length; i++) {
    const equal = order
      .slice(0, i)
      .map((k, j) => (values[j] === null ? { sql: `${k.column} is null`, params: [] } : { sql: `${k.column} = ?`, params: [values[j]] }));
    const k = order[i];
    const v = values[i];
    let past: SqlFragment | null;
    if (ascending(k))
      past = v === null ? null : k.nullable ? { sql: `(${k.column} > ? or ${k.column} is null)`, params: [v] } : { sql: `${k.column} > ?`, params: [v] };
    else past = v === null ? { sql: `${k.column} is not null`, params: [] } : { sql: `${k.column} < ?`, params: [v] };
    if (past) alternatives.push(andAll(...equal, past)!);
  }
  if (alternatives.length === 0) return { sql: 'false', params: [] };
  return alternatives.length === 1
    ? alternatives[0]
    : { sql: alternatives.map((a) => `(${a.sql})`).join(' or '), params: alternatives.flatMap((a) => a.params) };
}

/** The cursor of a row that selected `sortColumns(order)`. */
export function cursorOf(order: readonly SortKey[], row: Record<string, unknown>): string {
  const values = order.map((k, i) => {
    const v = row[`k${i}`];
    if (v === null || v === undefined) return null;
    // Dates come in the wire format already (the pool's parser of timestamptz).
    if (k.kind === 'date' || k.kind === 'string') return String(v);
    if (k.kind === 'boolean') return Boolean(v);
    return Number(v);
  });
  return Buffer.from(JSON.stringify([signatureOf(order), ...values])).toString('base64url');
}

function decodeCursor(cursor: string, name: string, order: readonly SortKey[], problems: FieldProblem[]): unknown[] | null {
  const refuse = (message: string) => {
    problems.push({ field: name, message });
    return null;
  };
  let decoded: unknown;
  try {
    if (cursor.length > 4096 || !/^[A-Za-z0-9_-]*$/.test(cursor)) throw new Error('not base64url');
    decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return refuse('is not a cursor of this list');
  }
  if (!Array.isArray(decoded) || typeof decoded[0] !== 'string' || decoded.length !== order.length + 1) {
    return refuse('is not a cursor of this list');
  }
  if (decoded[0] !== signatureOf(order)) return refuse('was made for another orderBy; pass the same orderBy as the page it came from');
  const values: unknown[] = [];
  for (let i = 0; i < order.length; i++) {
    const k = order[i];
    const v = decoded[i + 1];
    if (v === null) {
      if (!k.nullable) return refuse('is not a cursor of this list');
      values.push(null);
    } else if (k.kind === 'string') {
      if (typeof v !== 'string' || v.length > 2048 || v.includes('\u0000') || !v.isWellFormed()) return refuse('is not a cursor of this list');
      values.push(v);
    } else if (k.kind === 'boolean') {
      if (typeof v !== 'boolean') return refuse('is not a cursor of this list');
      values.push(v);
    } else if (k.kind === 'date') {
      const checked = checkDate(v);
      if (!checked.ok) return refuse('is not a cursor of this list');
      values.push(checked.value);
    } else {
      const bounds = k.kind === 'int32' || k.kind === 'revision' ? 2 ** 31 : Number.MAX_SAFE_INTEGER + 1;
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || Math.abs(v) >= bounds) return refuse('is not a cursor of this list');
      values.push(v);
    }
  }
  return values;
}

/** A row without the sort values it was selected with (k0, k1, …) and its parent's id (nested pages). */
function withoutSortKeys(keys: number, row: Record<string, unknown>): Record<string, unknown> {
  const record = { ...row };
  for (let i = 0; i < keys; i++) delete record[`k${i}`];
  delete record.parent_id;
  delete record.rn;
  return record;
}

/**
 * Edges and page info from the rows a keyset query returned (at most `limit + 1`, in the query's
 * order: reversed for a backward page).
 */
export function connectionOf<T>(
  keyset: CompiledKeyset,
  rows: Record<string, unknown>[],
  toNode: (row: Record<string, unknown>) => T,
  totalCount: number | null,
): Connection<T> {
  const more = rows.length > keyset.limit;
  const kept = more ? rows.slice(0, keyset.limit) : rows;
  if (keyset.backward) kept.reverse();
  const edges = kept.map((row) => ({ cursor: cursorOf(keyset.order, row), node: toNode(withoutSortKeys(keyset.order.length, row)) }));
  return {
    edges,
    pageInfo: {
      // Past rows on the side a page came from are known only as "the cursor's row was there".
      hasNextPage: keyset.backward ? keyset.before : more,
      hasPreviousPage: keyset.backward ? more : keyset.after,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
    totalCount,
  };
}
