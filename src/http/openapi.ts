import { applications } from '../applications/application.resource.js';
import { AUDIT_ACTIONS, auditEvents } from '../audit/audit.resource.js';
import { LINK_RIGHT_BODY } from '../links/link.routes.js';
import { USER_APPLICATION_LIST_FIELDS, USER_ROLE_LIST_FIELDS } from '../links/link.service.js';
import { LIST_LIMITS, type ListFields } from '../list/list.js';
import type { Field, FieldKind } from '../resource/field.js';
import type { Body, Resource } from '../resource/resource.js';
import { roles } from '../roles/role.resource.js';
import { tokens } from '../tokens/token.resource.js';
import { USER_STATUS_BODY } from '../users/user.routes.js';
import { users } from '../users/user.resource.js';
import { webhookDeliveries, webhooks } from '../webhooks/webhook.resource.js';
import { CORS_EXPOSED_HEADERS } from './cors.js';
import type { ApiTag, DocumentedRoute } from './routes.js';

/**
 * The OpenAPI 3.1 document of the REST API (docs/operations.md), built at start from the route table itself
 * (every route it serves is in it, or the service does not start) and from the resource
 * definitions the service validates with (the writable fields of each body, the output and list
 * fields of each record), so the document cannot drift from what the service does.
 */
type Schema = Record<string, unknown>;

const ERROR_STATUSES: Record<string, string> = {
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

function scalar(kind: FieldKind, max?: number, maxItems?: number): Schema {
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

const fieldSchema = (field: Field): Schema => ({
  ...nullable(scalar(field.kind, field.max, field.maxItems), field.nullable),
  ...(field.defaultValue !== undefined ? { default: field.defaultValue } : {}),
  ...(field.writeOnly ? { writeOnly: true } : {}),
});

const nullable = (schema: Schema, isNullable: boolean | undefined): Schema => (isNullable ? { ...schema, type: [schema.type, 'null'] } : schema);

/** A record as the API answers it: its output fields. */
function recordSchema(resource: Resource): Schema {
  const properties = Object.fromEntries(resource.output.map(([name, field]) => [name, fieldSchema(field)]));
  return { type: 'object', properties, required: Object.keys(properties) };
}

/** The items of a user's link list: the linked record's list fields (`applicationID`, GraphQL's name of its id, aside). */
function linkedSchema(fields: ListFields, linked: Resource): Schema {
  const byName = new Map(linked.output);
  const properties: Record<string, Schema> = {};
  for (const [name, field] of Object.entries(fields)) {
    if (name === 'applicationID') continue;
    properties[name] = byName.has(name) ? fieldSchema(byName.get(name)!) : nullable(scalar(field.kind === 'secret' ? 'string' : field.kind), field.nullable);
  }
  return { type: 'object', properties, required: Object.keys(properties) };
}

/** A write body: the writable fields with their checks; `required` only where create/PUT need them. */
function writeSchema(body: Body, mode: 'create' | 'patch', withId = false): Schema {
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

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Schema) => ({ 'application/json': { schema } });

/** The records of the REST API, each at its path (without BASE_PATH). */
const RESOURCES: { path: string; resource: Resource }[] = [
  { path: '/user', resource: users },
  { path: '/token', resource: tokens },
  { path: '/application', resource: applications },
  { path: '/role', resource: roles },
  { path: '/webhook', resource: webhooks },
];

function components(): Schema {
  const schemas: Record<string, Schema> = {
    Error: {
      type: 'object',
      required: ['code', 'error', 'message', 'requestId'],
      properties: {
        code: { type: 'integer', description: 'the HTTP status' },
        error: { type: 'string', examples: ['BAD_REQUEST', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'CONFLICT'] },
        message: { type: 'string' },
        requestId: { type: 'string' },
        details: {
          type: 'array',
          items: { type: 'object', required: ['field', 'message'], properties: { field: { type: 'string' }, message: { type: 'string' } } },
        },
      },
    },
    Id: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'a record id, a bare JSON number' },
    Count: { type: 'integer', minimum: 0, description: 'how many records the write changed, a bare JSON number' },
    One: { const: 1, description: 'the write matched its one record' },
    IdList: { type: 'array', maxItems: 1000, items: ref('Id') },
    LinkedApplication: linkedSchema(USER_APPLICATION_LIST_FIELDS, applications),
    LinkedRole: linkedSchema(USER_ROLE_LIST_FIELDS, roles),
    ApplicationLink: {
      type: 'object',
      required: ['userID', 'applicationID', 'right', 'createdAt', 'updatedAt'],
      properties: {
        userID: scalar('id'),
        applicationID: scalar('id'),
        right: scalar('safeInt'),
        createdAt: scalar('date'),
        updatedAt: scalar('date'),
      },
    },
    LinkRight: writeSchema(LINK_RIGHT_BODY, 'create'),
    AuditEvent: (() => {
      const schema = recordSchema(auditEvents);
      const properties = schema.properties as Record<string, Schema>;
      properties.action = { enum: [...AUDIT_ACTIONS] };
      properties.changes = { type: 'object', additionalProperties: { type: 'object', properties: { before: {}, after: {} } } };
      return schema;
    })(),
    BulkRevocation: { type: 'object', required: ['revoked', 'skipped'], properties: { revoked: { type: 'integer' }, skipped: { type: 'integer' } } },
    TokenParameter: {
      type: 'object',
      required: ['token'],
      properties: { token: { type: 'string', description: 'the access token value' }, token_type_hint: { type: 'string' } },
    },
    Introspection: {
      type: 'object',
      required: ['active'],
      properties: {
        active: { type: 'boolean' },
        scope: { type: 'string' },
        client_id: { type: 'string' },
        username: { type: 'string' },
        sub: { type: 'string', description: 'the user id' },
        exp: { type: 'integer', description: 'seconds since the epoch; absent when the token never expires' },
        iat: { type: 'integer' },
        token_type: { type: 'string' },
      },
    },
    UserStatus: writeSchema(USER_STATUS_BODY, 'create'),
    WebhookWithSecret: {
      allOf: [
        ref('Webhook'),
        { type: 'object', required: ['secret'], properties: { secret: { type: 'string', description: 'the signing secret, answered this once' } } },
      ],
    },
    WebhookSecret: { type: 'string', pattern: '^whsec_', description: 'the new signing secret, answered this once' },
    WebhookReplay: {
      type: 'object',
      required: ['after'],
      properties: { after: { type: 'integer', minimum: 0, description: 'the event id to deliver after (0: the log’s start), at most 100,000 events back' } },
    },
    WebhookDelivery: recordSchema(webhookDeliveries),
  };
  for (const { resource } of RESOURCES) {
    schemas[resource.type] = recordSchema(resource);
    schemas[`${resource.type}Create`] = writeSchema(resource, 'create', true);
    schemas[`${resource.type}Replace`] = writeSchema(resource, 'create');
    schemas[`${resource.type}Patch`] = writeSchema(resource, 'patch');
  }
  const parameters = {
    id: { name: 'id', in: 'path', required: true, schema: ref('Id'), description: 'The record’s id (a malformed one is a 400, not a 404)' },
    applicationID: { name: 'applicationID', in: 'path', required: true, schema: ref('Id'), description: 'The application’s id' },
    filter: {
      name: 'filter',
      in: 'query',
      schema: { type: 'string' },
      description:
        "The original's expression form (`status ge 1 and lastName ne 'x'`) or a JSON object " +
        '(`{"status":{"in":[1,2]}}`); field names in any case. See the README.',
      examples: { expression: { value: "status ge 1 and lastName ne 'x'" }, json: { value: '{"status":{"in":[1,2]}}' } },
    },
    orderBy: {
      name: 'orderBy',
      in: 'query',
      schema: { type: 'string' },
      description: '`field`, `field asc|desc` or `-field`, comma-separated; default `id asc`',
      example: 'createdAt desc, lastName',
    },
    page: { name: 'page', in: 'query', schema: { type: 'string', pattern: '^[+-]?[0-9]*$' }, description: 'an integer, default 1; below 1 reads as 1' },
    pageSize: {
      name: 'pageSize',
      in: 'query',
      schema: { type: 'string', pattern: '^[+-]?[0-9]*$' },
      description: `an integer, default ${LIST_LIMITS.defaultPageSize}; below 1 reads as the default, above ${LIST_LIMITS.maxPageSize} as ${LIST_LIMITS.maxPageSize}`,
    },
    deleted: {
      name: 'deleted',
      in: 'query',
      schema: { type: 'string', enum: ['only', 'include'] },
      description:
        'Soft-deleted records (any case): `only` them, or `include` them with the live ones; every record of such an answer then ' +
        'carries `deletedAt` (null for a live one). Left out or empty: live records only, without `deletedAt`',
    },
    Attrs: {
      name: 'Attrs',
      in: 'header',
      schema: { type: 'string' },
      description:
        'Comma-separated names of the fields to write (any case); a named field missing from the body is written as its default; read-only names are skipped',
    },
    Prefer: {
      name: 'Prefer',
      in: 'header',
      schema: { type: 'string', examples: ['return=representation', 'return=minimal'] },
      description: 'RFC 7240: `return=representation` answers the record instead of the id or the count',
    },
  };
  const headers = {
    'X-Total-Count': { schema: { type: 'integer' }, description: 'the number of matches' },
    Link: { schema: { type: 'string' }, description: 'RFC 8288: first, prev, next and last pages (left out when the request URL is over 2 KiB)' },
    Location: { schema: { type: 'string' }, description: 'the new record' },
    'Preference-Applied': { schema: { type: 'string' }, description: 'RFC 7240: the `return=…` preference the answer follows' },
    'X-Request-Id': { schema: { type: 'string' } },
    'Retry-After': { schema: { type: 'integer' } },
    'WWW-Authenticate': { schema: { type: 'string' }, description: 'Bearer, with error="invalid_token" or error="insufficient_scope" and the needed scope' },
    Allow: { schema: { type: 'string' } },
  };
  const responses = Object.fromEntries(
    Object.entries(ERROR_STATUSES).map(([status, description]) => [
      `E${status}`,
      {
        description,
        headers: {
          'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
          ...(status === '401' || status === '403' ? { 'WWW-Authenticate': { $ref: '#/components/headers/WWW-Authenticate' } } : {}),
          ...(status === '405' ? { Allow: { $ref: '#/components/headers/Allow' } } : {}),
          ...(status === '503' ? { 'Retry-After': { $ref: '#/components/headers/Retry-After' } } : {}),
        },
        content: json(ref('Error')),
      },
    ]),
  );
  return {
    schemas,
    parameters,
    headers,
    responses,
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <accessToken>' } },
  };
}

const param = (name: string) => ({ $ref: `#/components/parameters/${name}` });
const header = (name: string) => ({ $ref: `#/components/headers/${name}` });
const errors = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [String(s), { $ref: `#/components/responses/E${s}` }]));
// A request body on any method is read as JSON (413 over 1 MiB, 415 when not JSON); 405 for a
// method the path does not serve.
const READ_ERRORS = [400, 401, 403, 404, 405, 413, 415, 503];
const WRITE_ERRORS = [400, 401, 403, 404, 405, 409, 413, 415, 503];

/** The header of an answer to a write that reads `Prefer`. */
const PREFERENCE = { 'Preference-Applied': header('Preference-Applied') };

/** Either the original's bare answer or, with `Prefer: return=representation`, the record. */
const preferred = (bare: Schema, record: Schema) => json({ oneOf: [bare, record] });

/**
 * A list: a user's links (`withId`) or a top-level list, which also takes `deleted` (its records
 * then carry `deletedAt`).
 */
function listOperation(item: Schema, withId: boolean): Schema {
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

/**
 * The parameters, bodies and answers of each route, by `METHOD /template` (without BASE_PATH); its
 * tag, summary and description come with the route itself (RouteSpec.docs).
 */
function operations(): Map<string, Schema> {
  const ops = new Map<string, Schema>();
  const write = (body: Schema, record: Schema, extra: Schema[] = []) => ({
    parameters: [param('id'), param('Prefer'), ...extra],
    requestBody: { required: true, content: json(body) },
    responses: {
      200: { description: '`1`, or the record with Prefer: return=representation', headers: PREFERENCE, content: preferred(ref('One'), record) },
      ...errors(...WRITE_ERRORS),
    },
  });
  for (const { path: rPath, resource } of RESOURCES) {
    const r = { path: rPath, schema: resource.type, label: resource.label };
    ops.set(`GET ${r.path}`, listOperation(ref(r.schema), false));
    const created = resource === webhooks ? ref('WebhookWithSecret') : ref(r.schema);
    ops.set(`POST ${r.path}`, {
      parameters: [param('Prefer')],
      requestBody: { required: true, content: json(ref(`${r.schema}Create`)) },
      responses: {
        201: {
          description: 'The new id, or the record with Prefer: return=representation',
          headers: { Location: header('Location'), ...PREFERENCE },
          content: preferred(ref('Id'), created),
        },
        ...errors(...WRITE_ERRORS),
      },
    });
    ops.set(`GET ${r.path}/{id}`, {
      parameters: [param('id')],
      responses: { 200: { description: `The ${r.label}`, content: json(ref(r.schema)) }, ...errors(...READ_ERRORS) },
    });
    const replace = write(ref(`${r.schema}Replace`), ref(r.schema));
    (replace.responses as Schema)[201] = {
      description: 'Created on a reserved id: `1`, or the record',
      headers: { Location: header('Location'), ...PREFERENCE },
      content: preferred(ref('One'), ref(r.schema)),
    };
    ops.set(`PUT ${r.path}/{id}`, replace);
    ops.set(`PATCH ${r.path}/{id}`, write(ref(`${r.schema}Patch`), ref(r.schema), [param('Attrs')]));
    ops.set(`DELETE ${r.path}/{id}`, {
      parameters: [param('id')],
      responses: { 200: { description: '`1`', content: json(ref('One')) }, ...errors(...READ_ERRORS) },
    });
    ops.set(`POST ${r.path}/{id}/restore`, {
      parameters: [param('id'), param('Prefer')],
      responses: {
        200: {
          description: '`1`, or the restored record with Prefer: return=representation',
          headers: PREFERENCE,
          content: preferred(ref('One'), ref(r.schema)),
        },
        ...errors(400, 401, 403, 404, 409, 503),
      },
    });
    ops.set(`POST /apply${r.path}/id`, {
      requestBody: { required: false, content: json({ description: 'ignored' }) },
      responses: { 201: { description: 'The reserved id', content: json(ref('Id')) }, ...errors(400, 401, 403, 405, 413, 415, 503) },
    });
  }
  for (const method of ['PATCH', 'PUT']) ops.set(`${method} /user/{id}/status`, write(ref('UserStatus'), ref('User')));
  const links = (kind: 'application' | 'role', item: string) => {
    const path = `/user/{id}/${kind}`;
    ops.set(`GET ${path}`, listOperation(ref(item), true));
    const change = (status: number) => ({
      parameters: [param('id')],
      requestBody: { required: true, content: json(ref('IdList')) },
      responses: { [status]: { description: 'How many links changed', content: json(ref('Count')) }, ...errors(...WRITE_ERRORS) },
    });
    ops.set(`POST ${path}`, change(201));
    ops.set(`DELETE ${path}`, change(200));
  };
  links('application', 'LinkedApplication');
  links('role', 'LinkedRole');
  ops.set('GET /user/{id}/application/{applicationID}', {
    parameters: [param('id'), param('applicationID')],
    responses: { 200: { description: 'The link', content: json(ref('ApplicationLink')) }, ...errors(...READ_ERRORS) },
  });
  const right = write(ref('LinkRight'), ref('ApplicationLink'), [param('applicationID')]);
  ops.set('PUT /user/{id}/application/{applicationID}', right);
  ops.set('GET /audit', listOperation(ref('AuditEvent'), false));
  ops.set('POST /webhook/{id}/secret', {
    parameters: [param('id'), param('Prefer')],
    responses: {
      200: {
        description: 'The new secret, or the webhook with it with Prefer: return=representation',
        content: preferred(ref('WebhookSecret'), ref('WebhookWithSecret')),
      },
      ...errors(400, 401, 403, 404, 503),
    },
  });
  ops.set('POST /webhook/{id}/replay', {
    parameters: [param('id'), param('Prefer')],
    requestBody: { required: true, content: json(ref('WebhookReplay')) },
    responses: {
      200: { description: '`1`, or the webhook with Prefer: return=representation', content: preferred(ref('One'), ref('Webhook')) },
      ...errors(...WRITE_ERRORS),
    },
  });
  ops.set('GET /webhook/{id}/delivery', listOperation(ref('WebhookDelivery'), true));
  ops.set('DELETE /token', {
    parameters: [{ ...param('filter'), required: true } as Schema],
    responses: {
      200: { description: 'Tokens revoked, and matching tokens skipped (scopes this token could not have granted)', content: json(ref('BulkRevocation')) },
      ...errors(...READ_ERRORS),
    },
  });
  const tokenBody = { required: true, content: { 'application/x-www-form-urlencoded': { schema: ref('TokenParameter') }, ...json(ref('TokenParameter')) } };
  ops.set('POST /oauth/introspect', {
    requestBody: tokenBody,
    responses: { 200: { description: '`{"active": false}` for anything not live', content: json(ref('Introspection')) }, ...errors(400, 401, 403, 415, 503) },
  });
  ops.set('POST /oauth/revoke', {
    requestBody: tokenBody,
    responses: {
      200: { description: 'Revoked, or nothing to revoke', content: json({ type: 'object', properties: { revoked: { type: 'integer', enum: [0, 1] } } }) },
      ...errors(400, 401, 403, 415, 503),
    },
  });
  ops.set('GET /authorize/{applicationID}', {
    parameters: [param('applicationID')],
    responses: {
      200: {
        description: 'The user and its right (0 when not linked)',
        content: json({ type: 'object', required: ['userID', 'userRight'], properties: { userID: ref('Id'), userRight: scalar('safeInt') } }),
      },
      ...errors(400, 401, 404, 503),
    },
  });
  return ops;
}

/** The answers of the probes and documents (their docs are with the routes, in src/app.ts). */
const PUBLIC: Record<string, Schema> = {
  'GET /healthz': { responses: { 200: { description: '{"status":"ok"}', content: json({ type: 'object' }) } } },
  'GET /readyz': {
    responses: { 200: { description: '{"status":"ready"}', content: json({ type: 'object' }) }, 503: { $ref: '#/components/responses/E503' } },
  },
  'GET /metrics': { responses: { 200: { description: 'Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } } } },
  'GET /openapi.json': { responses: { 200: { description: 'OpenAPI 3.1', content: json({ type: 'object' }) } } },
  'GET /docs': { responses: { 200: { description: 'HTML', content: { 'text/html': { schema: { type: 'string' } } } } } },
};

/**
 * The document of the routes served: `api` (the route table, below `basePath`) and `public` (the
 * probes and documents, at the root). Each route brings its tag, summary and description; a route
 * whose parameters and answers are not described here is a bug that stops the start. Paths are
 * written as the seed writes them (collections with a trailing slash: RouteDocs.trailingSlash).
 */
export function openApiDocument(
  served: { api: readonly DocumentedRoute[]; public: readonly DocumentedRoute[]; basePath: string },
  info: { version: string; license: string },
): Schema {
  const ops = operations();
  const paths: Record<string, Record<string, Schema>> = {};
  const tags = new Map<string, ApiTag>();
  const describe = ({ method, path, docs }: DocumentedRoute, isPublic: boolean, prefix: string) => {
    const key = path.replace(/:([A-Za-z]+)/g, '{$1}');
    const id = `${method} ${key}`;
    const operation = isPublic ? PUBLIC[id] : ops.get(id);
    if (!operation) throw new Error(`OpenAPI: no description of ${id}`);
    const known = tags.get(docs.tag.name);
    if (known && known !== docs.tag) throw new Error(`OpenAPI: two tags named ${docs.tag.name}`);
    tags.set(docs.tag.name, docs.tag);
    (paths[`${prefix}${key}${docs.trailingSlash ? '/' : ''}`] ??= {})[method.toLowerCase()] = {
      operationId: id.replace(/[^A-Za-z0-9]+/g, '_').replace(/_$/, ''),
      tags: [docs.tag.name],
      summary: docs.summary,
      description: docs.description,
      ...operation,
      ...(isPublic ? { security: [] } : {}),
      responses: { ...(operation.responses as Schema), ...(isPublic ? {} : { 401: { $ref: '#/components/responses/E401' } }) },
    };
  };
  for (const route of served.public) describe(route, true, '');
  for (const route of served.api) describe(route, false, served.basePath);
  return {
    openapi: '3.1.0',
    info: {
      title: 'User and token service',
      version: info.version,
      description:
        'REST in the original service’s wire dialect: bare arrays with X-Total-Count and Link, bare ids and counts from writes, ' +
        'records with Prefer: return=representation. Errors are JSON objects. GraphQL is at /graphql. ' +
        `Browsers on an allowed origin may read these headers: ${CORS_EXPOSED_HEADERS.join(', ')}.`,
      contact: { name: 'The maintainers of the user and token service' },
      license: { name: info.license },
    },
    servers: [
      { url: '/', description: 'The service that serves this document (paths below BASE_PATH carry it)' },
      { url: 'http://127.0.0.1:4000', description: '`npm start` on this machine (the default HOST and PORT)' },
    ],
    security: [{ bearer: [] }],
    tags: [...tags.values()],
    paths,
    components: components(),
  };
}
