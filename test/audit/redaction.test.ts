import { uniq } from '../support/names.js';
import { startTestService, type TestService } from '../support/service.js';

/**
 * What the audit log never shows (issue 34, point 9): a token's secrets (accessToken, refreshToken)
 * and the credentials of its authorization flow (code, codeChallenge), which the token itself
 * still reads back, are "[redacted]" in every event's `changes`, on REST and GraphQL writes alike;
 * which fields these are comes from the token's definition.
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

interface Event {
  action: string;
  changes: Record<string, { before: unknown; after: unknown }>;
}

/** The events of a token, oldest first, as GET /audit/ answers them. */
async function eventsOf(id: number): Promise<Event[]> {
  const res = await svc.request('GET', `/audit/?filter=${encodeURIComponent(`resource eq token and recordID eq ${id}`)}&orderBy=id`);
  expect(res.status).toBe(200);
  return res.body;
}

test('a token’s code and codeChallenge are redacted in its audit events as its secrets are; the token still reads them back', async () => {
  const userID = (await svc.request('POST', '/user/', { body: { firstName: 'Red', lastName: 'Acted' } })).body;
  const values = {
    accessToken: uniq('access'),
    refreshToken: uniq('refresh'),
    code: uniq('code'),
    codeChallenge: uniq('challenge'),
  };
  const created = await svc.request('POST', '/token/', { body: { userID, scope: 'user:read', tokenType: 'bearer', ...values } });
  expect(created.status).toBe(201);
  const id: number = created.body;
  const later = { code: uniq('code'), codeChallenge: uniq('challenge') };
  expect((await svc.request('PATCH', `/token/${id}`, { body: later })).status).toBe(200);
  const replaced = { code: uniq('code'), codeChallenge: null };
  expect((await svc.request('PUT', `/token/${id}`, { body: { userID, accessToken: values.accessToken, scope: 'user:read', ...replaced } })).status).toBe(200);
  const viaGraphQL = uniq('code');
  const patched = await svc.graphql('mutation ($id: ID!, $code: String!) { patchToken(id: $id, input: { code: $code }) { id code } }', {
    id: String(id),
    code: viaGraphQL,
  });
  expect(patched.body.errors).toBeUndefined();
  expect(patched.body.data.patchToken.code).toBe(viaGraphQL); // read back, as before

  const [create, patch, put, gqlPatch] = await eventsOf(id);
  const redacted = { before: null, after: '[redacted]' };
  expect(create).toMatchObject({ action: 'create' });
  for (const field of ['accessToken', 'refreshToken', 'code', 'codeChallenge']) expect(create.changes[field]).toEqual(redacted);
  expect(patch.changes).toEqual({ code: { before: '[redacted]', after: '[redacted]' }, codeChallenge: { before: '[redacted]', after: '[redacted]' } });
  // A value that becomes null shows as null (nothing to hide), as a secret's does.
  expect(put.changes.code).toEqual({ before: '[redacted]', after: '[redacted]' });
  expect(put.changes.codeChallenge).toEqual({ before: '[redacted]', after: null });
  expect(gqlPatch.changes).toEqual({ code: { before: '[redacted]', after: '[redacted]' } });

  // No value reaches the log, in any form.
  const dump = JSON.stringify(await svc.sql('select * from audit_events'));
  for (const value of [...Object.values(values), later.code, later.codeChallenge, replaced.code, viaGraphQL]) expect(dump).not.toContain(value);
  expect((await svc.request('GET', `/token/${id}`)).body).toMatchObject({ code: viaGraphQL, codeChallenge: null });
});
