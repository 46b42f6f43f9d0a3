import { Validator } from '@seriousme/openapi-schema-validator';
import { startTestService, type TestService } from '../support/service.js';

/** SPEC §8: GET /openapi.json (OpenAPI 3.1, valid, every route) and GET /docs, both without a token. */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

/** Every REST route the service serves (SPEC §4 and the seed), as METHOD /template. */
const ROUTES = [
  ...['user', 'token', 'application', 'role', 'webhook'].flatMap((r) => [
    `get /${r}`,
    `post /${r}`,
    `get /${r}/{id}`,
    `put /${r}/{id}`,
    `patch /${r}/{id}`,
    `delete /${r}/{id}`,
    `post /${r}/{id}/restore`,
  ]),
  'post /apply/user/id',
  'post /apply/token/id',
  'patch /user/{id}/status',
  'put /user/{id}/status',
  'get /user/{id}/application',
  'post /user/{id}/application',
  'delete /user/{id}/application',
  'get /user/{id}/application/{applicationID}',
  'put /user/{id}/application/{applicationID}',
  'get /user/{id}/role',
  'post /user/{id}/role',
  'delete /user/{id}/role',
  'get /audit',
  'post /webhook/{id}/secret',
  'post /webhook/{id}/replay',
  'get /webhook/{id}/delivery',
  'delete /token',
  'post /oauth/introspect',
  'post /oauth/revoke',
  'get /authorize/{applicationID}',
  'get /healthz',
  'get /readyz',
  'get /metrics',
  'get /openapi.json',
  'get /docs',
];

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

test('the schemas come from the field tables the service validates with', async () => {
  const { body: doc } = await svc.request('GET', '/openapi.json', { token: null });
  const { schemas } = doc.components;
  expect(Object.keys(schemas.User.properties)).toEqual([
    'id',
    'ref',
    'outKey',
    'firstName',
    'lastName',
    'avatarUrl',
    'photoUrl',
    'status',
    'createdAt',
    'updatedAt',
  ]);
  expect(schemas.User.properties.outKey).toEqual({ type: ['string', 'null'], maxLength: 255 });
  expect(schemas.UserCreate.required).toEqual(['firstName', 'lastName']);
  expect(schemas.UserCreate.properties.avatarUrl.maxLength).toBe(2048);
  expect(schemas.TokenCreate.required).toEqual(['userID', 'accessToken']);
  expect(schemas.Token.properties.version.type).toBe('string');
  expect(schemas.LinkRight.properties.right).toEqual({ type: 'integer', minimum: -9007199254740991, maximum: 9007199254740991 });
  const patch = doc.paths['/user/{id}'].patch;
  expect(patch.parameters.map((p: { $ref: string }) => p.$ref.split('/').pop())).toEqual(['id', 'Prefer', 'Attrs']);
  const list = doc.paths['/user'].get;
  expect(list.parameters.map((p: { $ref: string }) => p.$ref.split('/').pop())).toEqual(['filter', 'orderBy', 'page', 'pageSize', 'deleted']);
  expect(doc.paths['/user/{id}/application'].get.parameters.map((p: { $ref: string }) => p.$ref.split('/').pop())).toEqual([
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
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/api/user', '/api/user/{id}', '/healthz', '/openapi.json']));
    expect(Object.keys(doc.paths)).not.toContain('/user');
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
