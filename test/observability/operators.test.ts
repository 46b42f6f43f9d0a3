import { spawn } from 'node:child_process';
import { stripVTControlCharacters } from 'node:util';
import { loadConfig } from '../../src/config.js';
import { freePort, root, waitFor } from '../support/processes.js';
import { newTestDatabase, startTestService, type TestService } from '../support/service.js';

/** SPEC §8: /metrics in Prometheus format, and the request log line (pino JSON, or readable lines at a terminal). */
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

test('LOG_FORMAT: unset, readable lines at a terminal and JSON anywhere else; json and pretty whatever stderr is', () => {
  expect(loadConfig({}, true).logFormat).toBe('pretty');
  expect(loadConfig({}, false).logFormat).toBe('json');
  for (const terminal of [true, false]) {
    expect(loadConfig({ LOG_FORMAT: 'json' }, terminal).logFormat).toBe('json');
    expect(loadConfig({ LOG_FORMAT: ' Pretty ' }, terminal).logFormat).toBe('pretty');
    expect(() => loadConfig({ LOG_FORMAT: 'yaml' }, terminal)).toThrow('LOG_FORMAT must be json or pretty, got "yaml"');
  }
});

test('LOG_FORMAT=pretty: the real service writes one readable line per event on stderr, and no JSON', async () => {
  const database = await newTestDatabase();
  const port = await freePort();
  const bootstrap = `pretty-${Math.random().toString(36).slice(2)}`;
  const child = spawn('npm', ['start', '--silent'], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: '',
      ...database.env,
      TOKEN_KEY: Buffer.alloc(32, 7).toString('base64'),
      PORT: String(port),
      LOG_FORMAT: 'pretty',
      LOG_LEVEL: 'info',
      BOOTSTRAP_TOKEN: bootstrap,
      NO_COLOR: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    await waitFor('the service to listen', () => stdout.includes('listening on'), 120_000);
    expect((await fetch(`http://127.0.0.1:${port}/user/?page=1`, { headers: { Authorization: `Bearer ${bootstrap}` } })).status).toBe(200);
    await waitFor('the request line', () => / INFO: request /.test(stderr), 30_000);
  } finally {
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    await database.drop();
  }
  // Colours or not (NO_COLOR), the words are the same.
  const lines = stripVTControlCharacters(stderr).trimEnd().split('\n');
  const time = String.raw`^\[\d{2}:\d{2}:\d{2}\.\d{3}\] `;
  expect(lines.find((line) => line.includes(' listening '))).toMatch(
    new RegExp(`${time}INFO: listening \\{"url":"http://127\\.0\\.0\\.1:${port}","database":"(embedded|external)"\\}$`),
  );
  expect(lines.find((line) => line.includes(' request '))).toMatch(new RegExp(`${time}INFO: request \\{.*"method":"GET","route":"/user","status":200,`));
  expect(lines.at(-1)).toMatch(new RegExp(`${time}INFO: stopped$`));
  for (const line of lines) {
    expect(line).toMatch(new RegExp(time));
    expect(() => JSON.parse(line)).toThrow();
  }
  expect(stderr).not.toContain(bootstrap);
}, 180_000);
