/**
 * The GraphQL examples of the README and docs/, run as written against the real service: every operation of every
 * ```graphql block must answer data without errors. Variables come from records made just before
 * (the README leaves their values to the reader).
 */
import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { parse, Kind, type OperationDefinitionNode } from 'graphql';
import { startTestService, type TestService } from '../support/service.js';
import { bearer, collect, runningSubscriptions, untilSubscriptions, wsConnect } from '../support/subscriptions.js';
import { waitFor, within } from '../support/wait.js';

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
      /** The first root field (a subscription's operation, as /metrics names it). */
      field: op.selectionSet.selections.find((s) => s.kind === Kind.FIELD)?.name.value ?? '',
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
      // Over a WebSocket, as the README says: the next write is its first event. With `after` (the
      // newest event id, above) it is replayed if the subscription starts after the write; without,
      // the write waits until the service counts the subscription as running.
      const ws = wsConnect(svc.url, bearer(svc.adminToken));
      await within(`${op.name}'s connection`, ws.opened);
      const sub = collect(ws.client, op.block, variables);
      if (!op.variables.includes('after')) await untilSubscriptions(svc, op.field);
      await svc.request('POST', '/user/', { body: { firstName: 'Seen', lastName: 'Live' } });
      const [event] = await sub.atLeast(1);
      expect({ op: op.name, errors: event.errors }).toEqual({ op: op.name, errors: undefined });
      await ws.client.dispose();
      await untilSubscriptions(svc, op.field, 0); // gone before the next one counts
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

/**
 * The README's graphql-ws snippet, run as written (only the address and `token` filled in) by a
 * Node process that has no WebSocket of its own, as Node 20 has none: the snippet brings one (`ws`).
 * Its `console.log` ends the process with the first event it prints.
 */
const wsSnippet = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)]
  .map((m) => m[1])
  .find((code) => code.includes("from 'graphql-ws'") && code.includes('client.iterate'));

test("the README's graphql-ws snippet runs as written where Node has no WebSocket of its own", async () => {
  expect(wsSnippet).toBeDefined();
  const code = [
    'const token = process.env.TOKEN;',
    'const console = { log: (value) => { process.stdout.write(JSON.stringify(value) + "\\n"); process.exit(0); } };',
    wsSnippet!.replaceAll('ws://127.0.0.1:4000', svc.url.replace('http', 'ws')),
  ].join('\n');
  await waitFor('the earlier subscriptions to end', async () => (await runningSubscriptions(svc, 'userEvents')) === 0);
  // --no-experimental-websocket: Node 22 without its global WebSocket, as Node 20 is.
  const child = spawn(process.execPath, ['--no-experimental-websocket', '--input-type=module', '-e', code], {
    cwd: new URL('../../', import.meta.url),
    env: { ...process.env, TOKEN: svc.adminToken },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  try {
    await Promise.race([
      waitFor('the snippet to subscribe', async () => (await runningSubscriptions(svc, 'userEvents')) === 1),
      exited.then((status) => Promise.reject(new Error(`the snippet exited with ${status} before subscribing: ${stderr}`))),
    ]);
    await svc.request('POST', '/user/', { body: { firstName: 'Snippet', lastName: 'Reader' } });
    const status = await within('the event', exited);
    expect({ status, stderr }).toEqual({ status: 0, stderr: '' });
    expect(JSON.parse(stdout)).toMatchObject({ action: 'CREATE', user: { firstName: 'Snippet' } });
  } finally {
    child.kill();
  }
});
