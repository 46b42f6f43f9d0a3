import { startTestService, type TestService } from '../support/service.js';

/**
 * Webhooks over GraphQL (SPEC §13): the operations, the secret answered by createWebhook and
 * rotateWebhookSecret only, the same checks as REST (BAD_USER_INPUT naming the field), replay
 * bounds. Urls under `.invalid` never resolve: nothing leaves the machine.
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(() => svc?.stop());

const FIELDS = 'id url events description active disabledReason secret createdAt updatedAt';

async function ok(query: string, variables?: Record<string, unknown>) {
  const res = await svc.graphql(query, variables);
  expect({ status: res.status, errors: res.body?.errors }).toEqual({ status: 200, errors: undefined });
  return res.body.data;
}

test('createWebhook answers the secret once; webhook(id), webhooks and the connection never do', async () => {
  const { createWebhook: created } = await ok(
    `mutation { createWebhook(input: { url: "https://g.example.invalid/a", events: ["token.revoke"], description: "GraphQL" }) { ${FIELDS} } }`,
  );
  expect(created).toEqual({
    id: expect.stringMatching(/^\d+$/),
    url: 'https://g.example.invalid/a',
    events: ['token.revoke'],
    description: 'GraphQL',
    active: true,
    disabledReason: null,
    secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    createdAt: expect.any(String),
    updatedAt: expect.any(String),
  });
  const { webhook } = await ok('query($id: ID!) { webhook(id: $id) { id secret } }', { id: created.id });
  expect(webhook).toEqual({ id: created.id, secret: null });
  const { webhooks, webhooksConnection } = await ok(
    'query($id: ID!) { webhooks(filter: { id: { eq: $id } }) { total data { id secret events } } webhooksConnection(filter: { active: { eq: true } }) { edges { node { id secret } } } }',
    { id: created.id },
  );
  expect(webhooks).toEqual({ total: 1, data: [{ id: created.id, secret: null, events: ['token.revoke'] }] });
  expect(webhooksConnection.edges.every((e: { node: { secret: unknown } }) => e.node.secret === null)).toBe(true);
  // The same record as REST answers it.
  const rest = (await svc.request('GET', `/webhook/${created.id}`)).body;
  expect({ ...rest, id: String(rest.id) }).toEqual(Object.fromEntries(Object.entries(created).filter(([k]) => k !== 'secret')));
});

test('updateWebhook keeps the secret, patchWebhook changes what is given, destroyWebhook deletes; rotateWebhookSecret answers a new one', async () => {
  const { createWebhook: created } = await ok('mutation { createWebhook(input: { url: "https://g.example.invalid/b", active: false }) { id secret } }');
  const [before] = await svc.sql<{ secret_hmac: Buffer }>('select secret_hmac from webhooks where id = ?', [created.id]);
  const { updateWebhook } = await ok(
    'mutation($id: ID!) { updateWebhook(id: $id, input: { url: "https://g.example.invalid/c", active: false }) { url events secret } }',
    {
      id: created.id,
    },
  );
  expect(updateWebhook).toEqual({ url: 'https://g.example.invalid/c', events: ['*'], secret: null });
  const [after] = await svc.sql<{ secret_hmac: Buffer }>('select secret_hmac from webhooks where id = ?', [created.id]);
  expect(after.secret_hmac.equals(before.secret_hmac)).toBe(true);
  const { patchWebhook } = await ok(
    'mutation($id: ID!) { patchWebhook(id: $id, input: { description: "p", events: ["user.*"] }) { description events url } }',
    {
      id: created.id,
    },
  );
  expect(patchWebhook).toEqual({ description: 'p', events: ['user.*'], url: 'https://g.example.invalid/c' });
  const { rotateWebhookSecret } = await ok('mutation($id: ID!) { rotateWebhookSecret(id: $id) { id secret } }', { id: created.id });
  expect(rotateWebhookSecret.secret).toMatch(/^whsec_/);
  expect(rotateWebhookSecret.secret).not.toBe(created.secret);
  const [{ n }] = await svc.sql<{ n: number }>('select count(*)::int as n from webhook_secrets where webhook_id = ?', [created.id]);
  expect(n).toBe(1);
  expect(await ok('mutation($id: ID!) { destroyWebhook(id: $id) }', { id: created.id })).toEqual({ destroyWebhook: true });
  expect(await ok('query($id: ID!) { webhook(id: $id) { id } }', { id: created.id })).toEqual({ webhook: null });
  const missing = await svc.graphql('mutation($id: ID!) { rotateWebhookSecret(id: $id) { id } }', { id: created.id });
  expect(missing.body.errors[0].extensions.code).toBe('NOT_FOUND');
});

test.each([
  ['a private destination', '{ url: "http://10.0.0.1/", active: false }', 'input.url', /private/],
  ['loopback by name', '{ url: "http://localhost:9/" }', 'input.url', /loopback/],
  ['not http', '{ url: "mailto:a@b.c" }', 'input.url', /http/],
  ['an unknown event', '{ url: "https://g.example.invalid/", events: ["user.create", "user.explode"] }', 'input.events', /user\.explode/],
  ['a malformed secret', '{ url: "https://g.example.invalid/", secret: "hunter2" }', 'input.secret', /whsec_/],
])('createWebhook with %s: BAD_USER_INPUT naming the field, nothing written', async (_label, input, field, message) => {
  const before = await svc.snapshot({ sequences: false });
  const res = await svc.graphql(`mutation { createWebhook(input: ${input}) { id } }`);
  expect(res.status).toBe(200);
  const [error] = res.body.errors;
  expect(error.extensions.code).toBe('BAD_USER_INPUT');
  expect(JSON.stringify(error)).toContain(field);
  expect(error.message).toMatch(message);
  expect(JSON.stringify(res.body)).not.toContain('hunter2');
  expect(await svc.snapshot({ sequences: false })).toEqual(before);
});

test('replayWebhook: an event id up to the newest, at most 100,000 back', async () => {
  const { createWebhook: created } = await ok('mutation { createWebhook(input: { url: "https://g.example.invalid/r", active: false }) { id } }');
  const [{ newest }] = await svc.sql<{ newest: string }>('select max(id)::text as newest from audit_events');
  expect(await ok('mutation($id: ID!, $after: ID!) { replayWebhook(id: $id, after: $after) { id active } }', { id: created.id, after: newest })).toEqual({
    replayWebhook: { id: created.id, active: false },
  });
  const [state] = await svc.sql<{ position: string }>('select position::text from webhook_states where webhook_id = ?', [created.id]);
  expect(state.position).toBe(newest);
  for (const after of [String(Number(newest) + 1), '-1', 'x']) {
    const res = await svc.graphql('mutation($id: ID!, $after: ID!) { replayWebhook(id: $id, after: $after) { id } }', { id: created.id, after });
    expect(res.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
  }
});
