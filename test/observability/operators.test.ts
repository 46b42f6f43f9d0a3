import { startTestService, type TestService } from '../support/service.js';

/** SPEC §8: /metrics in Prometheus format, and the request log line (pino JSON). */
let svc: TestService;

beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

/** The value of one sample line `name{labels} value` of a Prometheus text document. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const inside = line.slice(name.length + 1, line.lastIndexOf('}')).split(',');
    if (wanted.every((label) => inside.includes(label))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

test('/metrics counts requests by method, route template and status, GraphQL operations, the pool and the process', async () => {
  const user = (await svc.request('POST', '/user/', { body: { firstName: 'M', lastName: 'Etrics' } })).body;
  await svc.request('GET', `/user/${user}`);
  await svc.request('GET', `/user/${user}`);
  await svc.request('GET', '/user/999999');
  await svc.request('GET', '/no/such/path/123');
  await svc.graphql('query Who { viewer { id } }');
  const res = await svc.request('GET', '/metrics', { token: null });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = res.text;
  expect(sample(text, 'http_requests_total', { method: 'GET', route: '/user/:id', status: '200' })).toBe(2);
  expect(sample(text, 'http_requests_total', { method: 'GET', route: '/user/:id', status: '404' })).toBe(1);
  expect(sample(text, 'http_requests_total', { method: 'POST', route: '/user', status: '201' })).toBe(1);
  expect(sample(text, 'http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
  expect(text).not.toContain('/no/such/path');
  expect(sample(text, 'http_request_duration_seconds_count', { method: 'GET', route: '/user/:id', status: '200' })).toBe(2);
  expect(sample(text, 'graphql_operations_total', { name: 'Who', type: 'query' })).toBe(1);
  expect(text).toMatch(/^db_pool_connections \d+$/m);
  expect(text).toMatch(/^db_pool_waiting 0$/m);
  expect(text).toMatch(/^db_pool_max \d+$/m);
  expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
  expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);
});

test('client-chosen operation names cannot grow the series; a refused request keeps its route template', async () => {
  for (const name of ['x'.repeat(500), 'with-dash', 'Ünïcode']) {
    await svc.request('POST', '/graphql', {
      body: {
        query: `query Q { __typename }`.replace('Q', name.includes('-') || name.length > 64 || [...name].some((c) => c.charCodeAt(0) > 0x7f) ? 'Q' : name),
      },
    });
    await svc.request('POST', '/graphql', {
      rawBody: JSON.stringify({ query: `query ${name.replace(/[^A-Za-z_]/g, 'x')}x { __typename }` }),
      headers: { 'Content-Type': 'application/json' },
    });
  }
  await svc.request('GET', '/user/', { token: null });
  const text = (await svc.request('GET', '/metrics', { token: null })).text;
  expect(text).not.toContain('x'.repeat(100));
  expect(sample(text, 'graphql_operations_total', { name: 'other', type: 'query' })).toBeGreaterThanOrEqual(1);
  expect(sample(text, 'http_requests_total', { method: 'GET', route: '/user', status: '401' })).toBe(1);
  expect(text).not.toContain('(?:');
});

test('METRICS=false: no /metrics', async () => {
  const off = await startTestService({ METRICS: 'false' });
  try {
    expect((await off.request('GET', '/metrics', { token: null })).status).toBe(404);
  } finally {
    await off.stop();
  }
});

test('one JSON log line per request: route template, status, time, the GraphQL operation; never the query string or a token', async () => {
  svc.logLines.length = 0;
  const secret = 'filter-value-that-must-not-be-logged';
  await svc.request('GET', `/user/?filter=${encodeURIComponent(`lastName eq '${secret}'`)}`);
  await svc.graphql('mutation Rename($id: ID!) { patchUser(id: $id, input: { lastName: "x" }) { id } }', { id: '1' });
  const lines = svc.logLines.map((line) => JSON.parse(line));
  const list = lines.find((l) => l.msg === 'request' && l.route === '/user');
  expect(list).toMatchObject({
    level: 'info',
    time: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    method: 'GET',
    status: 200,
    ms: expect.any(Number),
    requestId: expect.any(String),
  });
  const graphql = lines.find((l) => l.msg === 'request' && l.route === '/graphql');
  expect(graphql).toMatchObject({ method: 'POST', status: 200, operationName: 'Rename', operationType: 'mutation' });
  const all = svc.logLines.join('\n');
  expect(all).not.toContain(secret);
  expect(all).not.toContain(svc.adminToken);
});
