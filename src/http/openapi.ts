import { LIST_LIMITS } from '../list/list.js';
import { CORS_EXPOSED_HEADERS } from './cors.js';
import { ERROR_STATUSES, json, ref, type Schema } from './openapi-schemas.js';
import type { ApiTag, DocumentedRoute } from './routes.js';

/**
 * The OpenAPI 3.1 document of the REST API (docs/operations.md), built at start from the route table itself:
 * every route it serves is in it, each with its own docs (its tag, summary and description, its
 * parameters, body and answers, and the schemas they refer to, derived from the resource
 * definitions the service validates with: src/http/openapi-schemas.ts), so the document cannot
 * drift from what the service does. What every route shares (errors, parameters, headers) is
 * defined here once, under `components`.
 */

/** The schemas every route may refer to. */
const SHARED_SCHEMAS: Record<string, Schema> = {
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
};

const PARAMETERS = {
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

const HEADERS = {
  'X-Total-Count': { schema: { type: 'integer' }, description: 'the number of matches' },
  Link: { schema: { type: 'string' }, description: 'RFC 8288: first, prev, next and last pages (left out when the request URL is over 2 KiB)' },
  Location: { schema: { type: 'string' }, description: 'the new record' },
  'Preference-Applied': { schema: { type: 'string' }, description: 'RFC 7240: the `return=…` preference the answer follows' },
  'X-Request-Id': { schema: { type: 'string' } },
  'Retry-After': { schema: { type: 'integer' } },
  'WWW-Authenticate': { schema: { type: 'string' }, description: 'Bearer, with error="invalid_token" or error="insufficient_scope" and the needed scope' },
  Allow: { schema: { type: 'string' } },
};

const RESPONSES = Object.fromEntries(
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

/**
 * The schemas of the document: the shared ones, then those the routes refer to, each under its
 * name once (two routes naming one schema must mean the same one).
 */
function schemasOf(routes: readonly DocumentedRoute[]): Record<string, Schema> {
  const schemas: Record<string, Schema> = { ...SHARED_SCHEMAS };
  for (const { method, path, docs } of routes) {
    for (const [name, schema] of Object.entries(docs.schemas ?? {})) {
      if (schemas[name] !== undefined && JSON.stringify(schemas[name]) !== JSON.stringify(schema)) {
        throw new Error(`OpenAPI: two different schemas named ${name} (${method} ${path})`);
      }
      schemas[name] = schema;
    }
  }
  return schemas;
}

/**
 * The document of the routes served: `api` (the route table, below `basePath`) and `public` (the
 * probes and documents, at the root). Each route brings its tag, summary and description; a route
 * whose tag is another's name with another description stops the start. Paths are
 * written as the seed writes them (collections with a trailing slash: RouteDocs.trailingSlash).
 */
export function openApiDocument(
  served: { api: readonly DocumentedRoute[]; public: readonly DocumentedRoute[]; basePath: string },
  info: { version: string; license: string },
): Schema {
  const paths: Record<string, Record<string, Schema>> = {};
  const tags = new Map<string, ApiTag>();
  const describe = ({ method, path, docs }: DocumentedRoute, isPublic: boolean, prefix: string) => {
    const key = path.replace(/:([A-Za-z]+)/g, '{$1}');
    const id = `${method} ${key}`;
    const operation = docs.operation;
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
    components: {
      schemas: schemasOf([...served.public, ...served.api]),
      parameters: PARAMETERS,
      headers: HEADERS,
      responses: RESPONSES,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <accessToken>' } },
    },
  };
}
