import { AppError, type FieldProblem } from './errors.js';
import { checkDate, checkId, checkInt32, checkSafeInteger, checkString, type Checked } from './values.js';

/**
 * Write bodies (SPEC §3): which fields a resource accepts, their types and defaults, and how
 * create, replace (PUT) and patch (PATCH + Attrs) read a body. Fields outside the writable set are
 * ignored; every problem is collected and reported at once, naming the field.
 */
export type WritableField =
  /** `nonEmpty`: "" (or only spaces) is refused too, for values that must say something. */
  | { kind: 'string'; max: number; nullable?: boolean; required?: boolean; nonEmpty?: boolean; pattern?: { test: RegExp; message: string } }
  | { kind: 'int32' | 'safeInt'; required?: boolean }
  | { kind: 'id'; required?: boolean }
  | { kind: 'date'; nullable: true };

export type WritableFields = Readonly<Record<string, WritableField>>;

export type WriteMode = 'create' | 'replace' | 'patch';

export function defaultOf(field: WritableField): unknown {
  if ('nullable' in field && field.nullable) return null;
  return field.kind === 'string' ? '' : 0;
}

function checkField(field: WritableField, value: unknown): Checked<unknown> {
  if (value === null) {
    return 'nullable' in field && field.nullable ? { ok: true, value: null } : { ok: false, message: 'must not be null' };
  }
  switch (field.kind) {
    case 'string': {
      const checked = checkString(value, field.max);
      if (checked.ok && field.nonEmpty && (checked.value as string).trim() === '') return { ok: false, message: 'must not be empty' };
      if (checked.ok && field.pattern && !field.pattern.test.test(checked.value as string)) return { ok: false, message: field.pattern.message };
      return checked;
    }
    case 'int32':
      return checkInt32(value);
    case 'safeInt':
      return checkSafeInteger(value);
    case 'id':
      return typeof value === 'number' ? checkId(value) : { ok: false, message: 'must be a positive integer' };
    case 'date':
      return checkDate(value);
  }
}

export function requireObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw AppError.badRequest('the request body must be a JSON object');
  }
  return body as Record<string, unknown>;
}

/** Names a record has but no write may set (SPEC §4): skipped when Attrs names them, in any case. */
const READ_ONLY = new Set(['id', 'createdat', 'updatedat', 'deletedat', 'client', 'version', 'password', 'remembertoken']);

/**
 * Parses the `Attrs` header as the original service read it (SPEC §4): comma-separated field names,
 * spaces around them ignored, matched case-insensitively (`FirstName` is `firstName`); read-only
 * names skipped; any other name → 400. Returns the writable fields' own names, or undefined when
 * the header is absent (then the body's own fields are changed).
 */
export function parseAttrs(header: string | undefined, fields: WritableFields): string[] | undefined {
  if (header === undefined) return undefined;
  // A header that names nothing (empty, or only commas) is no Attrs: the body's own fields change.
  if (!/[^,\s]/.test(header)) return undefined;
  const byLowerCase = new Map(Object.keys(fields).map((name) => [name.toLowerCase(), name]));
  const names: string[] = [];
  const unknown: string[] = [];
  for (const given of header.split(',').map((n) => n.trim()).filter(Boolean)) {
    const name = byLowerCase.get(given.toLowerCase());
    if (name) names.push(name);
    else if (!READ_ONLY.has(given.toLowerCase())) unknown.push(given);
  }
  if (unknown.length) {
    throw AppError.invalid(
      unknown.map((n) => ({ field: 'Attrs', message: `"${n.slice(0, 64)}" is not a writable field; writable: ${Object.keys(fields).join(', ')}` })),
    );
  }
  return [...new Set(names)];
}

/**
 * Reads a write body. create/replace: every writable field, absent → default, required ones must
 * be there. patch: only `attrs` (or, without them, the writable fields the body carries); a field
 * Attrs names that the body lacks is written as its default, as the original service did (its
 * clients send Attrs listing every writable field and a body of the changed ones), and checked like
 * a value sent: a token's `userID` cannot become 0.
 */
export function readWriteBody(body: unknown, fields: WritableFields, mode: WriteMode, attrs?: string[]): Record<string, unknown> {
  const object = requireObject(body);
  const problems: FieldProblem[] = [];
  const values: Record<string, unknown> = {};
  const names =
    mode !== 'patch' ? Object.keys(fields) : (attrs ?? Object.keys(object).filter((k) => Object.hasOwn(fields, k)));
  for (const name of names) {
    const field = fields[name];
    const present = Object.hasOwn(object, name) && object[name] !== undefined;
    if (!present && mode !== 'patch') {
      if ('required' in field && field.required) problems.push({ field: name, message: 'is required' });
      else values[name] = defaultOf(field);
      continue;
    }
    const checked = checkField(field, present ? object[name] : defaultOf(field));
    if (checked.ok) values[name] = checked.value;
    else problems.push({ field: name, message: present ? checked.message : `is named in Attrs but missing from the body, and its default (${JSON.stringify(defaultOf(field))}) is not allowed: it ${checked.message}` });
  }
  if (problems.length) throw AppError.invalid(problems);
  return values;
}
