import { openRaw, requestText } from '../support/raw-http.js';
import { startTestService, type TestService } from '../support/service.js';
import { createUser } from '../support/users.js';

/**
 * HTTP/1.1 on one connection (regressions of defects found by review): a GET pipelined after a
 * PATCH sees what the PATCH wrote, a half-close after a complete request still gets its answer,
 * and bytes past Content-Length still get an HTTP answer with the JSON error body. Over raw
 * sockets: fetch cannot express pipelining, a half-close or a wrong Content-Length.
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

// ---------------------------------------------------------------------------------------------

describe('HTTP/1.1 connection handling', () => {
  // Defect: a pipelined GET is answered in parallel with the PATCH before it (from the read cache), showing the old value.
  test('a GET pipelined after a PATCH on one socket shows what the PATCH wrote', async () => {
    const id = await createUser(svc, { firstName: 'v0', lastName: 'Connections' });
    for (let i = 0; i < 2; i++) expect((await svc.request('GET', `/user/${id}`)).body.firstName).toBe('v0');
    const seen: { round: number; patch: number; get: number; firstName: unknown }[] = [];
    const conn = await openRaw(svc.url);
    try {
      for (let round = 1; round <= 20; round++) {
        const body = JSON.stringify({ firstName: `v${round}` });
        await conn.write(
          requestText('PATCH', `/user/${id}`, { token: svc.adminToken, body, headers: { Attrs: 'firstName' } }) +
            requestText('GET', `/user/${id}`, { token: svc.adminToken }),
        );
        const answers = await conn.answers(2 * round);
        const [patch, get] = answers.slice(-2);
        seen.push({ round, patch: patch.status, get: get.status, firstName: get.body?.firstName });
      }
    } finally {
      conn.close();
    }
    expect(seen).toEqual(seen.map(({ round }) => ({ round, patch: 200, get: 200, firstName: `v${round}` })));
  });

  // Defect: a client that half-closes after a complete request gets no answer.
  test('a complete request followed by a half-close is still answered', async () => {
    const id = await createUser(svc, { firstName: 'Half', lastName: 'Connections' });
    const conn = await openRaw(svc.url);
    try {
      await conn.write(requestText('GET', `/user/${id}`, { token: svc.adminToken }));
      await conn.end();
      const [answer] = await conn.answers(1);
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ id, firstName: 'Half' });
    } finally {
      conn.close();
    }
  });

  // Defect: bytes past Content-Length make the server close the connection without answering the request.
  test('a Content-Length shorter than the body sent still gets an HTTP answer (4xx with a JSON body)', async () => {
    const body = JSON.stringify({ firstName: 'Short', lastName: 'Length-declared' });
    expect(Buffer.byteLength(body)).toBeGreaterThan(10);
    const conn = await openRaw(svc.url);
    try {
      await conn.write(requestText('POST', '/user/', { token: svc.adminToken, body, headers: { 'Content-Length': '10' } }));
      const [answer] = await conn.answers(1);
      expect(answer.status).toBeGreaterThanOrEqual(400);
      expect(answer.status).toBeLessThan(500);
      expect(answer.headers['content-type']).toMatch(/json/);
      expect(answer.body).toMatchObject({ code: answer.status });
    } finally {
      conn.close();
    }
    // Nothing was created from the part of the body after the declared length.
    expect(await svc.sql(`select id from users where first_name = 'Short'`)).toEqual([]);
  });
});
