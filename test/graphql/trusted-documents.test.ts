import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ApolloClient, ApolloLink, CombinedGraphQLErrors, HttpLink, InMemoryCache } from '@apollo/client';
import { createPersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { generatePersistedQueryIdsFromManifest } from '@apollo/persisted-query-lists';
import { uniq } from '../support/names.js';
import { startTestService, type Reply, type TestService } from '../support/service.js';
import { bearer, untilSubscriptions, wsConnect, type WsConnection } from '../support/subscriptions.js';
import { waitFor, within } from '../support/wait.js';
import { createUser } from '../support/users.js';
import { CREATE_APPLICATION, USER_BY_ID } from './trusted-client/src/operations.js';

/**
 * Trusted documents (SPEC §12, docs/graphql.md#trusted-documents): a client project
 * (test/graphql/trusted-client) whose manifest @apollo/generate-persisted-query-manifest makes;
 * the service started with it (enforce) and with the same list as a plain {hash: document} map
 * (log); Apollo Client's persisted query link and graphql-ws against them; and every rule over raw
 * POST, GET, SSE and WebSocket. Bad lists: test/graphql/trusted-lists.test.ts.
 */
const CLIENT = fileURLToPath(new URL('./trusted-client/', import.meta.url));
const MANIFEST = join(CLIENT, 'persisted-query-manifest.json');
interface Manifest {
  operations: { id: string; name: string; type: string; body: string }[];
}
let manifest: Manifest;
const listed = (name: string) => manifest.operations.find((o) => o.name === name)!;

let enforce: TestService;
let logging: TestService;
let reader: string; // user:read and role:read, not "*"
let logReader: string;
let dir: string;
const sockets: WsConnection[] = [];

beforeAll(async () => {
  manifest = JSON.parse(await readFile(MANIFEST, 'utf8')) as Manifest;
  dir = await mkdtemp(join(tmpdir(), 'uts-trusted-'));
  const plain = join(dir, 'plain.json');
  await writeFile(plain, JSON.stringify(Object.fromEntries(manifest.operations.map((o) => [o.id, o.body]))));
  [enforce, logging] = await Promise.all([
    startTestService({ GRAPHQL_TRUSTED_DOCUMENTS: MANIFEST }),
    startTestService({ GRAPHQL_TRUSTED_DOCUMENTS: plain, GRAPHQL_TRUSTED_DOCUMENTS_MODE: 'log' }),
  ]);
  reader = await enforce.tokenWith('user:read role:read');
  logReader = await logging.tokenWith('user:read role:read');
});
afterAll(async () => {
  for (const socket of sockets) await socket.client.dispose();
  await Promise.all([enforce?.stop(), logging?.stop()]);
  await rm(dir, { recursive: true, force: true });
});

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const UNLISTED = 'query Unlisted { users(pageSize: 1) { total } }';
const byHash = (id: string) => ({ extensions: { persistedQuery: { version: 1, sha256Hash: id } } });

/** POST /graphql with this body and token. */
const post = (svc: TestService, body: Record<string, unknown>, token: string | null) => svc.request('POST', '/graphql', { body, token });
/** GET /graphql with these parameters (objects as JSON). */
const get = (svc: TestService, params: Record<string, unknown>, token: string | null) =>
  svc.request(
    'GET',
    `/graphql?${new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, typeof v === 'string' ? v : JSON.stringify(v)]))}`,
    { token },
  );
/** An SSE request (graphql-sse, distinct connections): the refusals answer JSON at once. */
const sse = (svc: TestService, body: Record<string, unknown>, token: string) =>
  svc.request('POST', '/graphql', { body, token, headers: { Accept: 'text/event-stream' } });

function refused(res: Reply, code: string): void {
  expect({ status: res.status, code: res.body?.errors?.[0]?.extensions?.code, data: res.body?.data }).toEqual({ status: 400, code, data: undefined });
  expect(res.body.errors[0].extensions.requestId).toBe(res.headers.get('x-request-id'));
}

function connect(svc: TestService, token: string): WsConnection {
  const socket = wsConnect(svc.url, bearer(token));
  sockets.push(socket);
  return socket;
}

describe('the client project', () => {
  test('its checked-in manifest is what @apollo/generate-persisted-query-manifest makes of it now', async () => {
    const config = join(dir, 'config.json');
    const output = join(dir, 'generated.json');
    await writeFile(config, JSON.stringify({ documents: ['src/**/*.ts'], output }));
    const cli = fileURLToPath(new URL('../../node_modules/@apollo/generate-persisted-query-manifest/cli.js', import.meta.url));
    await promisify(execFile)(process.execPath, [cli, '--config', config], { cwd: CLIENT });
    expect(JSON.parse(await readFile(output, 'utf8'))).toEqual(manifest);
    // And its ids are the SHA-256 of the bodies, as the service checks at start.
    for (const operation of manifest.operations) expect(sha256(operation.body)).toBe(operation.id);
  });
});

describe('Apollo Client with the persisted query link and the manifest', () => {
  test('sends ids only, and gets its data; a mutation by id writes', async () => {
    const sent: unknown[] = [];
    const http = new HttpLink({
      uri: `${enforce.url}/graphql`,
      headers: { Authorization: `Bearer ${enforce.adminToken}` },
      fetch: (input, init) => {
        sent.push(JSON.parse(String(init?.body)));
        return fetch(input, init);
      },
    });
    const persisted = createPersistedQueryLink(generatePersistedQueryIdsFromManifest({ loadManifest: () => manifest }));
    const client = new ApolloClient({ link: ApolloLink.from([persisted, http]), cache: new InMemoryCache() });
    const id = await createUser(enforce, { firstName: 'Trusted', lastName: uniq('Docs') });
    const { data } = await client.query({ query: USER_BY_ID, variables: { id: String(id) } });
    expect(data).toEqual({ user: { __typename: 'User', id: String(id), firstName: 'Trusted', lastName: expect.any(String) } });
    const name = `trusted-${id}`;
    const created = await client.mutate({ mutation: CREATE_APPLICATION, variables: { name } });
    expect(created.data).toMatchObject({ createApplication: { name } });
    expect(await enforce.sql('select name from applications where name = ?', [name])).toEqual([{ name }]);
    // What went over the wire: the ids of the manifest, no document text.
    const sentId = (name: string) =>
      expect.objectContaining({ extensions: expect.objectContaining({ persistedQuery: { version: 1, sha256Hash: listed(name).id } }) });
    expect(sent).toEqual([sentId('UserById'), sentId('CreateApplication')]);
    expect(sent.filter((body) => (body as { query?: unknown }).query !== undefined)).toEqual([]);
  });

  test('an operation the frontend did not ship: QUERY_NOT_IN_SAFELIST reaches Apollo Client with its code', async () => {
    const client = new ApolloClient({
      link: new HttpLink({ uri: `${enforce.url}/graphql`, headers: { Authorization: `Bearer ${reader}` } }),
      cache: new InMemoryCache(),
    });
    const error = await client.query({ query: (await import('@apollo/client')).gql(UNLISTED) }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(CombinedGraphQLErrors.is(error)).toBe(true);
    expect((error as CombinedGraphQLErrors).errors[0].extensions).toMatchObject({ code: 'QUERY_NOT_IN_SAFELIST' });
  });
});

describe('enforce mode over raw HTTP', () => {
  test('a listed operation by id runs over POST and GET, by extensions.persistedQuery and by documentId', async () => {
    const id = await createUser(enforce, { firstName: 'Trusted', lastName: uniq('Docs') });
    const { id: hash } = listed('UserById');
    const variables = { id: String(id) };
    const expected = { data: { user: { __typename: 'User', id: String(id), firstName: 'Trusted', lastName: expect.any(String) } } };
    for (const res of [
      await post(enforce, { ...byHash(hash), variables }, reader),
      await post(enforce, { documentId: `sha256:${hash}`, variables }, reader),
      await get(enforce, { ...byHash(hash), variables }, reader),
      await get(enforce, { documentId: `sha256:${hash}`, variables }, reader),
      await post(enforce, { query: listed('UserById').body, variables }, reader), // the full text of a listed operation
    ]) {
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: expected });
    }
  });

  test('an id not in the list: 400 PERSISTED_QUERY_NOT_IN_LIST, whoever asks; a text not in the list: 400 QUERY_NOT_IN_SAFELIST', async () => {
    const unknown = sha256('query Nope { viewer { id } }');
    for (const token of [reader, enforce.adminToken]) {
      refused(await post(enforce, byHash(unknown), token), 'PERSISTED_QUERY_NOT_IN_LIST');
      refused(await post(enforce, { documentId: `sha256:${unknown}` }, token), 'PERSISTED_QUERY_NOT_IN_LIST');
      refused(await get(enforce, byHash(unknown), token), 'PERSISTED_QUERY_NOT_IN_LIST');
    }
    refused(await post(enforce, { query: UNLISTED }, reader), 'QUERY_NOT_IN_SAFELIST');
    refused(await get(enforce, { query: UNLISTED }, reader), 'QUERY_NOT_IN_SAFELIST');
    // Nothing runs, not even a mutation's write.
    const before = await enforce.snapshot();
    refused(await post(enforce, { query: 'mutation { applyUserID }' }, reader), 'QUERY_NOT_IN_SAFELIST');
    expect(await enforce.snapshot()).toEqual(before);
  });

  test('a token holding "*" may still send any text (the explorers); registering it as a persisted query is off', async () => {
    const res = await post(enforce, { query: UNLISTED }, enforce.adminToken);
    expect({ status: res.status, data: res.body.data }).toEqual({ status: 200, data: { users: { total: expect.any(Number) } } });
    // Apollo Client's automatic persisted queries send the hash with the text: it runs, and is not registered.
    const registering = await post(enforce, { query: UNLISTED, ...byHash(sha256(UNLISTED)) }, enforce.adminToken);
    expect(registering.status).toBe(200);
    refused(await post(enforce, byHash(sha256(UNLISTED)), enforce.adminToken), 'PERSISTED_QUERY_NOT_IN_LIST');
  });

  test('without a token: 401 before the list is looked at', async () => {
    const res = await post(enforce, byHash(listed('Viewer').id), null);
    expect({ status: res.status, code: res.body.errors[0].extensions.code }).toEqual({ status: 401, code: 'UNAUTHENTICATED' });
  });

  test('over SSE: a listed subscription by id streams; an unknown id and an unlisted text are refused (400)', async () => {
    refused(await sse(enforce, { documentId: `sha256:${sha256('subscription X { roleEvents { eventID } }')}` }, reader), 'PERSISTED_QUERY_NOT_IN_LIST');
    refused(await sse(enforce, { query: 'subscription Unlisted { roleEvents { eventID } }' }, reader), 'QUERY_NOT_IN_SAFELIST');
    const controller = new AbortController();
    const stream = await fetch(`${enforce.url}/graphql`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${reader}`, 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify(byHash(listed('RoleEvents').id)),
      signal: controller.signal,
    });
    expect({ status: stream.status, type: stream.headers.get('content-type') }).toEqual({ status: 200, type: expect.stringMatching(/^text\/event-stream/) });
    const reading = stream.body!.getReader();
    await untilSubscriptions(enforce, 'roleEvents');
    const created = await enforce.request('POST', '/role/', { body: { name: uniq('trusted-role') } });
    let text = '';
    await within(
      'the CREATE event on the stream',
      (async () => {
        const decoder = new TextDecoder();
        while (!/"action":"CREATE"/.test(text)) {
          const chunk = await reading.read();
          if (chunk.done) break;
          text += decoder.decode(chunk.value, { stream: true });
        }
      })(),
    ).finally(() => controller.abort());
    expect(created.status).toBe(201);
    expect(text).toMatch(/"roleEvents":\{"eventID":"\d+","action":"CREATE","id":"\d+","__typename":"RoleEvent"\}/);
  });

  test('over graphql-ws: a listed subscription by id (empty query, as graphql-ws requires a string) and by text; the others refused', async () => {
    const socket = connect(enforce, reader);
    await socket.opened;
    const { id: hash, body } = listed('RoleEvents');
    const subscriptions = [
      collectPayload(socket, { query: '', ...byHash(hash) }),
      collectPayload(socket, { query: '', documentId: `sha256:${hash}` }),
      collectPayload(socket, { query: body }),
    ];
    const unknown = collectPayload(socket, { query: '', ...byHash(sha256('nope')) });
    const unlisted = collectPayload(socket, { query: 'subscription Unlisted { roleEvents { eventID } }' });
    await Promise.all([unknown.ended, unlisted.ended]);
    expect((unknown.error as { extensions: { code: string } }[])[0].extensions.code).toBe('PERSISTED_QUERY_NOT_IN_LIST');
    expect((unlisted.error as { extensions: { code: string } }[])[0].extensions.code).toBe('QUERY_NOT_IN_SAFELIST');
    // Once the three listed ones run, a role made reaches all three.
    await untilSubscriptions(enforce, 'roleEvents', 3);
    await enforce.request('POST', '/role/', { body: { name: uniq('ws-role') } });
    for (const sub of subscriptions) {
      const [event] = await sub.atLeast(1, 10_000);
      expect(event).toEqual({ data: { roleEvents: { eventID: expect.any(String), action: 'CREATE', id: expect.any(String), __typename: 'RoleEvent' } } });
      sub.stop();
    }
  });

  test('refusals are counted in /metrics', async () => {
    const metrics = await enforce.request('GET', '/metrics', { token: null });
    expect(metrics.text).toMatch(/graphql_untrusted_operations_total\{transport="post",outcome="refused"\} [1-9]/);
    expect(metrics.text).toMatch(/graphql_untrusted_operations_total\{transport="ws",outcome="refused"\} [1-9]/);
    expect(metrics.text).toMatch(/graphql_untrusted_operations_total\{transport="post",outcome="explorer"\} [1-9]/);
  });
});

describe('log mode (the list as a plain {hash: document} map)', () => {
  test('what is outside the list runs, and is logged (name and hash, never variables) and counted', async () => {
    const text = 'query Outside($f: UserFilter) { users(filter: $f) { total } }';
    const secret = uniq('secret');
    const res = await post(logging, { query: text, variables: { f: { lastName: { eq: secret } } } }, logReader);
    expect({ status: res.status, data: res.body.data }).toEqual({ status: 200, data: { users: { total: 0 } } });
    const lines = logging.logLines.map((l) => JSON.parse(l));
    expect(lines.find((l) => l.msg === 'graphql operation outside the trusted documents' && l.requestId === res.headers.get('x-request-id'))).toMatchObject({
      level: 'warn',
      transport: 'post',
      mode: 'log',
      outcome: 'logged',
      operationName: 'Outside',
      hash: sha256(text),
    });
    expect(logging.logLines.join('\n')).not.toContain(secret);
    // Over WebSocket too.
    const socket = connect(logging, logReader);
    await socket.opened;
    const sub = collectPayload(socket, { query: 'subscription Watching { roleEvents { eventID } }' });
    const metrics = async () => (await logging.request('GET', '/metrics', { token: null })).text;
    await untilSubscriptions(logging, 'roleEvents');
    expect(sub.error).toBeUndefined();
    sub.stop();
    expect(await metrics()).toMatch(/graphql_untrusted_operations_total\{transport="post",outcome="logged"\} [1-9]/);
    expect(await metrics()).toMatch(/graphql_untrusted_operations_total\{transport="ws",outcome="logged"\} 1/);
  });

  test('listed ids run; an id not in the list is still refused (there is nothing to run)', async () => {
    const res = await post(logging, byHash(listed('Viewer').id), logReader);
    expect({ status: res.status, data: res.body.data }).toEqual({
      status: 200,
      data: { viewer: { __typename: 'Token', id: expect.any(String), scope: 'user:read role:read' } },
    });
    refused(await post(logging, byHash(sha256('nope')), logReader), 'PERSISTED_QUERY_NOT_IN_LIST');
  });
});

/** Subscribes with a raw payload (an id, an empty query) and collects what comes. */
function collectPayload(socket: WsConnection, payload: Record<string, unknown>) {
  const results: unknown[] = [];
  let error: unknown;
  let endedResolve!: () => void;
  const ended = new Promise<void>((resolve) => (endedResolve = resolve));
  const stop = socket.client.subscribe(payload as { query: string }, {
    next: (value) => results.push(value),
    error: (err) => {
      error = err;
      endedResolve();
    },
    complete: () => endedResolve(),
  });
  return {
    results,
    get error() {
      return error;
    },
    ended,
    stop,
    async atLeast(count: number, ms: number) {
      await waitFor(`${count} results`, () => results.length >= count || error !== undefined, ms).catch(() => {});
      if (results.length < count) throw new Error(`expected ${count} results, got ${JSON.stringify(results)} (error: ${JSON.stringify(error)})`);
      return results;
    },
  };
}
