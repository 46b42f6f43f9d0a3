import { AppError } from '../errors.js';

/** RFC 6750's token characters, loosely: visible ASCII, no spaces (what a header can carry). */
const BEARER_VALUE = '[\\x21-\\x7e]+';
const BEARER_HEADER = new RegExp(`^Bearer +(${BEARER_VALUE}) *$`, 'i');

/** A value that can be sent as `Authorization: Bearer <value>`, as every accessToken must be. */
export const BEARER_VALUE_PATTERN = new RegExp(`^${BEARER_VALUE}$`);

/** The bearer value of an Authorization header, or a 401 saying what is wrong with the header. */
export function bearerOf(header: string | undefined): string {
  if (header === undefined || header.trim() === '') {
    throw AppError.unauthorized('an Authorization: Bearer <accessToken> header is required', 'missing');
  }
  const m = BEARER_HEADER.exec(header);
  if (!m) throw AppError.unauthorized('the Authorization header must be "Bearer <accessToken>"', 'invalid');
  return m[1];
}
