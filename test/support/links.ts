/**
 * The helpers of the REST link tests (test/links/applications, roles and access.test.ts): records
 * to link, the link rows as the database holds them, and the Link header of a list.
 */
import { svc, useService } from './service.js';
export { sortedUrl, linksOf, expectedLinks } from './link-header.js';

export { svc, useService };
import { ISO } from './contracts.js';
export { ISO };
export const UNKNOWN_ID = 987654321;

import { uniq as fresh } from './names.js';
import { createUser } from './users.js';
export { fresh };

/** POST a record; the answer is 201 + Location and the new id as a bare number. */
export async function create(path: string, body: Record<string, unknown>): Promise<number> {
  const res = await svc.request('POST', `${path}/`, { body });
  expect(res.status).toBe(201);
  expect(typeof res.body).toBe('number');
  expect(res.headers.get('location')).toBe(`${path}/${res.body}`);
  return res.body;
}

/** POST a record with Prefer: return=representation; answers the created record. */
export async function createRecord<T extends { id: number }>(path: string, body: Record<string, unknown>): Promise<T> {
  const res = await svc.request('POST', `${path}/`, { body, headers: { Prefer: 'return=representation' } });
  expect(res.status).toBe(201);
  expect(res.headers.get('preference-applied')).toBe('return=representation');
  expect(res.headers.get('location')).toBe(`${path}/${res.body.id}`);
  return res.body;
}

export const newUser = (): Promise<number> => createUser(svc, { firstName: 'Linked', lastName: fresh('user') });
export const newApp = (name = fresh('app')): Promise<number> => create('/application', { name });
export const newRole = (name = fresh('role')): Promise<number> => create('/role', { name });

/** DELETE …/{id}: 200 with the bare count 1. */
export async function deleted(path: string, id: number): Promise<number> {
  const res = await svc.request('DELETE', `${path}/${id}`);
  expect(res.status).toBe(200);
  expect(res.body).toBe(1);
  return id;
}

export interface AppLinkRow {
  app: number;
  right: number;
  deleted: boolean;
}

/** Every user_applications row of a user, deleted or not (right is a bigint: read as text, exactly). */
export const appRows = async (userId: number): Promise<AppLinkRow[]> =>
  (
    await svc.sql<{ app: number; right: string; deleted: boolean }>(
      `select application_id::int as app, "right"::text as right, deleted_at is not null as deleted
       from user_applications where user_id = ? order by application_id`,
      [userId],
    )
  ).map((row) => ({ ...row, right: Number(row.right) }));

/** Every user_roles row of a user, deleted or not. */
export const roleRows = (userId: number) =>
  svc.sql<{ role: number; deleted: boolean }>(
    `select role_id::int as role, deleted_at is not null as deleted from user_roles where user_id = ? order by role_id`,
    [userId],
  );

export const live = (app: number, right = 0): AppLinkRow => ({ app, right, deleted: false });
export const gone = (app: number, right = 0): AppLinkRow => ({ app, right, deleted: true });

export const link = (userId: number, ids: unknown, kind = 'application') => svc.request('POST', `/user/${userId}/${kind}/`, { body: ids });
export const unlink = (userId: number, ids: unknown, kind = 'application') => svc.request('DELETE', `/user/${userId}/${kind}/`, { body: ids });
export const setRight = (userId: number, appId: number, body: unknown) => svc.request('PUT', `/user/${userId}/application/${appId}`, { body });

/** Ids in a message ("no live application with id 5, 9"). */
export const idsIn = (message: string) => (message.match(/\d+/g) ?? []).map(Number).sort((a, b) => a - b);

/** Bodies that are not a JSON array of at most 1000 positive integers. */
export const BAD_BODIES: Array<[string, unknown]> = [
  ['an object', { ids: [1] }],
  ['a string', '1'],
  ['a number', 1],
  ['null', null],
  ['zero', [0]],
  ['a negative id', [-3]],
  ['a fraction', [1.5]],
  ['a string id', ['1']],
  ['a null id', [null]],
  ['a boolean id', [true]],
  ['a nested array', [[1]]],
  ['an id past the safe integers', [2 ** 53]],
  ['1001 ids', Array.from({ length: 1001 }, (_, i) => i + 1)],
];
