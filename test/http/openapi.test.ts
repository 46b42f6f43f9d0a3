import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { Validator } from '@seriousme/openapi-schema-validator';
import createClient from 'openapi-fetch';
import { fieldsOf, TYPE_NAMES, type ContractName } from '../support/contracts.js';
import type { paths } from '../support/openapi-types.js';
import { startTestService, type TestService } from '../support/service.js';

/** SPEC §8: GET /openapi.json (OpenAPI 3.1, valid, every route) and GET /docs, both without a token. */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

/** Every REST route the service serves (SPEC §4 and the seed), as METHOD /template: paths as the seed writes them. */
const ROUTES = [
  ...['user', 'token', 'application', 'role', 'webhook'].flatMap((r) => [
    `get /${r}/`,
    `post /${r}/`,
    `get /${r}/{id}`,
    `put /${r}/{id}`,
    `patch /${r}/{id}`,
    `delete /${r}/{id}`,
    `post /${r}/{id}/restore`,
  ]),
  'post /apply/user/id/',
  'post /apply/token/id/',
  'patch /user/{id}/status/',
  'put /user/{id}/status/',
  'get /user/{id}/application/',
  'post /user/{id}/application/',
  'delete /user/{id}/application/',
  'get /user/{id}/application/{applicationID}',
  'put /user/{id}/application/{applicationID}',
  'get /user/{id}/role/',
  'post /user/{id}/role/',
  'delete /user/{id}/role/',
  'get /audit/',
  'post /webhook/{id}/secret',
  'post /webhook/{id}/replay',
  'get /webhook/{id}/delivery/',
  'delete /token/',
  'post /oauth/introspect',
  'post /oauth/revoke',
  'get /authorize/{applicationID}/',
  'get /healthz',
  'get /readyz',
  'get /metrics',
  'get /openapi.json',
  'get /docs',
];

/** The paths of the seed interface (/work/shared/seed/interface.md), as it writes them, with their methods. */
const SEED_PATHS = {
  '/token/': ['get', 'post'],
  '/token/{id}': ['get', 'put', 'patch', 'delete'],
  '/apply/token/id/': ['post'],
  '/user/': ['get', 'post'],
  '/user/{id}': ['get', 'put', 'patch', 'delete'],
  '/apply/user/id/': ['post'],
  '/user/{id}/status/': ['patch', 'put'],
  '/user/{id}/application/': ['get', 'post', 'delete'],
  '/user/{id}/application/{applicationID}': ['get', 'put'],
  '/user/{id}/role/': ['get', 'post', 'delete'],
};

test('/openapi.json is a valid OpenAPI 3.1 document of every route, without a token', async () => {
  const res = await svc.request('GET', '/openapi.json', { token: null });
  expect(res.status).toBe(200);
  const doc = res.body;
  expect(doc.openapi).toBe('3.1.0');
  const validator = new Validator();
  const result = await validator.validate(doc);
  expect(result.errors ?? []).toEqual([]);
  expect(result.valid).toBe(true);
  const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`));
  expect(documented.sort()).toEqual([...ROUTES].sort());
});

test("the seed's paths are named as the seed writes them, trailing slashes included", async () => {
  const { body: doc } = await svc.request('GET', '/openapi.json', { token: null });
  for (const [path, methods] of Object.entries(SEED_PATHS)) {
    expect({ path, methods: Object.keys(doc.paths[path] ?? {}) }).toEqual({ path, methods: expect.arrayContaining(methods) });
  }
  // The other collections follow the seed's rule: a collection path ends with a slash, an item path does not.
  for (const path of ['/application/', '/role/', '/audit/', '/authorize/{applicationID}/']) expect(doc.paths).toHaveProperty([path]);
  expect(Object.keys(doc.paths).filter((path) => /\/(user|token|application|role|audit)$/.test(path))).toEqual([]);
});

test('every operation has one tag of the document, a summary and a description; servers, contact and license are there', async () => {
  const { body: doc } = await svc.request('GET', '/openapi.json', { token: null });
  const tags = (doc.tags as { name: string; description: string }[]).map((t) => t.name);
  expect(tags).toEqual(['service', 'users', 'tokens', 'applications', 'roles', 'links', 'webhooks', 'audit', 'token platform']);
  for (const tag of doc.tags) expect(tag.description).toEqual(expect.any(String));
  const operations = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ operation: `${method} ${path}`, ...op })),
  );
  expect(operations).toHaveLength(ROUTES.length);
  for (const { operation, tags: its, summary, description } of operations) {
    expect({ operation, tags: its.length, known: tags.includes(its[0]) }).toEqual({ operation, tags: 1, known: true });
    expect({ operation, summary: summary?.length > 5, description: description?.length > 20 }).toEqual({ operation, summary: true, description: true });
  }
  const byTag = (tag: string) => operations.filter((op) => op.tags[0] === tag).map((op) => op.operation);
  expect(byTag('users')).toEqual(expect.arrayContaining(['get /user/', 'post /apply/user/id/', 'put /user/{id}/status/']));
  expect(byTag('links')).toEqual(expect.arrayContaining(['get /user/{id}/role/', 'put /user/{id}/application/{applicationID}']));
  expect(new Set(operations.map((op) => op.summary)).size).toBe(operations.length);
  expect(doc.servers).toEqual(expect.arrayContaining([expect.objectContaining({ url: '/' })]));
  expect(doc.info.contact.name).toEqual(expect.any(String));
  expect(doc.info.license).toEqual({ name: 'UNLICENSED' });
});

test('the schemas come from the field tables the service validates with', async () => {
  const { body: doc } = await svc.request('GET', '/openapi.json', { token: null });
  const { schemas } = doc.components;
  for (const name of Object.keys(TYPE_NAMES) as ContractName[]) {
    expect([TYPE_NAMES[name], Object.keys(schemas[TYPE_NAMES[name]].properties)]).toEqual([TYPE_NAMES[name], fieldsOf(name)]);
  }
  expect(schemas.User.properties.outKey).toEqual({ type: ['string', 'null'], maxLength: 255 });
  expect(schemas.UserCreate.required).toEqual(['firstName', 'lastName']);
  expect(schemas.UserCreate.properties.avatarUrl.maxLength).toBe(2048);
  expect(schemas.TokenCreate.required).toEqual(['userID', 'accessToken']);
  expect(schemas.Token.properties.version.type).toBe('string');
  expect(schemas.LinkRight.properties.right).toEqual({ type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991 });
  const patch = doc.paths['/user/{id}'].patch;
  expect(patch.parameters.map((p: { $ref: string }) => p.$ref.split('/').pop())).toEqual(['id', 'Prefer', 'Attrs']);
  const list = doc.paths['/user/'].get;
  expect(list.parameters.map((p: { $ref: string }) => p.$ref.split('/').pop())).toEqual(['filter', 'orderBy', 'page', 'pageSize', 'deleted']);
  expect(doc.paths['/user/{id}/application/'].get.parameters.map((p: { $ref: string }) => p.$ref.split('/').pop())).toEqual([
    'id',
    'filter',
    'orderBy',
    'page',
    'pageSize',
  ]);
  expect(doc.paths['/token/{id}/restore'].post.responses).toHaveProperty('409');
  expect(Object.keys(list.responses[200].headers)).toEqual(['X-Total-Count', 'Link']);
  expect(doc.paths['/healthz'].get.security).toEqual([]);
  expect(doc.security).toEqual([{ bearer: [] }]);
});

test('with BASE_PATH the API paths carry the prefix and the probes do not', async () => {
  const prefixed = await startTestService({ BASE_PATH: '/api' });
  try {
    // The test client prefixes BASE_PATH; the document itself sits at the root, like the probes.
    const res = await fetch(`${prefixed.running.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/api/user/', '/api/user/{id}', '/healthz', '/openapi.json']));
    expect(Object.keys(doc.paths)).not.toContain('/user/');
  } finally {
    await prefixed.stop();
  }
});

test('/docs is an HTML page whose renderer is served by the service itself (no CDN)', async () => {
  const page = await svc.request('GET', '/docs', { token: null });
  expect(page.status).toBe(200);
  expect(page.headers.get('content-type')).toMatch(/^text\/html/);
  const sources = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
  expect(sources).toEqual(['/docs/swagger-ui.css', '/docs/swagger-ui-bundle.js']);
  for (const source of sources) {
    const asset = await svc.request('GET', source, { token: null });
    expect(asset.status).toBe(200);
    expect(asset.text.length).toBeGreaterThan(10_000);
  }
  expect(page.text).toContain("url: '/openapi.json'");
});

/**
 * A client generated from the document: openapi-typescript's types (test/support/openapi-types.ts,
 * written by `npm run openapi`) and openapi-fetch. The types are checked in rather than made at test
 * time so that `npm run typecheck` checks every call below against the document (a path, parameter
 * or body the document stops describing is a type error); the test after this one keeps them current.
 */
test('the generated client calls the seed paths of the running service', async () => {
  const client = createClient<paths>({ baseUrl: svc.url, headers: { Authorization: `Bearer ${svc.adminToken}` } });
  const created = await client.POST('/user/', { body: { firstName: 'Open', lastName: 'Api', status: 1 } });
  expect(created.response.status).toBe(201);
  const id = created.data as number;
  expect(created.response.headers.get('location')).toBe(`/user/${id}`);

  const read = await client.GET('/user/{id}', { params: { path: { id } } });
  expect(read.data).toMatchObject({ id, firstName: 'Open', lastName: 'Api', status: 1 });

  const patched = await client.PATCH('/user/{id}', {
    params: { path: { id }, header: { Attrs: 'status', Prefer: 'return=representation' } },
    body: { status: 2, firstName: 'ignored' },
  });
  expect(patched.data).toMatchObject({ id, firstName: 'Open', status: 2 });
  expect(patched.response.headers.get('preference-applied')).toBe('return=representation');

  const status = await client.PUT('/user/{id}/status/', { params: { path: { id } }, body: { status: 3 } });
  expect(status.data).toBe(1);

  const page = await client.GET('/user/', { params: { query: { filter: `id eq ${id}`, orderBy: '-id', page: '1', pageSize: '5' } } });
  expect(page.data).toEqual([expect.objectContaining({ id, status: 3 })]);
  expect(page.response.headers.get('x-total-count')).toBe('1');

  const application = await client.POST('/application/', { body: { name: 'openapi-client' } });
  const applicationID = application.data as number;
  const linked = await client.POST('/user/{id}/application/', { params: { path: { id } }, body: [applicationID] });
  expect({ status: linked.response.status, data: linked.data }).toEqual({ status: 201, data: 1 });
  await client.PUT('/user/{id}/application/{applicationID}', { params: { path: { id, applicationID } }, body: { right: 7 } });
  const links = await client.GET('/user/{id}/application/', { params: { path: { id } } });
  expect(links.data).toEqual([expect.objectContaining({ id: applicationID, name: 'openapi-client', right: 7 })]);

  // Refusals arrive as the document's Error.
  const refused = await client.POST('/user/', { body: { firstName: 'No last name' } as never });
  expect(refused.response.status).toBe(400);
  expect(refused.error).toMatchObject({ code: 400, error: 'BAD_REQUEST', details: [expect.objectContaining({ field: 'lastName' })] });

  const removed = await client.DELETE('/user/{id}', { params: { path: { id } } });
  expect(removed.data).toBe(1);
  const gone = await client.GET('/user/{id}', { params: { path: { id } } });
  expect(gone.response.status).toBe(404);
});

test('the checked-in client types are what openapi-typescript makes of the running service’s document (npm run openapi)', async () => {
  const cli = new URL('../../node_modules/openapi-typescript/bin/cli.js', import.meta.url).pathname;
  const { stdout } = await promisify(execFile)(process.execPath, [cli, `${svc.url}/openapi.json`], { maxBuffer: 16 * 1024 * 1024 });
  const checkedIn = await readFile(new URL('../support/openapi-types.ts', import.meta.url), 'utf8');
  // A stale file: run `npm run openapi` and commit test/support/openapi-types.ts.
  expect(stdout).toBe(checkedIn);
});
