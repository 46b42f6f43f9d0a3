import { parse } from 'graphql';
import { PreparedDocument } from '../../src/graphql/documents.js';
import { Gate } from '../../src/graphql/gate.js';
import { serviceSchema as graphQLSchema } from '../../src/services.js';
import { TrustedDocuments } from '../../src/graphql/trusted-documents.js';
import { createLogger } from '../../src/observability/log.js';
import { startTestService, type Reply, type TestService } from '../support/service.js';
import { bearer, collect, wsConnect, type WsConnection } from '../support/subscriptions.js';

/**
 * The one GraphQL gate (src/graphql/gate.ts): a request is refused in the same words and with the
 * same codes over POST, GET, WebSocket and Server-Sent Events, and Apollo Server runs the gate's
 * parsed document rather than parsing and validating the text again.
 */
let svc: TestService;
const sockets: WsConnection[] = [];
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  for (const socket of sockets) await socket.client.dispose();
  await svc?.stop();
});

function connect(service: TestService = svc): WsConnection {
  const socket = wsConnect(service.url, bearer(service.adminToken));
  sockets.push(socket);
  return socket;
}

/** The errors of an answer, without the request id (which differs by request). */
const withoutIds = (errors: { extensions?: Record<string, unknown> }[]) =>
  errors.map(({ extensions: { requestId: _id, ...extensions } = {}, ...error }) => ({ ...error, extensions }));

/** A subscription's refusal over WebSocket: the `error` message's errors. */
async function overWebSocket(socket: WsConnection, query: string, variables: Record<string, unknown> = {}) {
  const sub = collect(socket.client, query, variables);
  await sub.ended;
  return sub.error as { message: string; extensions: Record<string, unknown> }[];
}

/** The same request over Server-Sent Events (graphql-sse's distinct connections mode). */
async function overSse(body: Record<string, unknown>, service: TestService = svc): Promise<Reply> {
  return service.request('POST', '/graphql', { body, headers: { Accept: 'text/event-stream' } });
}

/** And as a GET with its parameters in the query string. */
async function overGet(query: string, variables?: Record<string, unknown>): Promise<Reply> {
  const params = new URLSearchParams({ query, ...(variables ? { variables: JSON.stringify(variables) } : {}) });
  return svc.request('GET', `/graphql?${params}`);
}

describe('one gate for every transport', () => {
  const nested = `subscription { userEvents { ${'user { '.repeat(70)}id${' }'.repeat(70)} } }`;
  const refusals: [string, string, Record<string, unknown>, string][] = [
    ['a syntax error', 'subscription { userEvents(id: "SECRET-1" { eventID } }', {}, 'GRAPHQL_PARSE_FAILED'],
    ['an unknown field', 'subscription { userEvents { eventId } }', {}, 'GRAPHQL_VALIDATION_FAILED'],
    ['a literal of the wrong type', 'subscription { userEvents(id: 1.5) { eventID } }', {}, 'BAD_USER_INPUT'],
    [
      'too many aliases',
      `subscription { userEvents { ${Array.from({ length: 101 }, (_, i) => `a${i}: eventID`).join(' ')} } }`,
      {},
      'GRAPHQL_VALIDATION_FAILED',
    ],
    ['a document nested too deep', nested, {}, 'GRAPHQL_PARSE_FAILED'],
    [
      'variables nested too deep',
      'subscription ($id: ID) { userEvents(id: $id) { eventID } }',
      { id: JSON.parse(`${'['.repeat(70)}1${']'.repeat(70)}`) },
      'BAD_USER_INPUT',
    ],
    ['two operations and no name', 'subscription A { userEvents { eventID } } subscription B { roleEvents { eventID } }', {}, 'OPERATION_RESOLUTION_FAILURE'],
  ];

  test.each(refusals)('%s: the same errors over POST, GET, WebSocket and SSE', async (_label, query, variables, code) => {
    const post = await svc.graphql(query, variables);
    expect(post.status).toBe(400);
    expect(post.body.errors[0].extensions).toMatchObject({ code, requestId: post.headers.get('x-request-id') });
    expect(post.text).not.toContain('SECRET');
    const expected = withoutIds(post.body.errors);

    const get = await overGet(query, variables);
    expect({ status: get.status, errors: withoutIds(get.body.errors) }).toEqual({ status: 400, errors: expected });

    const sse = await overSse({ query, variables });
    expect({ status: sse.status, errors: withoutIds(sse.body.errors) }).toEqual({ status: 400, errors: expected });
    expect(sse.body.errors[0].extensions.requestId).toBe(sse.headers.get('x-request-id'));

    const socket = connect();
    await socket.opened;
    expect(withoutIds(await overWebSocket(socket, query, variables))).toEqual(expected);
  });

  test('a query over WebSocket or SSE, a subscription over HTTP: refused naming the transport to use', async () => {
    const socket = connect();
    await socket.opened;
    const [ws] = await overWebSocket(socket, '{ viewer { id } }');
    expect(ws).toMatchObject({ message: expect.stringMatching(/send a query over HTTP/), extensions: { code: 'BAD_REQUEST' } });
    const sse = await overSse({ query: '{ viewer { id } }' });
    expect({ status: sse.status, errors: withoutIds(sse.body.errors) }).toEqual({ status: 400, errors: withoutIds([ws]) });
    const post = await svc.graphql('subscription { roleEvents { eventID } }');
    expect(post.body.errors[0]).toMatchObject({ message: expect.stringMatching(/subscriptions run over WebSocket/), extensions: { code: 'BAD_REQUEST' } });
  });

  test('variables of the wrong type: BAD_USER_INPUT naming the variable on every transport, the value never repeated', async () => {
    const query = 'subscription ($id: ID) { userEvents(id: $id) { eventID } }';
    const variables = { id: { secret: 'SECRET-VALUE' } };
    const socket = connect();
    await socket.opened;
    const ws = await overWebSocket(socket, query, variables);
    expect(ws[0].extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: '$id' });
    expect(JSON.stringify(ws)).not.toContain('SECRET');
    const sse = await overSse({ query, variables });
    expect({ status: sse.status, errors: withoutIds(sse.body.errors) }).toEqual({ status: 400, errors: withoutIds(ws) });
    const post = await svc.graphql('query ($id: ID!) { user(id: $id) { id } }', variables);
    expect(post.status).toBe(400);
    expect(post.body.errors[0].message).toBe(ws[0].message);
  });
});

describe('the gate inside Apollo Server', () => {
  test('Apollo finds the gate’s parsed document under its own key: a text kept is parsed and validated once', async () => {
    const gate = new Gate({ schema: await graphQLSchema(), introspection: true, log: createLogger('silent'), trusted: null, metrics: null });
    const text = '{ viewer { id } }';
    // Kept from its second request (src/graphql/documents.ts): the second and the third share it.
    gate.admit({ query: text }, null, 'post');
    const first = gate.admit({ query: text }, null, 'post');
    const again = gate.admit({ query: text }, null, 'post');
    expect(first.kind).toBe('admitted');
    expect(again.kind === 'admitted' && first.kind === 'admitted' && again.document === first.document).toBe(true);
    // Apollo parses a text it meets for the first time and stores it: the store keeps the gate's document instead.
    const apolloParsed = parse(text);
    await gate.documentStore.set('apollo-key', apolloParsed);
    const stored = await gate.documentStore.get('apollo-key');
    expect(stored).not.toBe(apolloParsed);
    expect(first.kind === 'admitted' && stored === first.document).toBe(true);
  });

  test('a trusted document too: Apollo finds the one parsed at start', async () => {
    const schema = await graphQLSchema();
    const text = 'query Listed { viewer { id } }';
    const listed = new PreparedDocument(text, { schema, introspection: true });
    const gate = new Gate({ schema, introspection: true, log: createLogger('silent'), trusted: new TrustedDocuments('enforce', [listed]), metrics: null });
    await gate.documentStore.set('apollo-key', parse(text));
    expect((await gate.documentStore.get('apollo-key')) === listed.document).toBe(true);
    expect(await gate.persistedQueries.cache!.get(listed.hash)).toBe(text);
  });

  test('every answer of a document keeps working once Apollo has it in its store (the second and third runs)', async () => {
    const query = `query Repeated { users(pageSize: 1) { total } }`;
    for (let i = 0; i < 3; i++) {
      const res = await svc.graphql(query);
      expect({ status: res.status, errors: res.body.errors }).toEqual({ status: 200, errors: undefined });
    }
  });

  test('HEAD is answered as GET by Apollo without rewriting the request: same status and headers, no body', async () => {
    const path = `/graphql?query=${encodeURIComponent('{ viewer { scope } }')}`;
    const headers = { Authorization: `Bearer ${svc.adminToken}` };
    const get = await fetch(svc.url + path, { headers });
    const head = await fetch(svc.url + path, { method: 'HEAD', headers });
    expect({ status: head.status, type: head.headers.get('content-type'), body: await head.text() }).toEqual({
      status: get.status,
      type: get.headers.get('content-type'),
      body: '',
    });
    // The request log names the method the client used.
    const line = svc.logLines.map((l) => JSON.parse(l)).find((l) => l.msg === 'request' && l.requestId === head.headers.get('x-request-id'));
    expect(line).toMatchObject({ method: 'HEAD', status: 200, operationType: 'query' });
  });
});

describe('in production', () => {
  test('no "Did you mean …?" over WebSocket either, and introspection is refused on every transport', async () => {
    const prod = await startTestService({ NODE_ENV: 'production' });
    try {
      const socket = connect(prod);
      await socket.opened;
      const [hint] = await overWebSocket(socket, 'subscription { userEvents { eventId } }');
      expect(hint.extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
      expect(hint.message).not.toMatch(/did you mean/i);
      expect(hint.message).not.toContain('"eventID"');
      const introspection = await prod.graphql('{ __schema { queryType { name } } }');
      expect(introspection.status).toBe(400);
      expect(introspection.body.errors[0]).toMatchObject({
        message: expect.stringMatching(/introspection/i),
        extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
      });
    } finally {
      await prod.stop();
    }
  });
});
