import { readFile } from 'node:fs/promises';
import { buildClientSchema, buildSchema, getIntrospectionQuery, printSchema, type IntrospectionQuery } from 'graphql';
import { schemaText } from '../../src/graphql/schema.js';
import { serviceSchema } from '../../src/services.js';
import { startTestService, type Reply, type TestService } from '../support/service.js';
import { svc, get, useService } from '../support/graphql-platform.js';

/** The Sandbox and introspection switches, and schema.graphql being the schema the code emits and serves. */
useService();

const INTROSPECTION = '{ __schema { types { name } } }';
const isSandbox = (res: Reply) => res.status === 200 && (res.headers.get('content-type') ?? '').startsWith('text/html') && /sandbox/i.test(res.text);

describe('Sandbox and introspection', () => {
  test('outside production GET /graphql from a browser shows Apollo Sandbox', async () => {
    const res = await get('/graphql', { Accept: 'text/html' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(isSandbox(res)).toBe(true);
  });

  describe('NODE_ENV=production', () => {
    let prod: TestService;
    beforeAll(async () => {
      prod = await startTestService({ NODE_ENV: 'production' });
    });
    afterAll(async () => {
      await prod?.stop();
    });

    test('no Sandbox', async () => {
      const res = await get('/graphql', { Accept: 'text/html' }, prod);
      expect(isSandbox(res)).toBe(false);
      expect(res.headers.get('content-type') ?? '').not.toMatch(/^text\/html/);
    });

    test('introspection is rejected: 400 with a token, 401 without one; ordinary queries still work', async () => {
      const res = await prod.graphql(INTROSPECTION, undefined, { token: prod.adminToken });
      expect(res.status).toBe(400);
      expect(res.body.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
      expect(res.body.errors[0].message).toMatch(/introspection/i);
      expect(res.body.data).toBeUndefined();
      const anonymous = await prod.graphql(INTROSPECTION, undefined, { token: null });
      expect(anonymous.status).toBe(401);
      expect(anonymous.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
      expect(anonymous.body.data).toBeUndefined();
      const type = await prod.graphql('{ __type(name: "User") { name } }');
      expect(type.status).toBe(400);
      const viewer = await prod.graphql('{ viewer { scope } }');
      expect(viewer.body).toEqual({ data: { viewer: { scope: '*' } } });
    });
  });

  describe('NODE_ENV=production with GRAPHQL_INTROSPECTION=true', () => {
    let prod: TestService;
    beforeAll(async () => {
      prod = await startTestService({ NODE_ENV: 'production', GRAPHQL_INTROSPECTION: 'true' });
    });
    afterAll(async () => {
      await prod?.stop();
    });

    test('Sandbox and introspection are both on', async () => {
      expect(isSandbox(await get('/graphql', { Accept: 'text/html' }, prod))).toBe(true);
      const res = await prod.graphql(INTROSPECTION, undefined, { token: null });
      expect(res.status).toBe(200);
      expect(res.body.data.__schema.types.map((t: { name: string }) => t.name)).toContain('User');
    });
  });
});

// ---------------------------------------------------------------------------------------------
// 6. schema.graphql is the schema the code emits and the server serves
// ---------------------------------------------------------------------------------------------

describe('schema.graphql', () => {
  let file: string;
  beforeAll(async () => {
    file = await readFile(new URL('../../schema.graphql', import.meta.url), 'utf8');
  });

  test('matches the schema emitted by the code (run `npm run schema` when this fails)', async () => {
    const emitted = schemaText(await serviceSchema());
    if (emitted !== file) {
      throw new Error('schema.graphql is stale: run `npm run schema` and commit the result');
    }
    expect(emitted).toBe(file);
  });

  test('matches the schema the running server serves through introspection', async () => {
    const res = await svc.graphql(getIntrospectionQuery({ descriptions: true, specifiedByUrl: true }), undefined, { token: null });
    expect(res.status).toBe(200);
    const served = printSchema(buildClientSchema(res.body.data as IntrospectionQuery));
    const checkedIn = printSchema(buildSchema(file));
    if (served !== checkedIn) {
      throw new Error('the served schema differs from schema.graphql: run `npm run schema` and commit the result');
    }
    expect(served).toBe(checkedIn);
  });
});
