// The floor of this service's stack for the REST paths: Koa 3 and @koa/router (what the service is
// built on), a pg pool with named statements, the bearer token's keyed hash (the service's own
// Keyring) and its check, in the request's statement once the token was seen (floor.mjs);
// `GET /user/{id}` reads the user's row by id, JSON out; `PATCH /user/{id}`
// ({"firstName"}, through koa-bodyparser) is floor.mjs's audited write, answering `1` as the
// service's wire dialect does. Nothing else: no request id, log line, metrics, CORS, Host check,
// validation beyond the one field, error mapping, presenter, read cache, change events. It measures how close to raw
// node:http + pg any service on Koa can come here (docs/benchmarks.md#the-floor-of-the-stack).
//
//   FLOORS=1 npm run bench:compare      # beside the service, each case also as a share of its floor
// or by hand, on the database a run of it left (uts_bench_service; export TOKEN_KEY before that run):
//   npm run build; export TOKEN_KEY=…   # the key the seeded database was written with
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/uts_bench_service PORT=5730 node bench/koa-floor.mjs
//   wrk -t2 -c32 -d8s -s bench/compare/load.lua http://127.0.0.1:5730 -- us-user   # or us-patch, us-mixed-id
import Router from '@koa/router';
import Koa from 'koa';
import bodyParser from 'koa-bodyparser';
import { credentialOf, NotLive, patchFirstName, read, readFor } from './floor.mjs';

const USER = read(
  'floor-user',
  `select id, ref, out_key as "outKey", first_name as "firstName", last_name as "lastName", avatar_url as "avatarUrl",
                photo_url as "photoUrl", status, created_at as "createdAt", updated_at as "updatedAt"
           from users where id = $1 and deleted_at is null`,
);

const unauthorized = (ctx) => {
  ctx.status = 401;
  ctx.body = { error: 'unauthorized' };
};

const router = new Router();
router.use(async (ctx, next) => {
  ctx.state.credential = await credentialOf(ctx.get('Authorization'));
  if (!ctx.state.credential) return unauthorized(ctx);
  try {
    await next();
  } catch (err) {
    if (!(err instanceof NotLive)) throw err;
    unauthorized(ctx);
  }
});
router.get('/user/:id', async (ctx) => {
  const rows = await readFor(ctx.state.credential, USER, [Number(ctx.params.id)]);
  if (!rows[0]) {
    ctx.status = 404;
    ctx.body = { error: 'not found' };
    return;
  }
  ctx.body = rows[0];
});
router.patch('/user/:id', bodyParser(), async (ctx) => {
  const { firstName } = ctx.request.body ?? {};
  if (typeof firstName !== 'string') {
    ctx.status = 400;
    ctx.body = { error: 'firstName' };
    return;
  }
  const row = await patchFirstName(Number(ctx.params.id), firstName, ctx.state.credential);
  ctx.status = row ? 200 : 404;
  ctx.body = row ? 1 : { error: 'not found' };
});

const app = new Koa();
app.use(router.routes());
app.listen(Number(process.env.PORT ?? 5730), '127.0.0.1');
