/**
 * The GraphQL examples of the README and docs/, run as written against the real service: every operation of every
 * ```graphql block must answer data without errors. Variables come from records made just before
 * (the README leaves their values to the reader).
 */
import { readdir, readFile } from 'node:fs/promises';
import { parse, Kind, type OperationDefinitionNode } from 'graphql';
import { startTestService, type TestService } from '../support/service.js';
import { bearer, collect, wsConnect } from '../support/subscriptions.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc.stop();
});

// The README and every document under docs/: their examples run as written.
const docFiles = ['README.md', ...(await readdir(new URL('../../docs/', import.meta.url))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const readme = (await Promise.all(docFiles.map((f) => readFile(new URL(`../../${f}`, import.meta.url), 'utf8')))).join('\n');
const blocks = [...readme.matchAll(/```graphql\n([\s\S]*?)```/g)].map((m) => m[1]);
const operations = blocks.flatMap((block) =>
  parse(block)
    .definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION)
    .map((op) => ({
      name: op.name?.value ?? '(anonymous)',
      type: op.operation,
      block,
      variables: op.variableDefinitions?.map((v) => v.variable.name.value) ?? [],
    })),
);

test('the README shows GraphQL examples of queries, mutations and subscriptions', () => {
  expect(operations.map((op) => op.name)).toEqual(
    expect.arrayContaining([
      'ActiveUsers',
      'UsersWithLinks',
      'CreateAda',
      'RenameAndClear',
      'Reserve',
      'CreateOnReservedId',
      'GrantBilling',
      'IssueToken',
      'WatchUsers',
    ]),
  );
});

test('every README GraphQL operation runs as written, in order, without errors', async () => {
  const application = await svc.request('POST', '/application/', { body: { name: 'billing' } });
  // A webhook's url under .invalid (RFC 2606): it never resolves, so the examples send nothing out.
  const values: Record<string, unknown> = { app: String(application.body), url: 'https://crm.example.invalid/hooks/identity' };
  for (const op of operations) {
    const [latest] = await svc.sql<{ id: string }>('select coalesce(max(id), 0)::text as id from audit_events');
    values.after = latest.id;
    const variables = Object.fromEntries(op.variables.map((name) => [name, values[name]]));
    expect({ op: op.name, missing: op.variables.filter((name) => values[name] === undefined) }).toEqual({ op: op.name, missing: [] });
    if (op.type === 'subscription') {
      // Over a WebSocket, as the README says: the next write is its first event.
      const ws = wsConnect(svc.url, bearer(svc.adminToken));
      const sub = collect(ws.client, op.block, variables);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await svc.request('POST', '/user/', { body: { firstName: 'Seen', lastName: 'Live' } });
      const [event] = await sub.atLeast(1);
      expect({ op: op.name, errors: event.errors }).toEqual({ op: op.name, errors: undefined });
      await ws.client.dispose();
      continue;
    }
    const res = await svc.graphql(op.block, variables, { rawBody: JSON.stringify({ query: op.block, operationName: op.name, variables }) });
    expect({ op: op.name, status: res.status, errors: res.body?.errors }).toEqual({ op: op.name, status: 200, errors: undefined });
    // Later examples use what earlier ones made, as a reader would.
    const data = res.body.data;
    if (data.createUser) values.id = values.user = data.createUser.id;
    if (data.applyUserID) values.id = data.applyUserID;
    if (data.createWebhook) values.webhook = data.createWebhook.id;
  }
});

/**
 * The README's REST filter examples (every `--data-urlencode 'filter=…'` of a curl command), run
 * against the list they are written for: each is accepted as written, in either form.
 */
const filterExamples = [...readme.matchAll(/curl -G [^\n]*?(http:\/\/127\.0\.0\.1:4000)?(\/[a-z/{}0-9]*)[^\n]*\\\n((?:[^\n]*\\\n)*[^\n]*)/g)].flatMap((m) =>
  [...m[3].matchAll(/--data-urlencode (['"])filter=(.*?)\1/g)].map((f) => ({ path: m[2], filter: f[2] })),
);

test('the README shows filters in both forms', () => {
  expect(filterExamples.some((e) => e.filter.startsWith('{'))).toBe(true);
  expect(filterExamples.some((e) => !e.filter.startsWith('{'))).toBe(true);
  expect(filterExamples.length).toBeGreaterThanOrEqual(5);
});

test('every README filter example is accepted as written', async () => {
  for (const { path, filter } of filterExamples) {
    const res = await svc.request('GET', `${path}?filter=${encodeURIComponent(filter)}`);
    expect({ path, filter, status: res.status }).toEqual({ path, filter, status: 200 });
    expect(Array.isArray(res.body)).toBe(true);
  }
});
