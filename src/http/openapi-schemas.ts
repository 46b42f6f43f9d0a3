import type { Field, FieldKind } from '../resource/field.js';
import type { Body, Resource } from '../resource/resource.js';
import type { ListFields } from '../list/list.js';

/**
 * The pieces of OpenAPI 3.1 a route describes itself with (src/http/routes.ts: RouteDocs): schemas
 * derived from the resource definitions the service validates with (a record's output fields, a
 * body's writable fields with their checks), and the parameters, headers and error answers that
 * src/http/openapi.ts defines once under `components`.
 */
export type Schema = Record<string, unknown>;

export function scalar(kind: FieldKind, max?: number, maxItems?: number): Schema {
  switch (kind) {
    case 'boolean':
      return { type: 'boolean' };
    case 'textList':
      return { type: 'array', items: { type: 'string', ...(max ? { maxLength: max } : {}) }, ...(maxItems ? { maxItems } : {}) };
    case 'id':
    case 'reference':
      return { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER };
    case 'int32':
      return { type: 'integer', format: 'int32' };
    case 'safeInt':
      return { type: 'integer', minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER };
    case 'date':
      return { type: 'string', format: 'date-time' };
    case 'revision':
      return { type: 'string', pattern: '^[1-9][0-9]*$', description: 'the record revision, "1" on create' };
    case 'string':
    case 'secret':
      return { type: 'string', ...(max ? { maxLength: max } : {}) };
    case 'json':
      return { type: 'object' };
  }
}

export const nullable = (schema: Schema, isNullable: boolean | undefined): Schema => (isNullable ? { ...schema, type: [schema.type, 'null'] } : schema);

export const fieldSchema = (field: Field): Schema => ({
  ...nullable(scalar(field.kind, field.max, field.maxItems), field.nullable),
  ...(field.defaultValue !== undefined ? { default: field.defaultValue } : {}),
  ...(field.writeOnly ? { writeOnly: true } : {}),
});

/** A record as the API answers it: its output fields. */
export function recordSchema(resource: Resource): Schema {
  const properties = Object.fromEntries(resource.output.map(([name, field]) => [name, fieldSchema(field)]));
  return { type: 'object', properties, required: Object.keys(properties) };
}

/**
 * The items of a list of linked records (a user's applications): the list fields, each as the
 * linked record shows it when it has the field, else as the list compares it (a link's `right`);
 * `skip` leaves out names the list filters on but the item does not carry (`applicationID`).
 */
export function linkedSchema(fields: ListFields, linked: Resource, skip: readonly string[] = []): Schema {
  const byName = new Map(linked.output);
  const properties: Record<string, Schema> = {};
  for (const [name, field] of Object.entries(fields)) {
    if (skip.includes(name)) continue;
    properties[name] = byName.has(name) ? fieldSchema(byName.get(name)!) : nullable(scalar(field.kind === 'secret' ? 'string' : field.kind), field.nullable);
  }
  return { type: 'object', properties, required: Object.keys(properties) };
}

/** A write body: the writable fields with their checks; `required` only where create/PUT need them. */
export function writeSchema(body: Body, mode: 'create' | 'patch', withId = false): Schema {
  const properties: Record<string, Schema> = {};
  for (const [name, field] of body.writable) properties[name] = fieldSchema(field);
  if (withId) {
    properties.id = {
      type: ['integer', 'null'],
      minimum: 0,
      description: 'An id reserved by "apply id" and not used yet (docs/rest.md#conventions); 0 or null: the next id',
    };
  }
  const required = mode === 'create' ? body.writable.filter(([, f]) => f.required).map(([n]) => n) : [];
  return { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: true };
}

export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
export const json = (schema: Schema) => ({ 'application/json': { schema } });
export const param = (name: string) => ({ $ref: `#/components/parameters/${name}` });
export const header = (name: string) => ({ $ref: `#/components/headers/${name}` });
export const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [String(s), { $ref: `#/components/responses/E${s}` }]));

/** The error statuses src/http/openapi.ts describes (components.responses.E<status>). */
export const ERROR_STATUSES: Record<string, string> = {
  400: 'Invalid input: body, field, query parameter, path id or Attrs (`details` names the fields)',
  401: 'Missing or invalid access token',
  403: 'The token lacks the permission',
  405: 'A method the path does not serve (Allow lists those it does)',
  404: 'No such live record, link or path',
  409: 'Conflict with another record (a duplicate unique value, an id that exists) or with the record’s state (a restore of a record that is not deleted)',
  413: 'Body over 1 MiB',
  415: 'Body that is not JSON',
  503: 'Database unavailable, or every database connection busy (Retry-After says when to try again)',
};

// A request body on any method is read as JSON (413 over 1 MiB, 415 when not JSON); 405 for a
// method the path does not serve.
export const READ_ERRORS = [400, 401, 403, 404, 405, 413, 415, 503];
export const WRITE_ERRORS = [400, 401, 403, 404, 405, 409, 413, 415, 503];

/** The header of an answer to a write that reads `Prefer`. */
export const PREFERENCE = { 'Preference-Applied': header('Preference-Applied') };

/** Either the original's bare answer or, with `Prefer: return=representation`, the record. */
export const preferred = (bare: Schema, record: Schema) => json({ oneOf: [bare, record] });

/**
 * A list: a user's links (`withId`) or a top-level list, which also takes `deleted` (its records
 * then carry `deletedAt`).
 */
export function listOperation(item: Schema, withId: boolean): Schema {
  const records = withId ? item : { allOf: [item, { type: 'object', properties: { deletedAt: nullable(scalar('date'), true) } }] };
  return {
    parameters: [...(withId ? [param('id')] : []), param('filter'), param('orderBy'), param('page'), param('pageSize'), ...(withId ? [] : [param('deleted')])],
    responses: {
      200: {
        description: 'A page of records, a bare JSON array',
        headers: { 'X-Total-Count': header('X-Total-Count'), Link: header('Link') },
        content: json({ type: 'array', items: records }),
      },
      ...errors(...READ_ERRORS),
    },
  };
}

/** A write of one record at /…/{id} (PUT, PATCH, a status): `1`, or the record with Prefer: return=representation. */
export const writeOperation = (body: Schema, record: Schema, extra: Schema[] = []): Schema => ({
  parameters: [param('id'), param('Prefer'), ...extra],
  requestBody: { required: true, content: json(body) },
  responses: {
    200: { description: '`1`, or the record with Prefer: return=representation', headers: PREFERENCE, content: preferred(ref('One'), record) },
    ...errors(...WRITE_ERRORS),
  },
});
