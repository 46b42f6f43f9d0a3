import { gzipSync } from 'node:zlib';
import { startTestService, type Reply, type TestService } from '../support/service.js';

/**
 * Text in other encodings than UTF-8 (issue 34, points 6 and 9): a body declaring another charset
 * is a 415 and bytes that are not UTF-8 a 400, on REST, GraphQL and form bodies alike, with nothing
 * stored (never text with U+FFFD where the client's characters were); a header echoed in an error
 * is read as the UTF-8 it was sent as. Raw bytes over real HTTP.
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.stop();
});

/** `{"firstName":"Ren<E9>","lastName":"Latin"}`: the é as latin1 writes it, one byte 0xE9 (not UTF-8). */
const LATIN1_BODY = Buffer.concat([Buffer.from('{"firstName":"Ren'), Buffer.from([0xe9]), Buffer.from('","lastName":"Latin"}')]);

function expectError(res: Reply, status: number, error: string, message: RegExp): void {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.body).toEqual({ code: status, error, message: expect.stringMatching(message), requestId: res.headers.get('x-request-id') });
}

function expectGraphQLError(res: Reply, status: number, code: string, message: RegExp): void {
  expect(res.status).toBe(status);
  expect(res.body.data).toBeUndefined();
  expect(res.body.errors).toEqual([{ message: expect.stringMatching(message), extensions: expect.objectContaining({ code }) }]);
}

const NOT_UTF8 = /not valid UTF-8/;
const OTHER_CHARSET = /must be UTF-8/;

describe('REST bodies', () => {
  test.each(['latin1', 'ISO-8859-1', 'windows-1252', 'utf-16', '"latin1"'])(
    'Content-Type: application/json; charset=%s → 415 naming the charset, nothing stored',
    async (charset) => {
      const before = await svc.snapshot();
      const res = await svc.request('POST', '/user/', { rawBody: LATIN1_BODY, headers: { 'Content-Type': `application/json; charset=${charset}` } });
      expectError(res, 415, 'UNSUPPORTED_MEDIA_TYPE', OTHER_CHARSET);
      expect(res.body.message).toContain(`charset=${charset.replace(/"/g, '')}`);
      expect(await svc.snapshot()).toEqual(before);
    },
  );

  test('bytes that are not UTF-8 → 400 saying so, on POST, PUT and PATCH; nothing stored', async () => {
    const created = await svc.request('POST', '/user/', { body: { firstName: 'Before', lastName: 'Bytes' } });
    expect(created.status).toBe(201);
    const before = await svc.snapshot();
    const overlong = Buffer.from([0x7b, 0x22, 0x66, 0x69, 0x72, 0x73, 0x74, 0x4e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xc0, 0xaf, 0x22, 0x7d]); // {"firstName":"<C0 AF>"}
    const surrogate = Buffer.concat([Buffer.from('{"firstName":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]); // U+D800 in UTF-8 form
    const cut = Buffer.concat([Buffer.from('{"firstName":"'), Buffer.from([0xe2, 0x82]), Buffer.from('"}')]); // € cut short
    for (const [method, path, body] of [
      ['POST', '/user/', LATIN1_BODY],
      ['POST', '/user/', overlong],
      ['PUT', `/user/${created.body}`, LATIN1_BODY],
      ['PATCH', `/user/${created.body}`, surrogate],
      ['PATCH', `/user/${created.body}`, cut],
    ] as const) {
      for (const type of ['application/json', 'application/json; charset=utf-8']) {
        const res = await svc.request(method, path, { rawBody: body, headers: { 'Content-Type': type } });
        expectError(res, 400, 'BAD_REQUEST', NOT_UTF8);
      }
    }
    expect(await svc.snapshot()).toEqual(before);
  });

  test('UTF-8 under any spelling of its name, or none, is read and stored as sent (a U+FFFD sent is kept)', async () => {
    const names = ['', '; charset=utf-8', '; charset=UTF-8', '; charset=utf8', '; charset=UTF8', '; charset="utf-8"'];
    for (const [i, parameter] of names.entries()) {
      const firstName = `René ſ € 😀 \ufffd ${i}`;
      const res = await svc.request('POST', '/user/', {
        rawBody: Buffer.from(JSON.stringify({ firstName, lastName: 'Utf' })),
        headers: { 'Content-Type': `application/json${parameter}` },
      });
      expect(res.status).toBe(201);
      const [row] = await svc.sql<{ first_name: string }>('select first_name from users where id = ?', [res.body]);
      expect(row.first_name).toBe(firstName);
    }
  });

  test('a gzip body is still read; its bytes must be UTF-8 too; an unknown Content-Encoding → 415', async () => {
    const gzipped = await svc.request('POST', '/user/', {
      rawBody: gzipSync(Buffer.from(JSON.stringify({ firstName: 'Zipped é', lastName: 'Gzip' }))),
      headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
    });
    expect(gzipped.status).toBe(201);
    expect((await svc.sql<{ first_name: string }>('select first_name from users where id = ?', [gzipped.body]))[0].first_name).toBe('Zipped é');
    const before = await svc.snapshot();
    expectError(
      await svc.request('POST', '/user/', { rawBody: gzipSync(LATIN1_BODY), headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' } }),
      400,
      'BAD_REQUEST',
      NOT_UTF8,
    );
    expectError(
      await svc.request('POST', '/user/', {
        rawBody: Buffer.from('{"firstName":"A","lastName":"B"}'),
        headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'compress' },
      }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      /Content-Encoding/,
    );
    expect(await svc.snapshot()).toEqual(before);
  });

  test('forms (POST /oauth/introspect): another charset → 415; raw bytes or a %-escape that are not UTF-8 → 400', async () => {
    const form = 'application/x-www-form-urlencoded';
    expectError(
      await svc.request('POST', '/oauth/introspect', { rawBody: 'token=abc', headers: { 'Content-Type': `${form}; charset=iso-8859-1` } }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
      OTHER_CHARSET,
    );
    expectError(
      await svc.request('POST', '/oauth/introspect', { rawBody: Buffer.from([...Buffer.from('token=ab'), 0xe9]), headers: { 'Content-Type': form } }),
      400,
      'BAD_REQUEST',
      NOT_UTF8,
    );
    expectError(await svc.request('POST', '/oauth/introspect', { rawBody: 'token=ab%E9', headers: { 'Content-Type': form } }), 400, 'BAD_REQUEST', /not UTF-8/);
    const fine = await svc.request('POST', '/oauth/introspect', { rawBody: 'token=ab%C3%A9', headers: { 'Content-Type': `${form}; charset=UTF-8` } });
    expect(fine.status).toBe(200);
    expect(fine.body).toEqual({ active: false });
  });
});

describe('GraphQL POST bodies', () => {
  const mutation = (firstName: string) => `{"query":"mutation { createUser(input: { firstName: \\"${firstName}\\", lastName: \\"Gql\\" }) { id firstName } }"}`;

  test('another charset → 415, bytes that are not UTF-8 → 400, in GraphQL shape; nothing stored', async () => {
    const latin1 = Buffer.from(mutation('Ren\u00e9'), 'latin1'); // the é as one byte 0xE9
    const before = await svc.snapshot();
    const other = await svc.graphql('', undefined, { rawBody: latin1, headers: { 'Content-Type': 'application/json; charset=latin1' } });
    expectGraphQLError(other, 415, 'UNSUPPORTED_MEDIA_TYPE', OTHER_CHARSET);
    const invalid = await svc.graphql('', undefined, { rawBody: latin1, headers: { 'Content-Type': 'application/json' } });
    expectGraphQLError(invalid, 400, 'BAD_REQUEST', NOT_UTF8);
    expect(await svc.snapshot()).toEqual(before);
  });

  test('UTF-8 is read and stored as sent', async () => {
    const res = await svc.graphql('', undefined, {
      rawBody: Buffer.from(mutation('René ſ'), 'utf8'),
      headers: { 'Content-Type': 'application/json; charset=UTF8' },
    });
    expect(res.status).toBe(200);
    expect(res.body.data.createUser.firstName).toBe('René ſ');
    const [row] = await svc.sql<{ first_name: string }>('select first_name from users where id = ?', [res.body.data.createUser.id]);
    expect(row.first_name).toBe('René ſ');
  });
});

describe('headers echoed in an error', () => {
  /** A header value of these bytes as they go on the wire (fetch sends each character as one byte). */
  const wire = (bytes: Buffer) => bytes.toString('latin1');

  test('a bad Attrs name is shown as the UTF-8 it was sent as (ſcope, not Å¿cope); bytes that are not UTF-8 escaped; nothing changed', async () => {
    const userID = (await svc.request('POST', '/user/', { body: { firstName: 'Attrs', lastName: 'Echo' } })).body;
    const created = await svc.request('POST', '/token/', { body: { userID, accessToken: `attrs-${Date.now()}`, scope: 'user:read', tokenType: 'bearer' } });
    expect(created.status).toBe(201);
    const before = await svc.snapshot();
    const patch = (attrs: Buffer) => svc.request('PATCH', `/token/${created.body}`, { body: { scope: 'user:write' }, headers: { Attrs: wire(attrs) } });

    // ſ (U+017F) is no s, nor K (U+212A, the Kelvin sign) a k: only ASCII letters match a field's name case-insensitively.
    const longS = await patch(Buffer.from('ſcope, expireAt'));
    expect(longS.status).toBe(400);
    expect(longS.body.details).toEqual([{ field: 'Attrs', message: expect.stringMatching(/^"ſcope" is not a writable field/) }]);
    const kelvin = await patch(Buffer.from('scope, \u212Aey'));
    expect(kelvin.body.details).toEqual([{ field: 'Attrs', message: expect.stringMatching(/^"\u212Aey" is not a writable field/) }]);

    const latin1 = await patch(Buffer.concat([Buffer.from('sc'), Buffer.from([0xf6]), Buffer.from('pe')]));
    expect(latin1.status).toBe(400);
    expect(latin1.body.details).toEqual([{ field: 'Attrs', message: expect.stringMatching(/^"sc\\xF6pe" is not a writable field/) }]);
    expect(await svc.snapshot()).toEqual(before);

    const ascii = await patch(Buffer.from(' SCOPE '));
    expect(ascii.status).toBe(200);
  });
});
