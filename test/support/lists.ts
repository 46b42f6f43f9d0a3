/**
 * The helpers of the REST list tests (test/list/pages and filter.test.ts): the list language
 * (filter, orderBy, page, pageSize) over GET /user/ and GET /token/. Every list is scoped to a
 * fixture group by its firstName prefix, so the bootstrap user and the users other tests create
 * do not disturb the expected results.
 */
import { randomBytes } from 'node:crypto';
import { svc, useService as useSharedService, type Reply, type TestService } from './service.js';
export { sortedUrl, linksOf, expectedLinks } from './link-header.js';

export { svc };
export const replies: Reply[] = [];

export async function call(method: string, path: string, options?: Parameters<TestService['request']>[2]): Promise<Reply> {
  const reply = await svc.request(method, path, options);
  replies.push(reply);
  return reply;
}

/** GET a list with the given query parameters (each value is URL-encoded; objects as JSON). */
export function list(resource: 'user' | 'token', params: Record<string, unknown> = {}): Promise<Reply> {
  const query = queryOf(params);
  return call('GET', `/${resource}/${query ? `?${query}` : ''}`);
}

export const G = `g${randomBytes(4).toString('hex')}`;
/** Restricts a filter to the fixture group (sibling keys are and-ed). */
export const inGroup = (filter: Record<string, unknown> = {}) => ({ firstName: { like: `${G}-%` }, ...filter });

export interface Fixture {
  name: string;
  lastName: string;
  status: number;
  ref: number;
  outKey: string | null;
  createdAt: string;
}
export const FIXTURES: Fixture[] = [
  { name: 'anna', lastName: 'Smith', status: 1, ref: 10, outKey: 'k1', createdAt: '2020-01-01T00:00:00.000Z' },
  { name: 'bob', lastName: 'smithers', status: 2, ref: 20, outKey: null, createdAt: '2020-01-02T00:00:00.000Z' },
  { name: 'carl', lastName: 'Jones', status: 3, ref: 30, outKey: 'k3', createdAt: '2020-01-03T00:00:00.000Z' },
  { name: 'dana', lastName: 'SMALL', status: 1, ref: 20, outKey: null, createdAt: '2020-01-04T00:00:00.000Z' },
  { name: 'eve', lastName: 'Brown', status: 0, ref: -5, outKey: 'k5', createdAt: '2020-01-05T00:00:00.000Z' },
];
/** Fixture name → user id. */
export const id: Record<string, number> = {};
export const ids = (...names: string[]) => names.map((n) => id[n]);
/** The ids of a list answer (a bare JSON array of records). */
export function dataIds(res: Reply): number[] {
  expect(Array.isArray(res.body)).toBe(true);
  return res.body.map((r: { id: number }) => r.id);
}

/** X-Total-Count of a list answer, as a number (it must be there, a decimal integer). */
export function total(res: Reply): number {
  const header = res.headers.get('x-total-count');
  expect(header).toMatch(/^\d+$/);
  return Number(header);
}

/** The query string list() sends for these parameters. */
export function queryOf(params: Record<string, unknown>): string {
  return Object.entries(params)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v))}`)
    .join('&');
}

export async function liveUserCount(): Promise<number> {
  const [{ count }] = await svc.sql<{ count: string }>('select count(*) from users where deleted_at is null');
  return Number(count);
}

export function expectBadRequest(res: Reply, field: string, message?: string | RegExp): void {
  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({ code: 400, error: 'BAD_REQUEST', message: expect.any(String), requestId: expect.any(String) });
  expect(res.body.requestId).toBe(res.headers.get('x-request-id'));
  expect(res.body.details).toEqual(
    expect.arrayContaining([
      {
        field,
        message: message === undefined ? expect.any(String) : typeof message === 'string' ? expect.stringContaining(message) : expect.stringMatching(message),
      },
    ]),
  );
}

/** Starts this file's service before its tests, with the group of users the list tests read, and stops it after them. */
export function useService(): void {
  useSharedService();
  beforeAll(async () => {
    for (const f of FIXTURES) {
      const res = await call('POST', '/user/', {
        body: { firstName: `${G}-${f.name}`, lastName: f.lastName, status: f.status, ref: f.ref, outKey: f.outKey },
      });
      if (res.status !== 201) throw new Error(`fixture: ${res.text}`);
      id[f.name] = res.body;
      // createdAt is set by the service; pin it to a known instant so date filters and orders are exact.
      await svc.sql('update users set created_at = ? where id = ?', [f.createdAt, res.body]);
    }
    // A deleted member of the group: never listed, never counted.
    const gone = await call('POST', '/user/', { body: { firstName: `${G}-zed`, lastName: 'Smith', status: 1, ref: 10 } });
    id.zed = gone.body;
    const destroyed = await call('DELETE', `/user/${gone.body}`);
    expect([destroyed.status, destroyed.body]).toEqual([200, 1]);
  });
}

/** What every reply of a list test file must show: no 500, no password/rememberToken keys, no SQL or stack in error bodies. */
export function expectCleanReplies(): void {
  expect(replies.length).toBeGreaterThan(100);
  for (const reply of replies) {
    expect(reply.status).toBeLessThan(500);
    expect(reply.text).not.toMatch(/"(password|rememberToken)"\s*:/);
    if (reply.status >= 400) {
      expect(reply.text).not.toMatch(/\bselect\b|\binsert\s+into\b|\bdelete\s+from\b|\bupdate\s+"?\w+"?\s+set\b/i);
      expect(reply.text).not.toMatch(/\n\s+at |\.ts:\d+|node_modules/);
    }
  }
}
