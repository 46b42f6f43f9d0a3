/**
 * The helpers of the REST token tests (test/tokens/create, read and update): a service per test
 * file, requests that check no answer carries a password, and the tokens table to show that a
 * refused request changed nothing.
 */
import { randomBytes } from 'node:crypto';
import { svc, useService, type Reply, type RequestOptions } from './service.js';
import { createToken, createUser } from './users.js';

export { svc, useService };
export { ISO as ISO_UTC_MS } from './contracts.js';

/** Every access token a test sent, to check none of them ends up in a log line. */
export const secrets: string[] = [];
export const newAccessToken = (label = 'tok') => {
  const value = `${label}-${randomBytes(12).toString('hex')}`;
  secrets.push(value);
  return value;
};

/** Keys that must never appear anywhere in a response body (SPEC §2). */
export function forbiddenKeys(value: unknown, path = '$'): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => forbiddenKeys(v, `${path}[${i}]`));
  if (value && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => [
      ...(k === 'password' || k === 'rememberToken' ? [`${path}.${k}`] : []),
      ...forbiddenKeys(v, `${path}.${k}`),
    ]);
  }
  return [];
}

/** svc.request, checking that no answer carries a `password` or `rememberToken` key. */
export async function call(method: string, path: string, options?: RequestOptions): Promise<Reply> {
  const res = await svc.request(method, path, options);
  expect(forbiddenKeys(res.body)).toEqual([]);
  expect(res.text).not.toMatch(/"(password|rememberToken)"\s*:/);
  return res;
}

/** A create's default answer (SPEC §4): 201, Location, the new id as a bare JSON number. */
/** A PUT that created its record on a reserved id: 201, Location, and `1` as every update answers. */
export function expectCreatedByPut(res: Reply, id: number): void {
  expect(res.status).toBe(201);
  expect(res.body).toBe(1);
  expect(res.headers.get('location')).toBe(`/token/${id}`);
}

export function expectCreated(res: Reply, collection: string): number {
  expect(res.status).toBe(201);
  expect(typeof res.body).toBe('number');
  expect(Number.isSafeInteger(res.body) && res.body > 0).toBe(true);
  expect(res.text).toBe(String(res.body));
  expect(res.headers.get('location')).toBe(`${collection}${res.body}`);
  return res.body;
}

/** A write's default answer (SPEC §4): 200 and `1`, the number of records it matched. */
export function expectOne(res: Reply): void {
  expect({ status: res.status, text: res.text }).toEqual({ status: 200, text: '1' });
}

/** A user made through `call`, which checks its reply carries no password. */
export async function makeUser(lastName = 'Holder'): Promise<number> {
  return createUser({ request: call }, { firstName: 'Token', lastName });
}

/** The stored token as GET /token/{id} answers it. */
export async function getToken(id: number): Promise<any> {
  const res = await call('GET', `/token/${id}`);
  expect(res.status).toBe(200);
  return res.body;
}

/** Creates a token (default answer: its id) and reads it back. */
export async function makeToken(body: Record<string, unknown> = {}, options: RequestOptions = {}): Promise<any> {
  const userID = (body.userID as number | undefined) ?? (await makeUser());
  const { id } = await createToken({ request: call }, userID, { accessToken: newAccessToken(), ...body }, options);
  return getToken(id);
}

/** Reserves a token id (POST /apply/token/id/ answers it as a bare number). */
export async function applyTokenId(options: RequestOptions = {}): Promise<number> {
  const res = await call('POST', '/apply/token/id/', options);
  expect(res.status).toBe(201);
  expect(typeof res.body).toBe('number');
  return res.body;
}

/** A token with the given scope, and its owner. */
export async function callerWith(scope: string): Promise<{ token: string; userID: number; id: number }> {
  const created = await makeToken({ scope });
  return { token: created.accessToken, userID: created.userID, id: created.id };
}

/** The whole tokens table, to show that a failing request changed nothing. */
export const tokensTable = () => svc.sql('select * from tokens order by id');
export const reservations = () => svc.sql("select id from id_reservations where resource = 'token' order by id");

/** Runs a request that must fail and checks the tokens table is the same afterwards. */
export async function failsUnchanged(method: string, path: string, options: RequestOptions, status: number): Promise<Reply> {
  const before = await tokensTable();
  const res = await call(method, path, options);
  expect(res.status).toBe(status);
  expect(res.body).toMatchObject({ code: status, requestId: expect.any(String), message: expect.any(String) });
  expect(await tokensTable()).toEqual(before);
  return res;
}

export const q = (value: unknown) => encodeURIComponent(JSON.stringify(value));
