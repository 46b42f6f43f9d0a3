import { AppError, type FieldProblem } from '../shared/errors.js';
import { checkDate, checkInteger, checkString, INT32_MAX, INT32_MIN, type Checked } from '../shared/values.js';

/**
 * The list language of SPEC §5, shared by every list in REST and GraphQL: parse the four inputs,
 * validate them against the list's fields, and compile them into a MikroORM filter and order
 * (values stay values: MikroORM binds them as query parameters, never into the SQL text).
 */

/** How a field's values are checked and compared. */
export type FieldKind = 'id' | 'int32' | 'safeInt' | 'string' | 'date' | 'revision';

export interface ListField {
  /** Property path in the entity queried, e.g. ['application', 'name'] for a link list. */
  path: readonly string[];
  kind: FieldKind;
  nullable?: boolean;
}

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

export interface CompiledList {
  where: Record<string, unknown>;
  orderBy: Record<string, unknown>[];
  page: number;
  pageSize: number;
  limit: number;
  offset: number;
}

export interface Page<T> {
  total: number;
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
const MIKRO_OP: Record<Exclude<Operator, 'isNull'>, string> = {
  eq: '$eq', ne: '$ne', gt: '$gt', gte: '$gte', lt: '$lt', lte: '$lte', in: '$in', nin: '$nin', like: '$like', ilike: '$ilike',
};
const ORDERABLE_OPS: readonly Operator[] = ['gt', 'gte', 'lt', 'lte'];

export function compileList(input: ListInput, fields: ListFields): CompiledList {
  const problems: FieldProblem[] = [];
  const page = parseCount(input.page, 'page', 1, Number.MAX_SAFE_INTEGER, 1, problems);
  const pageSize = parseCount(input.pageSize, 'pageSize', 1, LIST_LIMITS.maxPageSize, LIST_LIMITS.defaultPageSize, problems);
  const orderBy = compileOrder(input.orderBy, fields, problems);
  const where = compileFilterInput(input.filter, fields, problems);
  if (problems.length) throw AppError.invalid(problems);
  // Past any real table's end long before it stops being exact; PostgreSQL's offset is a bigint.
  const offset = Math.min((page - 1) * pageSize, Number.MAX_SAFE_INTEGER);
  return { where, orderBy, page, pageSize, limit: pageSize, offset };
}

function parseCount(raw: unknown, name: string, min: number, max: number, fallback: number, problems: FieldProblem[]): number {
  if (raw === undefined || raw === null || raw === '') return fallback;
  if (Array.isArray(raw)) {
    problems.push({ field: name, message: 'must be given once' });
    return fallback;
  }
  const value = typeof raw === 'string' && /^\d{1,16}$/.test(raw.trim()) ? Number(raw.trim()) : raw;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    problems.push({ field: name, message: `must be an integer from ${min} to ${max}` });
    return fallback;
  }
  return value;
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

function compileOrder(raw: ListInput['orderBy'], fields: ListFields, problems: FieldProblem[]): Record<string, unknown>[] {
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
  const order: Record<string, unknown>[] = [];
  const seen = new Set<string>();
  for (const key of keys) {
    const field = fieldOf(fields, key.field);
    if (!field) {
      problems.push({ field: 'orderBy', message: `unknown field "${key.field.slice(0, 64)}"; sortable: ${Object.keys(fields).join(', ')}` });
      continue;
    }
    if (seen.has(key.field)) continue;
    seen.add(key.field);
    order.push(nest(field.path, key.direction));
  }
  // Pages are stable only with a unique last key.
  if (!seen.has('id')) order.push(nest(fields.id.path, 'asc'));
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

function compileFilterInput(raw: unknown, fields: ListFields, problems: FieldProblem[]): Record<string, unknown> {
  if (raw === undefined || raw === null || raw === '') return {};
  let tree = raw;
  if (Array.isArray(raw)) {
    problems.push({ field: 'filter', message: 'must be given once' });
    return {};
  }
  if (typeof raw === 'string') {
    try {
      tree = JSON.parse(raw);
    } catch {
      problems.push({ field: 'filter', message: 'is not valid JSON' });
      return {};
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
const fieldOf = (fields: ListFields, name: string): ListField | undefined => (Object.hasOwn(fields, name) ? fields[name] : undefined);

/** Whether a compiled filter says anything (an empty one matches every row). */
const isCondition = (where: Record<string, unknown>) => Object.keys(where).length > 0;

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);

function compileNode(node: unknown, at: string, depth: number, state: FilterState): Record<string, unknown> {
  if (!isPlainObject(node)) {
    state.problems.push({ field: at, message: 'must be a JSON object' });
    return {};
  }
  if (depth > LIST_LIMITS.maxDepth) {
    state.problems.push({ field: at, message: `is nested deeper than ${LIST_LIMITS.maxDepth} levels` });
    return {};
  }
  const parts: Record<string, unknown>[] = [];
  for (const [key, value] of Object.entries(node)) {
    if (value === undefined) continue; // GraphQL input objects leave absent fields undefined
    const here = `${at}.${key}`;
    if (key === 'and' || key === 'or') {
      if (!Array.isArray(value) || value.length === 0) {
        state.problems.push({ field: here, message: 'must be a non-empty array of filters' });
        continue;
      }
      // An empty filter matches every row: neutral in `and`, and it makes an `or` match everything.
      const children = value.map((child, i) => compileNode(child, `${here}[${i}]`, depth + 1, state)).filter(isCondition);
      if (key === 'and' && children.length) parts.push({ $and: children });
      if (key === 'or' && children.length === value.length) parts.push({ $or: children });
    } else if (key === 'not') {
      const negated = compileNode(value, here, depth + 1, state);
      // `not {}` matches no row (an empty `in` is false in SQL).
      parts.push(isCondition(negated) ? { $not: negated } : nest(state.fields.id.path, { $in: [] }));
    } else {
      const field = fieldOf(state.fields, key);
      if (!field) {
        state.problems.push({ field: here, message: `unknown field; filterable: ${Object.keys(state.fields).join(', ')}` });
        continue;
      }
      for (const condition of compileCondition(field, value, here, state)) parts.push(nest(field.path, condition));
    }
  }
  if (parts.length === 0) return {};
  return parts.length === 1 ? parts[0] : { $and: parts };
}

/** One condition per operator: `{"eq": "a", "isNull": true}` is `= 'a' and is null`, as written. */
function compileCondition(field: ListField, value: unknown, at: string, state: FilterState): Record<string, unknown>[] {
  if (!isPlainObject(value)) {
    // Shorthand: {"field": value} is equality, {"field": null} is "is null".
    return compileCondition(field, { eq: value }, at, state);
  }
  const entries = Object.entries(value).filter(([, v]) => v !== undefined);
  if (entries.length === 0) {
    state.problems.push({ field: at, message: 'needs at least one operator' });
    return [];
  }
  const conditions: Record<string, unknown>[] = [];
  for (const [op, operand] of entries) {
    state.conditions += 1;
    const here = `${at}.${op}`;
    if (!(OPERATORS as readonly string[]).includes(op)) {
      state.problems.push({ field: here, message: `unknown operator; use one of ${OPERATORS.join(', ')}` });
      continue;
    }
    const checked = checkOperand(field, op as Operator, operand);
    if (!checked.ok) {
      state.problems.push({ field: here, message: checked.message });
      continue;
    }
    state.values += Array.isArray(checked.value) ? checked.value.length : 1;
    if (op === 'isNull') conditions.push({ [checked.value ? '$eq' : '$ne']: null });
    else conditions.push({ [MIKRO_OP[op as Exclude<Operator, 'isNull'>]]: checked.value });
  }
  return conditions;
}

function checkOperand(field: ListField, op: Operator, operand: unknown): Checked<unknown> {
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
      return checkString(value, 2048);
    case 'date':
      return checkDate(value);
  }
}

/** ['application', 'name'], x → { application: { name: x } } */
function nest(path: readonly string[], leaf: unknown): Record<string, unknown> {
  let node: unknown = leaf;
  for (let i = path.length - 1; i >= 0; i--) node = { [path[i]]: node };
  return node as Record<string, unknown>;
}
