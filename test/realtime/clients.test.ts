import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { Client, cacheExchange, fetchExchange, subscriptionExchange } from '@urql/core';
import { OperationTypeNode } from 'graphql';
import { createClient as createSseClient } from 'graphql-sse';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { startTestService, type TestService } from '../support/service.js';
import { untilSubscriptions } from '../support/subscriptions.js';
import { createUser } from '../support/users.js';
import { within } from '../support/wait.js';

/**
 * The subscription set-ups of docs/graphql.md (graphql-ws, graphql-sse, Apollo Client's GraphQLWsLink with a
 * split link, urql's subscriptionExchange), run as written against the real service: each receives
 * the event of a write made after it subscribed. Node has no WebSocket of its own in every version
 * a client supports, so the graphql-ws clients are given the `ws` package's.
 *
 * The snippets subscribe without `after`, as the docs show them: the write is made once the
 * service's gauge of running subscriptions counts the one made here (none of that operation runs
 * before it), so its event is the subscription's first, however slowly the subscription starts.
 */
let svc: TestService;
let token: string;
beforeAll(async () => {
  svc = await startTestService();
  token = svc.adminToken;
});
afterAll(async () => {
  await svc?.stop();
});
/** Resolves with the first value `take` gets, or rejects after 15 s. */
function first<T>(start: (take: (value: T) => void) => () => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let stop = () => {};
    const timer = setTimeout(() => {
      stop();
      reject(new Error('no event within 15 s'));
    }, 15_000);
    stop = start((value) => {
      clearTimeout(timer);
      stop();
      resolve(value);
    });
  });
}
/** Waits until no subscription of `operation` runs (a test before this one may have had one). */
const noneRunning = (operation: string) => untilSubscriptions(svc, operation, 0);
/** A write made once a subscription of `operation` runs. */
const onceSubscribed = (operation: string, write: () => Promise<unknown>) => untilSubscriptions(svc, operation).then(write);

test('graphql-ws', async () => {
  await noneRunning('userEvents');
  // --- as in docs/graphql.md --------------------------------------------------------------------
  const client = createClient({
    url: `${svc.url.replace('http', 'ws')}/graphql`,
    connectionParams: { Authorization: `Bearer ${token}` },
    webSocketImpl: WebSocket,
  });
  const iterated = (async () => {
    for await (const event of client.iterate({ query: 'subscription { userEvents { eventID action id } }' })) {
      expect(event.data?.userEvents).toMatchObject({ action: 'CREATE', eventID: expect.any(String) });
      break;
    }
  })();
  // ------------------------------------------------------------------------------------------------
  try {
    await Promise.all([
      within('the event of the write', iterated),
      onceSubscribed('userEvents', () => createUser(svc, { firstName: 'Ws', lastName: 'Clients' })),
    ]);
  } finally {
    await client.dispose();
  }
});

test('graphql-sse', async () => {
  await noneRunning('roleEvents');
  const client = createSseClient({ url: `${svc.url}/graphql`, headers: { Authorization: `Bearer ${token}` } });
  const iterated = (async () => {
    for await (const event of client.iterate({ query: 'subscription { roleEvents { eventID action role { name } } }' })) {
      expect(event.data?.roleEvents).toMatchObject({ action: 'CREATE', role: { name: 'sse-role' } });
      break;
    }
  })();
  try {
    await Promise.all([
      within('the event of the write', iterated),
      onceSubscribed('roleEvents', () => svc.request('POST', '/role/', { body: { name: 'sse-role' } })),
    ]);
  } finally {
    client.dispose();
  }
});

test('Apollo Client 4 with GraphQLWsLink and a split link', async () => {
  const http = new HttpLink({ uri: `${svc.url}/graphql`, headers: { Authorization: `Bearer ${token}` } });
  const ws = new GraphQLWsLink(
    createClient({ url: `${svc.url.replace('http', 'ws')}/graphql`, connectionParams: { Authorization: `Bearer ${token}` }, webSocketImpl: WebSocket }),
  );
  const client = new ApolloClient({
    link: ApolloLink.split(({ operationType }) => operationType === OperationTypeNode.SUBSCRIPTION, ws, http),
    cache: new InMemoryCache(),
  });
  // A query goes over HTTP, through the same client.
  const { data } = await client.query({
    query: gql`
      {
        viewer {
          scope
        }
      }
    `,
  });
  expect(data).toMatchObject({ viewer: { scope: '*' } });
  await noneRunning('userEvents');
  const [event] = await Promise.all([
    first<any>((take) => {
      const subscription = client
        .subscribe({
          query: gql`
            subscription {
              userEvents {
                eventID
                action
                user {
                  id
                  firstName
                }
              }
            }
          `,
        })
        .subscribe({
          next: ({ data }) => take((data as { userEvents?: unknown } | undefined)?.userEvents),
        });
      return () => subscription.unsubscribe();
    }),
    onceSubscribed('userEvents', () => createUser(svc, { firstName: 'Apollo', lastName: 'Clients' })),
  ]);
  expect(event).toMatchObject({ action: 'CREATE', user: { firstName: 'Apollo' } });
  client.stop();
});

test('urql with subscriptionExchange over graphql-ws', async () => {
  const ws = createClient({
    url: `${svc.url.replace('http', 'ws')}/graphql`,
    connectionParams: { Authorization: `Bearer ${token}` },
    webSocketImpl: WebSocket,
  });
  const client = new Client({
    url: `${svc.url}/graphql`,
    fetchOptions: () => ({ headers: { Authorization: `Bearer ${token}` } }),
    exchanges: [
      cacheExchange,
      fetchExchange,
      subscriptionExchange({
        forwardSubscription: (request) => ({
          subscribe: (sink) => ({ unsubscribe: ws.subscribe({ ...request, query: request.query ?? '' }, sink) }),
        }),
      }),
    ],
  });
  const user = await createUser(svc, { firstName: 'Linked', lastName: 'Clients' });
  const application = await svc.request('POST', '/application/', { body: { name: 'urql-app' } });
  await noneRunning('linkEvents');
  const [event] = await Promise.all([
    first<any>((take) => {
      const { unsubscribe } = client.subscription('subscription { linkEvents { eventID action userID applicationID right } }', {}).subscribe((result) => {
        take(result.data?.linkEvents);
      });
      return unsubscribe;
    }),
    onceSubscribed('linkEvents', () => svc.request('POST', `/user/${user}/application`, { body: [Number(application.body)] })),
  ]);
  expect(event).toMatchObject({ action: 'LINK', userID: String(user), applicationID: String(application.body), right: 0 });
  await ws.dispose();
});
