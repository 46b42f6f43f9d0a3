import { randomUUID } from 'node:crypto';

const CALLER_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** A request's id: the caller's X-Request-Id when it is a sane token, else a new UUID. */
export function requestIdFrom(given: string | undefined): string {
  return given && CALLER_REQUEST_ID.test(given) ? given : randomUUID();
}
