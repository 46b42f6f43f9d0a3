import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deliveryClient, failureOf } from '../../src/webhooks/client.js';

/**
 * The deliveries' HTTP client (src/webhooks/client.ts) makes its undici Agent with the first
 * delivery: concurrent first deliveries share it, and closing works before any delivery as after.
 */
let server: Server;
let url: URL;
const bodies: string[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/hang') return; // never answers: the attempt outlasts its limit
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      bodies.push(body);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`);
});
afterAll(
  () =>
    new Promise((resolve) => {
      server.close(resolve);
      server.closeAllConnections(); // the hanging requests' too
    }),
);

const client = () => deliveryClient({ timeoutMs: 5_000, allowPrivate: true });

test('two first deliveries at once are both delivered, then the client closes', async () => {
  const deliveries = client();
  const attempts = await Promise.all(['{"n":1}', '{"n":2}'].map((body) => deliveries.post(url, { 'content-type': 'application/json' }, body)));
  expect(attempts).toEqual([
    { status: 204, body: '', error: null },
    { status: 204, body: '', error: null },
  ]);
  expect(bodies.slice(-2).sort()).toEqual(['{"n":1}', '{"n":2}']);
  await expect(deliveries.close()).resolves.toBeUndefined();
});

test('closed before any delivery: it closes, and a delivery after it is an attempt that failed, sending nothing', async () => {
  const deliveries = client();
  await expect(deliveries.close()).resolves.toBeUndefined();
  const sent = bodies.length;
  const attempt = await deliveries.post(url, {}, '{"late":true}');
  expect(attempt).toEqual({ status: null, body: null, error: 'CLIENT_CLOSED' });
  expect(bodies).toHaveLength(sent);
});

test("an attempt that outlasts its limit is a timeout, whichever of undici's timers or the attempt's own fires first", async () => {
  const deliveries = deliveryClient({ timeoutMs: 300, allowPrivate: true });
  const attempt = await deliveries.post(new URL('/hang', url), {}, '{}');
  expect(attempt).toEqual({ status: null, body: null, error: 'timeout' });
  await deliveries.close();
  // undici's own timeouts, by their documented codes, on the error or as its cause; other codes stay as they are.
  for (const code of ['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']) {
    expect(failureOf(Object.assign(new Error('x'), { code }), false)).toBe('timeout');
    expect(failureOf(Object.assign(new Error('fetch failed'), { cause: { code } }), false)).toBe('timeout');
  }
  expect(failureOf(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }), false)).toBe('ECONNREFUSED');
  expect(failureOf(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }), true)).toBe('timeout');
});
