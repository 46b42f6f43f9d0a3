import { AppError, type FieldProblem } from '../errors.js';
import { operatorAsWritten, parseFilterExpression } from './expression.js';
import { checkDate, checkInteger, checkString, INT32_MAX, INT32_MIN, type Checked } from '../shared/values.js';

/**
 * The list language of docs/rest.md#lists-filter-orderby-page-pagesize, shared by every list in REST and GraphQL: parse the four inputs,
 * validate them against the list's fields, and compile them into SQL for the read path (a `where`
 * fragment and an `order by`). Values stay values: every one is a `?` placeholder, sent as a bind
 * parameter on PostgreSQL; only column names (from the list's own field table) enter the text.
 */

/**
 * How a field's values are checked and compared. `secret`: a text value stored only as a keyed hash
 * (and a ciphertext), such as a token's accessToken (docs/operations.md#secrets-at-rest): matched with `eq ne in nin` through
 * its hash; never sorted, never matched by pattern or range (a hash keeps no order).
 */
export type FieldKind = 'id' | 'int32' | 'safeInt' | 'string' | 'date' | 'revision' | 'secret' | 'boolean';

export interface ListField {
  /** The SQL expression of the field in the list's query, e.g. `t.first_name` or `l."right"`. */
  column: string;
  kind: FieldKind;
  nullable?: boolean;
  /**
   * `secret` fields: the keyed hashes a value is stored as, one per key the service holds (two
   * during a key rotation); the column holds one of them. Bound as parameters, like any value.
   */
  match?: (value: string) => readonly unknown[];
}

/** The operators a `secret` field takes. */
const SECRET_OPS: readonly string[] = ['eq', 'ne', 'in', 'nin'];

/** The filterable and sortable fields of one list, by wire name. Must contain `id`. */
export type ListFields = Readonly<Record<string, ListField>>;

export type Direction = 'asc' | 'desc';
export interface OrderKey {
  field: string;
  direction: Direction;
}

/** The four list inputs as a protocol hands them over: REST gives strings, GraphQL typed values. */
export interface ListInput {
  filter?: unknown;
  orderBy?: string | readonly OrderKey[] | null;
  page?: unknown;
  pageSize?: unknown;
}

/** A piece of SQL and the values of its `?` placeholders, in order. */
export interface SqlFragment {
  sql: string;
  params: unknown[];
}

/** One key of a compiled order: the wire field, its column and how it sorts. */
export interface SortKey {
  field: string;
  column: string;
  direction: Direction;
  kind: FieldKind;
  nullable: boolean;
}

/** A filter and order, validated and compiled (the page-independent part of a list). */
export interface CompiledQuery {
  /** null: no condition (every live row). */
  where: SqlFragment | null;
  /** Sort keys; `id` is always the last. */
  order: SortKey[];
}

export interface CompiledList extends CompiledQuery {
  page: number;
  pageSize: number;
  limit: number;
  offset: number;
}

export interface Page<T> {
  /** null when the caller did not ask for it (GraphQL without `total` selected). */
  total: number | null;
  page: number;
  pageSize: number;
  data: T[];
}

export const LIST_LIMITS = {
  defaultPageSize: 20,
  maxPageSize: 1000,
  maxDepth: 8,
  maxConditions: 100,
  maxInValues: 1000,
  /** Values in one filter, `in` lists included: PostgreSQL binds at most 65 535 per statement. */
  maxValues: 10_000,
} as const;

const OPERATORS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'like', 'ilike', 'isNull'] as const;
type Operator = (typeof OPERATORS)[number];
const SQL_OP: Record<'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte' | 'like' | 'ilike', string> = {
  eq: '=',
  ne: '<>',
  gt: '>',
  gte: '>=',
  lt: '<',
  lte: '<=',
  like: 'like',
  ilike: 'ilike',
};
const ORDERABLE_OPS: readonly Operator[] = ['gt', 'gte', 'lt', 'lte'];

/** Validates and compiles a filter and an order (no page): what keyset pages and counts share. */
export function compileQuery(input: Pick<ListInput, 'filter' | 'orderBy'>, fields: ListFields): CompiledQuery {
  const problems: FieldProblem[] = [];
  const order = compileOrder(input.orderBy, fields, problems);
  const where = compileFilterInput(input.filter, fields, problems);
  if (problems.length) throw AppError.invalid(problems);
  return { where, order };
}

export function compileList(input: ListInput, fields: ListFields): CompiledList {
  const problems: FieldProblem[] = [];
  const page = parseCount(input.page, 'page', 1, Number.MAX_SAFE_INTEGER, 1, problems);
  const pageSize = parseCount(input.pageSize, 'pageSize', 1, LIST_LIMITS.maxPageSize, LIST_LIMITS.defaultPageSize, problems);
  const order = compileOrder(input.orderBy, fields, problems);
  const where = compileFilterInput(input.filter, fields, problems);
  if (problems.length) throw AppError.invalid(problems);
  // Past any real table's end long before it stops being exact; PostgreSQL's offset is a bigint.
  const offset = Math.min((page - 1) * pageSize, Number.MAX_SAFE_INTEGER);
  return { where, order, page, pageSize, limit: pageSize, offset };
}

/** `order by` text of sort keys (directions flipped for a backwards keyset page). */
export function orderSql(order: readonly SortKey[], reverse = false): string {
  return order.map((key) => `${key.column} ${(key.direction === 'asc') !== reverse ? 'asc' : 'desc'}`).join(', ');
}

/**
 * The statement of one offset page (`limit`, `offset`) of a table's rows (`t`), with its
 * parameters: the page's ids first, then its rows.
 * PostgreSQL produces every row it skips for an offset; found through a narrow index (the live ids:
 * `<table>_live_id_idx`, or the primary key), the skipped rows cost an index entry each instead of
 * a heap tuple made into a row (pgbench, page 150 of 50 users: 1.46 ms a page read whole, 0.50 ms
 * ids first; 0.70 ms with no page all-visible). The rows are then read by id and ordered again.
 * The ids are an array (`= any(array(…))`), not a joined subquery: statements are prepared, and
 * PostgreSQL's generic plan of a join, not knowing the limit, hashes the whole table against the
 * ids; against an array it probes the primary key whatever the limit.
 * The first page skips nothing and is read whole. `where` and `order` are on `t`.
 */
export function offsetPageSql(
  columns: string,
  table: string,
  where: SqlFragment | null,
  order: readonly SortKey[],
  page: { limit: number; offset: number },
): SqlFragment {
  const ordered = orderSql(order);
  const rows = `from ${table} t${where ? ` where ${where.sql}` : ''} order by ${ordered} limit ? offset ?`;
  const params = [...(where?.params ?? []), page.limit, page.offset];
  if (page.offset === 0) return { sql: `select ${columns} ${rows}`, params };
  return { sql: `select ${columns} from ${table} t where t.id = any(array(select t.id ${rows})) order by ${ordered}`, params };
}

/**
 * Which records a top-level list reads (docs/rest.md#deleted-records-restore-and-deletedonlyinclude's `deleted`): the live ones (the default), only
 * the soft-deleted ones, or both.
 */
export type DeletedScope = 'live' | 'only' | 'include';

/**
 * `deleted` as REST (`?deleted=only`) or GraphQL (the DeletedRecords enum) gives it; any case, an
 * empty value means the default as every list parameter does (docs/rest.md#lists-filter-orderby-page-pagesize). Anything else is a 400.
 */
export function parseDeleted(raw: unknown): DeletedScope {
  if (raw === undefined || raw === null || raw === '') return 'live';
  const value = typeof raw === 'string' ? raw.trim().toLowerCase() : undefined;
  if (value === 'only' || value === 'include') return value;
  throw AppError.invalid([{ field: 'deleted', message: Array.isArray(raw) ? 'must be given once' : 'must be "only" or "include"' }]);
}

/** The condition of a scope on a table aliased `t`; null when it reads every row. */
export function deletedScopeSql(scope: DeletedScope): SqlFragment | null {
  if (scope === 'include') return null;
  return { sql: scope === 'live' ? 't.deleted_at is null' : 't.deleted_at is not null', params: [] };
}

/** `a and b` of the fragments given (null ones left out); null when none is left. */
export function andAll(...parts: (SqlFragment | null | undefined)[]): SqlFragment | null {
  const given = parts.filter((p): p is SqlFragment => !!p);
  if (given.length === 0) return null;
  if (given.length === 1) return given[0];
  return { sql: given.map((p) => `(${p.sql})`).join(' and '), params: given.flatMap((p) => p.params) };
}

/**
 * `page` or `pageSize` (docs/rest.md#lists-filter-orderby-page-pagesize): an integer, read the way the original service read it — a number
 * below `min` means the default, one above `max` means `max` — so only what is not an integer at
 * all is a 400.
 */
function parseCount(raw: unknown, name: string, min: number, max: number, fallback: number, problems: FieldProblem[]): number {
  if (raw === undefined || raw === null || raw === '') return fallback;
  if (Array.isArray(raw)) {
    problems.push({ field: name, message: 'must be given once' });
    return fallback;
  }
  // Any run of digits is an integer, however long: past 2^53 it is simply above `max`.
  const text = typeof raw === 'string' ? raw.trim() : undefined;
  const value = text !== undefined && /^[+-]?\d+$/.test(text) ? Number(text) : raw; // ±Infinity past 1e308: still an integer
  if (typeof value !== 'number' || !(Number.isInteger(value) || (text !== undefined && Math.abs(value) === Infinity))) {
    problems.push({ field: name, message: 'must be an integer' });
    return fallback;
  }
  if (value < min) return fallback;
  return Math.min(value, max);
}

// ---------------------------------------------------------------------------------------------
// orderBy

/** Parses the REST form: "lastName, -createdAt, status desc". */
export function parseOrderBy(text: string): OrderKey[] | FieldProblem {
  const keys: OrderKey[] = [];
  for (const part of text.split(',')) {
    const item = part.trim();
    if (item === '') continue;
    const m = /^(-)?([A-Za-z][A-Za-z0-9]*)(?:\s+(asc|desc))?$/i.exec(item);
    if (!m || (m[1] && m[3])) {
      return { field: 'orderBy', message: `"${item.slice(0, 64)}" is not "field", "field asc", "field desc" or "-field"` };
    }
    keys.push({ field: m[2], direction: m[1] ? 'desc' : ((m[3]?.toLowerCase() as Direction | undefined) ?? 'asc') });
  }
  return keys;
}

function compileOrder(raw: ListInput['orderBy'], fields: ListFields, problems: FieldProblem[]): SortKey[] {
  let keys: readonly OrderKey[] = [];
  if (Array.isArray(raw)) {
    // GraphQL hands over key objects; REST hands over an array of strings when orderBy is repeated.
    if (raw.some((key: unknown) => typeof key !== 'object' || key === null)) {
      problems.push({ field: 'orderBy', message: 'must be given once' });
      return [];
    }
    keys = raw;
  } else if (typeof raw === 'string') {
    const parsed = parseOrderBy(raw);
    if (!Array.isArray(parsed)) {
      problems.push(parsed);
      return [];
    }
    keys = parsed;
  } else if (raw !== undefined && raw !== null) {
    problems.push({ field: 'orderBy', message: 'must be given once' });
    return [];
  }
  const order: SortKey[] = [];
  const seen = new Set<string>();
  const sortKey = (name: string, field: ListField, direction: Direction): SortKey => ({
    field: name,
    column: field.column,
    direction,
    kind: field.kind,
    nullable: field.nullable ?? false,
  });
  for (const key of keys) {
    const name = canonicalField(fields, key.field);
    if (name === undefined) {
      const sortable = Object.keys(fields).filter((f) => fields[f].kind !== 'secret');
      problems.push({ field: 'orderBy', message: `unknown field "${key.field.slice(0, 64)}"; sortable: ${sortable.join(', ')}` });
      continue;
    }
    if (fields[name].kind === 'secret') {
      problems.push({ field: 'orderBy', message: `${name} cannot be sorted on: it is stored encrypted, as a keyed hash that keeps no order` });
      continue;
    }
    if (seen.has(name)) continue;
    seen.add(name);
    order.push(sortKey(name, fields[name], key.direction));
  }
  // Pages are stable only with a unique last key.
  if (!seen.has('id')) order.push(sortKey('id', fields.id, 'asc'));
  return order;
}

// ---------------------------------------------------------------------------------------------
// filter

interface FilterState {
  fields: ListFields;
  conditions: number;
  values: number;
  problems: FieldProblem[];
}

/** Matches no row: what `not {}` and an empty `in` mean. */
const NOTHING: SqlFragment = { sql: 'false', params: [] };

function compileFilterInput(raw: unknown, fields: ListFields, problems: FieldProblem[]): SqlFragment | null {
  if (raw === undefined || raw === null || raw === '') return null;
  let tree = raw;
  if (Array.isArray(raw)) {
    problems.push({ field: 'filter', message: 'must be given once' });
    return null;
  }
  if (typeof raw === 'string') {
    // Two forms (docs/rest.md#lists-filter-orderby-page-pagesize), told apart by the first non-blank character: `{` is the JSON form,
    // anything else the original service's expression form, translated into the JSON form so
    // that both are validated and compiled by the same code below.
    if (raw.trimStart().startsWith('{')) {
      try {
        tree = JSON.parse(raw);
      } catch {
        problems.push({ field: 'filter', message: 'is not valid JSON' });
        return null;
      }
    } else {
      const parsed = parseFilterExpression(raw, Object.keys(fields));
      if (!parsed.ok) {
        problems.push({ field: 'filter', message: parsed.message });
        return null;
      }
      tree = parsed.filter;
    }
  }
  const state: FilterState = { fields, conditions: 0, values: 0, problems };
  const where = compileNode(tree, 'filter', 1, state);
  if (state.conditions > LIST_LIMITS.maxConditions) {
    problems.push({ field: 'filter', message: `has ${state.conditions} conditions; at most ${LIST_LIMITS.maxConditions} are allowed` });
  } else if (state.values > LIST_LIMITS.maxValues) {
    problems.push({ field: 'filter', message: `has ${state.values} values; at most ${LIST_LIMITS.maxValues} are allowed` });
  }
  return where;
}

/** A list's own field of that name (never one of Object.prototype's: `constructor`, `toString`, …). */
const fieldOf = (fields: ListFields, name: string): ListField | undefined => fields[canonicalField(fields, name) ?? ''];

const lowerCaseNames = new WeakMap<ListFields, Map<string, string>>();

/**
 * The list's own name of a field given in any case (`FirstName`, `firstname` → `firstName`), as
 * the original service matched them; never one of Object.prototype's names (`constructor`, …).
 */
export function canonicalField(fields: ListFields, name: string): string | undefined {
  if (Object.hasOwn(fields, name)) return name;
  let names = lowerCaseNames.get(fields);
  if (!names) lowerCaseNames.set(fields, (names = new Map(Object.keys(fields).map((key) => [key.toLowerCase(), key]))));
  return names.get(name.toLowerCase());
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);

/** `a or b` of fragments. */
const orAll = (parts: SqlFragment[]): SqlFragment =>
  parts.length === 1 ? parts[0] : { sql: parts.map((p) => `(${p.sql})`).join(' or '), params: parts.flatMap((p) => p.params) };

/** A filter object compiled; null when it says nothing (an empty filter matches every row). */
function compileNode(node: unknown, at: string, depth: number, state: FilterState): SqlFragment | null {
  if (!isPlainObject(node)) {
    state.problems.push({ field: at, message: 'must be a JSON object' });
    return null;
  }
  if (depth > LIST_LIMITS.maxDepth) {
    state.problems.push({ field: at, message: `is nested deeper than ${LIST_LIMITS.maxDepth} levels` });
    return null;
  }
  const parts: SqlFragment[] = [];
  for (const [key, value] of Object.entries(node)) {
    if (value === undefined) continue; // GraphQL input objects leave absent fields undefined
    const here = `${at}.${key}`;
    if (key === 'and' || key === 'or') {
      if (!Array.isArray(value) || value.length === 0) {
        state.problems.push({ field: here, message: 'must be a non-empty array of filters' });
        continue;
      }
      // An empty filter matches every row: neutral in `and`, and it makes an `or` match everything.
      const children = value.map((child, i) => compileNode(child, `${here}[${i}]`, depth + 1, state));
      const conditions = children.filter((c): c is SqlFragment => c !== null);
      if (key === 'and' && conditions.length) parts.push(andAll(...conditions)!);
      if (key === 'or' && conditions.length === value.length) parts.push(orAll(conditions));
    } else if (key === 'not') {
      const negated = compileNode(value, here, depth + 1, state);
      // `not {}` matches no row.
      parts.push(negated ? { sql: `not (${negated.sql})`, params: negated.params } : NOTHING);
    } else {
      const field = fieldOf(state.fields, key);
      if (!field) {
        state.problems.push({ field: here, message: `unknown field; filterable: ${Object.keys(state.fields).join(', ')}` });
        continue;
      }
      parts.push(...compileCondition(field, value, here, state));
    }
  }
  return andAll(...parts);
}

/** One condition per operator: `{"eq": "a", "isNull": true}` is `= 'a' and is null`, as written. */
function compileCondition(field: ListField, value: unknown, at: string, state: FilterState): SqlFragment[] {
  if (!isPlainObject(value)) {
    // Shorthand: {"field": value} is equality, {"field": null} is "is null".
    return compileCondition(field, { eq: value }, at, state);
  }
  const entries = Object.entries(value).filter(([, v]) => v !== undefined);
  if (entries.length === 0) {
    state.problems.push({ field: at, message: 'needs at least one operator' });
    return [];
  }
  const conditions: SqlFragment[] = [];
  const column = field.column;
  // A condition of the expression form is named by the operator written there (`ge`, not `gte`).
  const written = operatorAsWritten(value);
  for (const [op, operand] of entries) {
    state.conditions += 1;
    const here = `${at}.${written ?? op}`;
    if (!(OPERATORS as readonly string[]).includes(op)) {
      state.problems.push({ field: here, message: `unknown operator; use one of ${OPERATORS.join(', ')}` });
      continue;
    }
    const checked = checkOperand(field, op as Operator, operand);
    if (!checked.ok) {
      state.problems.push({ field: here, message: checked.message });
      continue;
    }
    const v = checked.value;
    state.values += Array.isArray(v) ? v.length : 1;
    if (field.kind === 'secret' && v !== null) {
      conditions.push(matchSecret(field, op as 'eq' | 'ne' | 'in' | 'nin', v as string | string[]));
      continue;
    }
    if (op === 'isNull') conditions.push({ sql: `${column} is ${v ? '' : 'not '}null`, params: [] });
    else if (op === 'in' || op === 'nin') {
      const values = v as unknown[];
      // An empty `in` matches no row; an empty `nin` every row.
      if (values.length === 0) conditions.push(op === 'in' ? NOTHING : { sql: 'true', params: [] });
      else conditions.push({ sql: `${column} ${op === 'in' ? 'in' : 'not in'} (${values.map(() => '?').join(', ')})`, params: values });
    } else if (v === null) conditions.push({ sql: `${column} is ${op === 'eq' ? '' : 'not '}null`, params: [] });
    else conditions.push({ sql: `${column} ${SQL_OP[op as keyof typeof SQL_OP]} ?`, params: [v] });
  }
  return conditions;
}

/**
 * A condition on a `secret` field: its column against the keyed hashes of the values (under every
 * key held, so rows not yet re-encrypted by a rotation match too).
 */
function matchSecret(field: ListField, op: 'eq' | 'ne' | 'in' | 'nin', value: string | string[]): SqlFragment {
  if (!field.match) throw new Error(`the secret field ${field.column} has no match function`);
  const hashes = (Array.isArray(value) ? value : [value]).flatMap((v) => field.match!(v));
  if (hashes.length === 0) return op === 'in' ? NOTHING : { sql: 'true', params: [] };
  const negated = op === 'ne' || op === 'nin';
  if (hashes.length === 1) return { sql: `${field.column} ${negated ? '<>' : '='} ?`, params: hashes };
  return { sql: `${field.column} ${negated ? 'not in' : 'in'} (${hashes.map(() => '?').join(', ')})`, params: hashes };
}

function checkOperand(field: ListField, op: Operator, operand: unknown): Checked<unknown> {
  if (field.kind === 'secret' && !SECRET_OPS.includes(op)) {
    return {
      ok: false,
      message: `is not supported: this field is stored encrypted and matched through a keyed hash, so it takes only ${SECRET_OPS.join(', ')}`,
    };
  }
  switch (op) {
    case 'isNull':
      return typeof operand === 'boolean' ? { ok: true, value: operand } : { ok: false, message: 'must be true or false' };
    case 'in':
    case 'nin': {
      if (!Array.isArray(operand)) return { ok: false, message: 'must be an array' };
      if (operand.length > LIST_LIMITS.maxInValues) return { ok: false, message: `must have at most ${LIST_LIMITS.maxInValues} values` };
      const values: unknown[] = [];
      for (const item of operand) {
        const checked = checkValue(field, item);
        if (!checked.ok) return { ok: false, message: `has a value that ${checked.message}` };
        values.push(checked.value);
      }
      return { ok: true, value: values };
    }
    case 'like':
    case 'ilike': {
      if (field.kind !== 'string') return { ok: false, message: 'applies to text fields only' };
      const checked = checkValue(field, operand);
      // In a pattern a backslash escapes the next character (\% is a literal %), so an odd run of
      // backslashes at the very end escapes nothing, which PostgreSQL refuses.
      if (checked.ok && trailingBackslashes(checked.value as string) % 2 === 1) {
        return { ok: false, message: 'ends with an unpaired backslash; write two backslashes for a literal one' };
      }
      return checked;
    }
    case 'eq':
    case 'ne':
      if (operand === null) return { ok: true, value: null };
      return checkValue(field, operand);
    default:
      if (!ORDERABLE_OPS.includes(op)) return { ok: false, message: 'is not supported' };
      return checkValue(field, operand);
  }
}

const trailingBackslashes = (text: string) => text.length - text.replace(/\\+$/, '').length;

function checkValue(field: ListField, value: unknown): Checked<unknown> {
  switch (field.kind) {
    case 'id':
      // GraphQL IDs arrive as strings; JSON filters as numbers.
      if (typeof value === 'string' && /^(0|[1-9]\d{0,15})$/.test(value)) value = Number(value);
      return checkInteger(value, 0, Number.MAX_SAFE_INTEGER);
    case 'int32':
      return checkInteger(value, INT32_MIN, INT32_MAX);
    case 'safeInt':
      return checkInteger(value, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
    case 'revision':
      // A token's `version` is a decimal string on the wire and an integer in the table.
      if (typeof value === 'string' && /^\d{1,9}$/.test(value)) value = Number(value);
      return checkInteger(value, 0, INT32_MAX);
    case 'string':
    case 'secret':
      return checkString(value, 2048);
    case 'date':
      return checkDate(value);
    case 'boolean':
      return typeof value === 'boolean' ? { ok: true, value } : { ok: false, message: 'must be true or false' };
  }
}
