import { BEARER_VALUE_PATTERN } from '../auth/bearer.js';
import { field } from '../resource/field.js';
import { defineResource, type RecordOf, type WritableOf } from '../resource/resource.js';

/** An accessToken travels in an Authorization header: anything else could never be used. */
const SENDABLE_AS_BEARER = { test: BEARER_VALUE_PATTERN, message: 'must be visible ASCII characters without spaces (it is sent in an Authorization header)' };

/**
 * A token (the seed's Token record). Its secrets are stored as keyed hashes and ciphertexts
 * (src/db/keyring.ts); `client` and `version` are set by the service.
 */
export const tokens = defineResource({
  name: 'token',
  label: 'token',
  table: 'tokens',
  counted: true,
  type: 'Token',
  inputDescription: 'Every writable field of a token; absent optional fields take their defaults.',
  fields: {
    id: field.id(),
    userID: field.reference({ required: true }),
    accessToken: field.secret(
      1024,
      { hmac: 'access_token_hmac', cipher: 'access_token_cipher' },
      { required: true, nonEmpty: true, pattern: SENDABLE_AS_BEARER },
    ),
    refreshToken: field.secret(1024, { hmac: 'refresh_token_hmac', cipher: 'refresh_token_cipher' }),
    scope: field.string(255),
    // Credentials of an authorization flow: read back, but never shown in the audit log.
    code: field.string(1024, { credential: true }),
    codeChallenge: field.string(1024, { nullable: true, credential: true }),
    tokenType: field.string(255),
    expireAt: field.date({ nullable: true }),
    client: field.string(255, { origin: 'service' }),
    version: field.revision({ description: 'The record revision: "1" on create, incremented on every change.', filterDescription: 'Compared as a number.' }),
    createdAt: field.createdAt(),
    updatedAt: field.updatedAt(),
    deletedAt: field.deletedAt(),
  },
});

export type TokenRecord = RecordOf<typeof tokens>;
export type TokenValues = WritableOf<typeof tokens>;
