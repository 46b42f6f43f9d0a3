import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa, { type Middleware } from 'koa';
import type { AppState } from '../../src/http/context.js';
import { SegmentRouter } from '../../src/http/segment-router.js';

/**
 * The app's routers by path segment (src/http/segment-router.ts), on a bare Koa app over real HTTP:
 * each request reaches its segment's router only, and answers as one router holding every route
 * would (its matches in any letter case, the 405 with Allow of a known path, the 404 of an unknown
 * one, the 501 of a method no router knows), below a base path and beside the root's own paths.
 */
const answer =
  (text: string): Middleware<AppState> =>
  (ctx) => {
    ctx.body = `${text} ${JSON.stringify(ctx.params ?? {})}`;
  };

let server: Server;
let url: string;
let router: SegmentRouter;

beforeAll(async () => {
  router = new SegmentRouter('/api');
  router.get('/healthz', answer('health'));
  router.register('/api/user', ['GET', 'POST'], [answer('users')]);
  router.register('/api/user/:id', ['GET', 'PATCH'], [answer('user')]);
  router.register('/api/user/:id/role', ['GET'], [answer('roles')]);
  router.register('/api/token/:id', ['GET'], [answer('token')]);
  const app = new Koa<AppState>();
  app.use(router.middleware());
  server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

const send = async (method: string, path: string) => {
  const res = await fetch(`${url}${path}`, { method });
  return { status: res.status, allow: res.headers.get('allow'), text: await res.text() };
};

test.each([
  ['GET', '/api/user', 'users {}'],
  ['POST', '/api/user', 'users {}'],
  ['GET', '/api/user/7', 'user {"id":"7"}'],
  ['PATCH', '/API/User/7', 'user {"id":"7"}'],
  ['GET', '/api/user/7/role', 'roles {"id":"7"}'],
  ['GET', '/api/token/3', 'token {"id":"3"}'],
  ['GET', '/healthz', 'health {}'],
])('%s %s reaches its route, whatever the letters’ case', async (method, path, text) => {
  expect(await send(method, path)).toMatchObject({ status: 200, text });
});

test('a method its path does not serve is a 405 naming the methods it does', async () => {
  const res = await send('DELETE', '/api/user/7');
  expect(res.status).toBe(405);
  expect(res.allow?.split(', ').sort()).toEqual(['GET', 'HEAD', 'PATCH']);
});

test.each([
  ['GET', '/api/nope'],
  ['GET', '/api/user/7/nope'],
  ['GET', '/user/7'],
  ['GET', '/api'],
  ['GET', '//api/user'],
])('%s %s matches no route: a 404', async (method, path) => {
  expect((await send(method, path)).status).toBe(404);
});

test('a method no router knows is a 501 on a known segment and on an unknown one alike', async () => {
  expect((await send('PROPFIND', '/api/user/7')).status).toBe(501);
  expect((await send('PROPFIND', '/api/nope')).status).toBe(501);
});

test('match lists the routes of a path from its segment’s router, as the preflight asks', () => {
  expect(router.match('/api/user/7', 'GET').path.map((layer) => layer.path)).toEqual(['/api/user/:id']);
  expect(router.match('/api/nope', 'GET').path).toEqual([]);
});

test('a route whose choosing segment is a parameter is refused when it is registered', () => {
  expect(() => new SegmentRouter('').get('/:anything', answer('x'))).toThrow(/a parameter where the router is chosen/);
  expect(() => new SegmentRouter('/api').register('/api/:kind/list', ['GET'], [answer('x')])).toThrow(/parameter/);
  expect(() => new SegmentRouter('').get('/user{s}', answer('x'))).toThrow(/parameter/);
  expect(() => new SegmentRouter('').get('/*rest', answer('x'))).toThrow(/parameter/);
});
