/**
 * The helpers of the GraphQL operation tests (test/users, tokens, applications and links' graphql.test.ts,
 * test/graphql/errors.test.ts): every query and mutation of schema.graphql through real GraphQL over
 * HTTP, its errors (extensions.code and extensions.field), the database after failing mutations, and
 * parity with the REST paths (what one protocol writes, the other reads back identically).
 */
import { selectionOf } from './contracts.js';
import { svc, useService, type Reply, type TestService } from './service.js';

export { svc, useService };
export { ISO } from './contracts.js';
export const ABSENT = '987654321';
/** Every field of each record (test/support/contracts.ts). */
export const USER = selectionOf('user');
export const TOKEN = selectionOf('token');
export const NAMED = selectionOf('application');
export const LINK = selectionOf('applicationLink');

import { uniq as fresh } from './names.js';
export { fresh };

export type Json = Record<string, any>;

/** Nothing in an answer may show SQL, a driver message or a stack. */
export function expectNoLeak(reply: Reply): void {
  expect(reply.text).not.toMatch(/\b(select\s.+\sfrom|insert into|update \w+ set|delete from|returning)\b/i);
  expect(reply.text).not.toMatch(/duplicate key|violates|constraint|syntax error at|relation "/i);
  expect(reply.text).not.toMatch(/stacktrace|\n\s+at |\bat \S+ \(|\.[jt]s:\d+|node_modules/i);
}

/** Runs an operation that must succeed; returns its data. */
export async function run(query: string, variables?: Json, options?: Parameters<TestService['graphql']>[2]): Promise<Json> {
  const reply = await svc.graphql(query, variables, options);
  expect(reply.body?.errors ?? []).toEqual([]);
  expect(reply.status).toBe(200);
  return reply.body.data;
}

/** Runs an operation that must fail with exactly one error of `code` (naming `field`, if given). */
export async function fail(query: string, variables: Json | undefined, code: string, field?: string): Promise<Json> {
  const reply = await svc.graphql(query, variables);
  expect(reply.status).toBe(200);
  expect(reply.body.errors).toHaveLength(1);
  const [error] = reply.body.errors;
  expect(error.extensions.code).toBe(code);
  if (field !== undefined) expect(error.extensions.field).toBe(field);
  expect(typeof error.message).toBe('string');
  expectNoLeak(reply);
  return error;
}

/** Runs `work` (a failing mutation) and checks that no table changed. */
export async function changesNothing(work: () => Promise<unknown>): Promise<void> {
  const before = await svc.snapshot({ sequences: false });
  await work();
  expect(await svc.snapshot({ sequences: false })).toEqual(before);
}

// REST forms of GraphQL records: ids are numbers there, strings (ID) here.
export const restUser = (u: Json) => ({ ...u, id: Number(u.id) });
export const restToken = (t: Json) => ({ ...t, id: Number(t.id), userID: Number(t.userID) });
export const restNamed = (r: Json) => ({ ...r, id: Number(r.id) });

/** Creates over REST (201, the new id as a bare number, its Location); returns the record REST reads back. */
export async function restPost(path: string, body: unknown): Promise<Json> {
  const res = await svc.request('POST', path, { body });
  expect(res.status).toBe(201);
  expect(res.body).toEqual(expect.any(Number));
  expect(res.headers.get('location')).toBe(`${path}${res.body}`);
  const read = await svc.request('GET', `${path}${res.body}`);
  expect(read.status).toBe(200);
  expect(read.body.id).toBe(res.body);
  return read.body;
}

export const CREATE_USER = `mutation($input: UserInput!) { createUser(input: $input) { ${USER} } }`;
export const GET_USER = `query($id: ID!) { user(id: $id) { ${USER} } }`;
export const CREATE_TOKEN = `mutation($input: TokenInput!) { createToken(input: $input) { ${TOKEN} } }`;
export const GET_TOKEN = `query($id: ID!) { token(id: $id) { ${TOKEN} } }`;

export async function gqlUser(input: Json = {}): Promise<Json> {
  return (await run(CREATE_USER, { input: { firstName: 'Graph', lastName: fresh('user'), ...input } })).createUser;
}
export async function gqlApp(name = fresh('app')): Promise<Json> {
  return (await run(`mutation($n: String!) { createApplication(input: {name: $n}) { ${NAMED} } }`, { n: name })).createApplication;
}
export async function gqlRole(name = fresh('role')): Promise<Json> {
  return (await run(`mutation($n: String!) { createRole(input: {name: $n}) { ${NAMED} } }`, { n: name })).createRole;
}

// ---------------------------------------------------------------------------------------------
