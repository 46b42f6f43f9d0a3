import { loadConfig } from '../../src/config.js';
import { MODULES } from '../../src/modules.js';
import { createLogger } from '../../src/observability/log.js';
import { startService } from '../../src/server.js';
import group, { groupWork, uncountedGroups } from '../support/group/index.js';
import { newTestDatabase, startTestService, type TestService } from '../support/service.js';
import { bearer, collect, wsConnect } from '../support/subscriptions.js';
import { waitFor } from '../support/wait.js';

/**
 * A made-up resource module (test/support/group/: a definition, its migration, a service, routes,
 * resolvers and subscriptions, from the generic parts), registered beside src/modules.ts's the way
 * a new module is (one more entry in the list): REST, GraphQL, OpenAPI, the list language,
 * subscriptions, the scope vocabulary and the live count all know it without another edit.
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({}, { modules: [...MODULES, group] });
});
afterAll(() => svc?.stop());

const create = async (name: string, size: number): Promise<number> => {
  const created = await svc.request('POST', '/group/', { body: { name, size } });
  expect({ name, status: created.status }).toEqual({ name, status: 201 });
  return created.body;
};

const liveCount = async () => (await svc.sql<{ live: string }>("select live::text from live_counts where table_name = 'groups'"))[0]?.live;

test('REST serves the record operations, with the list language and the kept live count as the total', async () => {
  const [alpha] = [await create('alpha', 3), await create('beta', 1), await create('gamma', 5)];
  const got = await svc.request('GET', `/group/${alpha}`);
  expect(got.status).toBe(200);
  expect(got.body).toMatchObject({ id: alpha, name: 'alpha', size: 3 });

  const filtered = await svc.request('GET', `/group/?filter=${encodeURIComponent('size ge 2')}&orderBy=-size`);
  expect(filtered.body.map((g: { name: string }) => g.name)).toEqual(['gamma', 'alpha']);
  expect(filtered.headers.get('x-total-count')).toBe('2');
  expect((await svc.request('GET', `/group/?filter=${encodeURIComponent('{"name":{"like":"%a"}}')}`)).body.length).toBe(3);

  svc.queries.length = 0;
  const all = await svc.request('GET', '/group/');
  expect(all.headers.get('x-total-count')).toBe('3');
  expect(svc.queries.filter((q) => /from live_counts where table_name = 'groups'/.test(q))).toHaveLength(1);
  expect(await liveCount()).toBe('3');

  expect((await svc.request('DELETE', `/group/${alpha}`)).body).toBe(1);
  expect((await svc.request('GET', '/group/')).headers.get('x-total-count')).toBe('2');
  expect(await liveCount()).toBe('2');
  expect((await svc.request('POST', `/group/${alpha}/restore`)).status).toBe(200);
  expect(await liveCount()).toBe('3');

  const refused = await svc.request('POST', '/group/', { body: { size: 'big' } });
  expect(refused.status).toBe(400);
  expect(refused.body.details.map((d: { field: string }) => d.field).sort()).toEqual(['name', 'size']);
  expect((await svc.request('POST', '/group/', { body: { name: 'beta' } })).status).toBe(409);
});

test('GraphQL has its type, queries, mutations, filters and order', async () => {
  const created = await svc.graphql('mutation { createGroup(input: { name: "delta", size: 7 }) { id name size } }');
  expect(created.body.errors).toBeUndefined();
  expect(created.body.data.createGroup).toMatchObject({ name: 'delta', size: 7 });
  const listed = await svc.graphql('{ groups(filter: { size: { gte: 5 } }, orderBy: [{ size: DESC }]) { total data { name } } }');
  expect(listed.body.data.groups).toEqual({ total: 2, data: [{ name: 'delta' }, { name: 'gamma' }] });
  const one = await svc.graphql('query ($id: ID!) { group(id: $id) { name } }', { id: created.body.data.createGroup.id });
  expect(one.body.data.group).toEqual({ name: 'delta' });
});

test('the OpenAPI document has its routes, tag and schemas', async () => {
  const doc = (await svc.request('GET', '/openapi.json', { token: null })).body;
  expect(Object.keys(doc.paths['/group/'])).toEqual(['get', 'post']);
  expect(Object.keys(doc.paths['/group/{id}'])).toEqual(['get', 'put', 'patch', 'delete']);
  expect(doc.paths['/group/'].get.tags).toEqual(['groups']);
  expect(doc.tags.map((t: { name: string }) => t.name)).toContain('groups');
  expect(Object.keys(doc.components.schemas.GroupCreate.properties)).toEqual(['name', 'size', 'id']);
  expect(doc.components.schemas.Group.required).toEqual(['id', 'name', 'size', 'createdAt', 'updatedAt']);
});

test('its subscription streams its changes', async () => {
  const ws = wsConnect(svc.url, bearer(svc.adminToken));
  try {
    await ws.opened;
    const sub = collect(ws.client, 'subscription { groupEvents { action group { name size } } }');
    // The subscription is running once an event written after it arrives: write until one does.
    // The event source may be reading already for another listener (the module's own work), and
    // then hands the new subscription what committed just before it too: look for ours.
    const ours = () => sub.results.find((r) => /^epsilon-/.test(r.data?.groupEvents?.group?.name ?? ''));
    let n = 0;
    await waitFor('a groupEvents event of a group created after subscribing', async () => {
      if (ours()) return true;
      await create(`epsilon-${n++}`, 2);
      return false;
    });
    expect(ours().data.groupEvents).toEqual({ action: 'CREATE', group: { name: expect.stringMatching(/^epsilon-/), size: 2 } });
    sub.stop();
  } finally {
    await ws.client.dispose();
  }
});

test('its scope joins the vocabulary: read and write are checked, and only a holder of group:write can grant it', async () => {
  const reader = await svc.tokenWith('group:read');
  expect((await svc.request('GET', '/group/', { token: reader })).status).toBe(200);
  const write = await svc.request('POST', '/group/', { token: reader, body: { name: 'zeta' } });
  expect({ status: write.status, header: write.headers.get('www-authenticate') }).toEqual({
    status: 403,
    header: 'Bearer error="insufficient_scope", scope="group:write"',
  });
  expect((await svc.graphql('mutation { createGroup(input: { name: "zeta" }) { id } }', {}, { token: reader })).body.errors[0].extensions.code).toBe(
    'FORBIDDEN',
  );

  const issuer = await svc.tokenWith('token:write user:read');
  const [{ id: userID }] = await svc.sql<{ id: string }>('select id::text from users order by id limit 1');
  const grant = (scope: string) =>
    svc.request('POST', '/token/', { token: issuer, body: { userID: Number(userID), accessToken: `t-${scope}-${Date.now()}`, scope } });
  const refused = await grant('group:write');
  expect({ status: refused.status, permission: refused.body.message }).toEqual({ status: 403, permission: expect.stringContaining('"group:write"') });
  expect((await grant('group:*')).status).toBe(403);
  // A word no module declares is no scope of this service: it passes through, as before.
  expect((await grant('calendar:write')).status).toBe(201);
});

test('its audit resource joins those a webhook’s event patterns may name, over REST and GraphQL', async () => {
  // Inactive: nothing is delivered to the made-up address.
  const body = { url: 'https://hooks.example.invalid/groups', events: ['group.create', 'group.*'], active: false };
  const created = await svc.request('POST', '/webhook/', { body });
  expect(created.status).toBe(201);
  const viaGraphQL = await svc.graphql('mutation ($input: WebhookInput!) { createWebhook(input: $input) { events } }', {
    input: { ...body, events: ['group.delete'] },
  });
  expect(viaGraphQL.body).toEqual({ data: { createWebhook: { events: ['group.delete'] } } });
  const refused = await svc.request('POST', '/webhook/', { body: { ...body, events: ['grouping.create'] } });
  expect({ status: refused.status, details: refused.body.details }).toEqual({
    status: 400,
    details: [
      {
        field: 'events',
        message: expect.stringContaining("over the audit log's resources (user, token, application, role, application_link, role_link, webhook, group)"),
      },
    ],
  });
});

test('its work beside the requests starts with the service, reads the event source, has its metric in /metrics, and stops with it', async () => {
  const before = groupWork.length;
  const other = await startTestService({}, { modules: [...MODULES, group] });
  let stopped = false;
  try {
    expect(groupWork.length).toBe(before + 1);
    const work = groupWork[before];
    expect(work).toEqual({ events: 0, stopped: false, eventsAfterStop: 0 });
    // A listener starts from the log's end: write until one of the writes reaches it.
    await waitFor('the module’s work to read a group event', async () => {
      expect((await other.request('POST', '/group/', { body: { name: `work-${Date.now()}-${Math.random()}` } })).status).toBe(201);
      return work.events > 0;
    });
    const metrics = (await other.request('GET', '/metrics', { token: null })).text;
    expect(Number(/^group_events_seen_total (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(1);
    stopped = true;
    await other.stop();
    expect(work.stopped).toBe(true);
    expect(work.eventsAfterStop).toBe(0);
  } finally {
    if (!stopped) await other.stop();
  }
});

test('a counted resource whose table has no live_counts row stops the start, naming the table', async () => {
  const database = await newTestDatabase();
  try {
    const config = loadConfig({ TOKEN_KEY: Buffer.alloc(32, 7).toString('base64'), PORT: '0', HOST: '127.0.0.1', ...database.env });
    const log = createLogger('error', () => {});
    await expect(startService(config, log, { modules: [...MODULES, uncountedGroups] })).rejects.toThrow(
      /the table groups of a counted resource has no live_counts row/,
    );
  } finally {
    await database.drop();
  }
});
