import { AppError, type FieldProblem } from '../errors.js';
import { headerText } from '../shared/headers.js';
import { checkDate, checkId, checkInt32, checkSafeInteger, checkString, type Checked } from '../shared/values.js';
import type { Field } from './field.js';
import type { Body, WritableOf } from './resource.js';

/**
 * Write input (docs/rest.md#conventions), parsed at the edge: REST's JSON body and GraphQL's input object become the
 * typed, checked values a service takes. Fields outside the writable set are ignored; every problem
 * is collected and reported at once, each naming its field.
 */
export type WriteMode = 'create' | 'replace' | 'patch';

export interface ParseOptions {
  /** Record ids may be given as decimal text (GraphQL's ID); REST bodies carry JSON numbers. */
  idsAsText?: boolean;
}

/** What a field is written as when a create or replace leaves it out (or Attrs names it and the body lacks it). */
export function defaultOf(field: Field): unknown {
  if (field.defaultValue !== undefined) return field.defaultValue;
  if (field.nullable) return null;
  if (field.kind === 'textList') return [];
  if (field.kind === 'boolean') return false;
  return field.kind === 'string' || field.kind === 'secret' ? '' : 0;
}

/** A text list: an array of at most `maxItems` texts, each checked like a string field; duplicates kept once, in order. */
function checkTextList(field: Field, value: unknown): Checked<unknown> {
  if (!Array.isArray(value)) return { ok: false, message: 'must be an array of strings' };
  if (value.length > field.maxItems!) return { ok: false, message: `must have at most ${field.maxItems} items` };
  for (const [i, item] of value.entries()) {
    const checked = checkString(item, field.max!);
    if (!checked.ok) return { ok: false, message: `item ${i + 1} ${checked.message}` };
    if (field.pattern && !field.pattern.test.test(checked.value)) {
      return { ok: false, message: `item ${i + 1} (${JSON.stringify(checked.value.slice(0, 64))}) ${field.pattern.message}` };
    }
  }
  return { ok: true, value: [...new Set(value as string[])] };
}

/** One field's value checked against its definition. */
export function checkField(field: Field, value: unknown, options: ParseOptions = {}): Checked<unknown> {
  if (value === null) return field.nullable ? { ok: true, value: null } : { ok: false, message: 'must not be null' };
  switch (field.kind) {
    case 'string':
    case 'secret': {
      const checked = checkString(value, field.max!);
      if (!checked.ok) return checked;
      if (field.nonEmpty && checked.value.trim() === '') return { ok: false, message: 'must not be empty' };
      if (field.pattern && !field.pattern.test.test(checked.value)) return { ok: false, message: field.pattern.message };
      return checked;
    }
    case 'int32':
      return checkInt32(value);
    case 'safeInt':
      return checkSafeInteger(value);
    case 'id':
    case 'reference':
      return typeof value === 'number' || (options.idsAsText && typeof value === 'string')
        ? checkId(value)
        : { ok: false, message: 'must be a positive integer' };
    case 'date':
      return checkDate(value);
    case 'boolean':
      return typeof value === 'boolean' ? { ok: true, value } : { ok: false, message: 'must be true or false' };
    case 'textList':
      return checkTextList(field, value);
    default:
      throw new Error(`a ${field.kind} field is not written by clients`);
  }
}

export function requireObject(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw AppError.badRequest('the request body must be a JSON object');
  return body as Record<string, unknown>;
}

/** Names a record has but no write may set (docs/rest.md#conventions): skipped when Attrs names them, in any case. */
const READ_ONLY = new Set(['id', 'createdat', 'updatedat', 'deletedat', 'client', 'version', 'password', 'remembertoken']);

/** ASCII letters in lower case, and only they: a field name is ASCII, and no other character may pass for one (`ſ` for `s`, `K` for `k`). */
const asciiLowerCase = (text: string) => text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());

/**
 * A body's writable fields by name, and their names by lower-case form (and by their own, which
 * most clients send: no case to fold): made once per body definition, not per request.
 */
const WRITABLE = new WeakMap<Body, ReadonlyMap<string, Field>>();
const WRITABLE_NAMES = new WeakMap<Body, ReadonlyMap<string, string>>();
function writableFields(resource: Body): ReadonlyMap<string, Field> {
  let fields = WRITABLE.get(resource);
  if (!fields) WRITABLE.set(resource, (fields = new Map(resource.writable)));
  return fields;
}
function writableNames(resource: Body): ReadonlyMap<string, string> {
  let names = WRITABLE_NAMES.get(resource);
  if (!names) {
    const byName = new Map<string, string>();
    for (const [name] of resource.writable) byName.set(name.toLowerCase(), name).set(name, name);
    WRITABLE_NAMES.set(resource, (names = byName));
  }
  return names;
}

/**
 * The `Attrs` header as the original service read it (docs/rest.md#conventions): comma-separated field names,
 * spaces around them ignored, matched case-insensitively (`FirstName` is `firstName`); read-only
 * names skipped; any other name is a 400, which shows it as the client wrote it (the header's
 * UTF-8 read as such: src/shared/headers.ts). The writable fields' own names, or undefined when
 * the header names nothing (then the body's own fields are changed).
 */
export function parseAttrs(header: string | undefined, resource: Body): string[] | undefined {
  if (header === undefined || !/[^,\s]/.test(header)) return undefined;
  const nameOf = writableNames(resource);
  const names: string[] = [];
  const unknown: string[] = [];
  for (const part of headerText(header, { escape: true }).split(',')) {
    const given = part.trim();
    if (!given) continue;
    // A writable field's own name is found as it is; any other spelling by its lower-case form.
    const name = nameOf.get(given) ?? nameOf.get(asciiLowerCase(given));
    if (name) names.push(name);
    else if (!READ_ONLY.has(asciiLowerCase(given))) unknown.push(given);
  }
  if (unknown.length) {
    const writable = resource.writable.map(([name]) => name).join(', ');
    const shown = (name: string) => Array.from(name).slice(0, 64).join(''); // never half a character
    throw AppError.invalid(unknown.map((n) => ({ field: 'Attrs', message: `"${shown(n)}" is not a writable field; writable: ${writable}` })));
  }
  return [...new Set(names)];
}

/**
 * Reads write input. create and replace: every writable field, absent ones take their defaults,
 * required ones must be there. patch: only `attrs` (or, without them, the writable fields the input
 * carries); a field Attrs names that the body lacks is written as its default, as the original
 * service did (its clients send Attrs listing every writable field and a body of the changed
 * ones), and checked like a value sent: a token's `userID` cannot become 0.
 */
export function parseWrite<R extends Body>(
  resource: R,
  input: unknown,
  mode: WriteMode,
  attrs?: readonly string[],
  options: ParseOptions = {},
): Partial<WritableOf<R>> {
  const object = requireObject(input);
  const problems: FieldProblem[] = [];
  const values: Record<string, unknown> = {};
  const fields = writableFields(resource);
  const names = mode !== 'patch' ? [...fields.keys()] : (attrs ?? Object.keys(object).filter((key) => fields.has(key) && object[key] !== undefined));
  for (const name of names) {
    const field = fields.get(name)!;
    const present = Object.hasOwn(object, name) && object[name] !== undefined;
    // A write-only field a replace leaves out keeps its value: the client never had it to send back.
    if (!present && mode === 'replace' && field.writeOnly) continue;
    if (!present && mode !== 'patch') {
      if (field.required) problems.push({ field: name, message: 'is required' });
      else values[name] = defaultOf(field);
      continue;
    }
    const checked = checkField(field, present ? object[name] : defaultOf(field), options);
    if (checked.ok) values[name] = checked.value;
    else {
      const why = present
        ? checked.message
        : `is named in Attrs but missing from the body, and its default (${JSON.stringify(defaultOf(field))}) is not allowed: it ${checked.message}`;
      problems.push({ field: name, message: why });
    }
  }
  if (problems.length) throw AppError.invalid(problems);
  return values as Partial<WritableOf<R>>;
}

/** The record id of a path or a GraphQL ID; a malformed one is a 400 naming `field`. */
export function parseId(raw: unknown, field = 'id'): number {
  const checked = checkId(raw);
  if (!checked.ok) throw AppError.invalid([{ field, message: checked.message }]);
  return checked.value;
}

/** The most ids a link or unlink names at once. */
export const MAX_LINK_IDS = 1000;

/**
 * A link body (REST's JSON array, GraphQL's list of IDs as numbers): at most 1000 positive integer
 * ids; duplicates count once. The ids come back sorted, so that every request locks rows in the
 * same order (no deadlock between two requests that name the same ids in opposite orders).
 */
export function parseIdList(body: unknown, field: string): number[] {
  if (!Array.isArray(body)) throw AppError.invalid([{ field, message: 'must be a JSON array of ids' }]);
  if (body.length > MAX_LINK_IDS) throw AppError.invalid([{ field, message: `must have at most ${MAX_LINK_IDS} ids` }]);
  const bad = body.findIndex((id) => typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1);
  if (bad !== -1) throw AppError.invalid([{ field: `${field}[${bad}]`, message: 'must be a positive integer' }]);
  return [...new Set(body as number[])].sort((a, b) => a - b);
}
