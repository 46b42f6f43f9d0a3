import { createServer, type Server } from 'node:http';
import { chromium, type Browser } from 'playwright-core';
import { startTestService, type TestService } from '../support/service.js';

/**
 * SPEC §8 in a real browser (Debian's Chromium through playwright-core; this machine has no
 * internet, as a person offline): the local explorer runs a query with a token, /graphql falls back
 * to it when Apollo's CDN cannot be reached, /docs renders, and a page on another origin reaches
 * REST and GraphQL when CORS allows its origin and is blocked when it does not.
 */
const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'];

let browser: Browser;
let svc: TestService;
let closed: TestService;
let origin: string;
let page: Server;

beforeAll(async () => {
  browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
  // A "frontend" on another origin: one empty page, from which the tests call the service.
  page = createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end('<!doctype html><title>frontend</title>'));
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(page.address() as { port: number }).port}`;
  svc = await startTestService({ CORS_ORIGINS: origin });
  closed = await startTestService();
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await svc?.stop();
  await closed?.stop();
  await new Promise((resolve) => page?.close(resolve));
});

test('the local explorer (/graphiql) runs { viewer { id } } with the token typed into its Access token field', async () => {
  const tab = await browser.newPage();
  const external: string[] = [];
  tab.on('request', (request) => {
    if (!request.url().startsWith(svc.running.url)) external.push(request.url());
  });
  await tab.goto(`${svc.running.url}/graphiql?query=${encodeURIComponent('{ viewer { id scope } }')}`);
  // The page's script sets the field from localStorage when it runs, after the explorer's scripts
  // load: typing before then is overwritten. The explorer rendered means the script has run.
  await tab.locator('.graphiql-execute-button').waitFor({ timeout: 20_000 });
  await tab.locator('#token').fill(svc.adminToken);
  await tab.locator('.graphiql-execute-button').click();
  await tab.locator('.result-window').getByText('"viewer"').waitFor({ timeout: 15_000 });
  const result = await tab.locator('.result-window').innerText();
  expect(result).toContain('"scope": "*"');
  expect(external).toEqual([]); // everything came from the service
  await tab.close();
}, 60_000);

test('GET /graphql in a browser without internet moves on from Apollo Sandbox to the local explorer', async () => {
  const tab = await browser.newPage();
  await tab.goto(`${svc.running.url}/graphql`);
  await tab.waitForURL(`${svc.running.url}/graphiql`, { timeout: 20_000 });
  await tab.locator('#token').waitFor();
  await tab.close();
}, 60_000);

test('the explorer that /graphql falls back to runs a subscription over a WebSocket and shows the events as they come', async () => {
  const fallback = await browser.newPage();
  await fallback.goto(`${svc.running.url}/graphql`);
  await fallback.waitForURL(`${svc.running.url}/graphiql`, { timeout: 20_000 });
  await fallback.close();
  // That explorer in a page of its own: GraphiQL keeps the editor of the page before in localStorage
  // once it has rendered, and a kept editor wins over ?query= (the page before's default query ran).
  const tab = await browser.newPage();
  await tab.goto(`${svc.running.url}/graphiql?query=${encodeURIComponent('subscription { roleEvents { action role { name } } }')}`);
  // The page's script sets the field from localStorage when it runs, after the explorer's scripts
  // load: typing before then is overwritten. The explorer rendered means the script has run.
  await tab.locator('.graphiql-execute-button').waitFor({ timeout: 20_000 });
  await tab.locator('#token').fill(svc.adminToken);
  await tab.locator('.graphiql-execute-button').click();
  // The socket is open once the service counts it.
  const deadline = Date.now() + 15_000;
  while (!/realtime_subscriptions\{operation="roleEvents"\} 1/.test((await svc.request('GET', '/metrics', { token: null })).text)) {
    if (Date.now() > deadline) throw new Error('the explorer did not subscribe');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  expect((await svc.request('POST', '/role/', { body: { name: 'seen-in-the-browser' } })).status).toBe(201);
  await tab.locator('.result-window').getByText('seen-in-the-browser').waitFor({ timeout: 15_000 });
  expect(await tab.locator('.result-window').innerText()).toContain('"action": "CREATE"');
  await tab.close();
}, 60_000);

test('/docs renders the OpenAPI document', async () => {
  const tab = await browser.newPage();
  await tab.goto(`${svc.running.url}/docs`);
  await tab.locator('.swagger-ui .info .title').getByText('User and token service').waitFor({ timeout: 20_000 });
  expect(await tab.locator('.opblock').count()).toBeGreaterThan(20);
  // Grouped by resource, not all under "default".
  const tags = await tab.locator('.opblock-tag').evaluateAll((headings) => headings.map((h) => h.getAttribute('data-tag')));
  expect(tags).toEqual(['service', 'users', 'tokens', 'applications', 'roles', 'links', 'webhooks', 'audit', 'token platform']);
  await tab.close();
}, 60_000);

/** Runs in the frontend page: a REST list and a GraphQL query, as a browser app would send them. */
async function callFrom(base: string, token: string) {
  const tab = await browser.newPage();
  await tab.goto(origin);
  const result = await tab.evaluate(
    async ({ base, token }) => {
      const out: Record<string, unknown> = {};
      try {
        const rest = await fetch(`${base}/user/?pageSize=1`, { headers: { Authorization: `Bearer ${token}` } });
        out.rest = { status: rest.status, total: rest.headers.get('X-Total-Count'), isArray: Array.isArray(await rest.json()) };
      } catch (err) {
        out.rest = String(err);
      }
      try {
        const gql = await fetch(`${base}/graphql`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ query: '{ viewer { scope } }' }),
        });
        out.graphql = await gql.json();
      } catch (err) {
        out.graphql = String(err);
      }
      try {
        const get = await fetch(`${base}/graphql?query=${encodeURIComponent('{ viewer { scope } }')}`, { headers: { Authorization: `Bearer ${token}` } });
        out.graphqlGet = await get.json();
      } catch (err) {
        out.graphqlGet = String(err);
      }
      return out;
    },
    { base, token },
  );
  await tab.close();
  return result;
}

test('a page on an allowed origin calls REST and GraphQL (POST and GET) and reads X-Total-Count', async () => {
  expect(await callFrom(svc.running.url, svc.adminToken)).toEqual({
    rest: { status: 200, total: expect.stringMatching(/^\d+$/), isArray: true },
    graphql: { data: { viewer: { scope: '*' } } },
    graphqlGet: { data: { viewer: { scope: '*' } } },
  });
}, 60_000);

test('without CORS for its origin the browser blocks the page’s calls', async () => {
  expect(await callFrom(closed.running.url, closed.adminToken)).toEqual({
    rest: 'TypeError: Failed to fetch',
    graphql: 'TypeError: Failed to fetch',
    graphqlGet: 'TypeError: Failed to fetch',
  });
}, 60_000);
