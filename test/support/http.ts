/**
 * The helpers of the HTTP tests shared by every path (test/http/requests and database.test.ts): a
 * service per test file, every reply kept to check what must hold for all of them, the JSON error body.
 */
import { svc, useService, type RequestOptions, type Reply } from './service.js';
import { createUser } from './users.js';

export { svc, useService };
/** Every reply of this file, to check properties that must hold for all of them. */
export const replies: Reply[] = [];

export async function call(method: string, path: string, options?: RequestOptions): Promise<Reply> {
  const reply = await svc.request(method, path, options);
  replies.push(reply);
  return reply;
}

export async function userCount(): Promise<number> {
  const [{ count }] = await svc.sql<{ count: string }>('select count(*) from users');
  return Number(count);
}

export function expectError(res: Reply, status: number, error: string): void {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.body).toEqual({
    code: status,
    error,
    message: expect.any(String),
    requestId: res.headers.get('x-request-id'),
    ...(res.body?.details ? { details: expect.any(Array) } : {}),
  });
  expect(res.body.message.length).toBeGreaterThan(0);
}

/** A user made through `call`, so that its reply is among this file's. */
export const newUser = async () => ({ id: await createUser({ request: call }, { firstName: 'Http', lastName: 'Test' }) });
