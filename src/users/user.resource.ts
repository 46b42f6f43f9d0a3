import { field } from '../resource/field.js';
import { defineBody, defineResource, type RecordOf, type WritableOf } from '../resource/resource.js';

/** A user (the seed's User record). `password` and `rememberToken` belong to the applications that own them. */
export const users = defineResource({
  name: 'user',
  label: 'user',
  table: 'users',
  counted: true,
  type: 'User',
  inputDescription: 'Every writable field of a user; absent optional fields take their defaults.',
  fields: {
    id: field.id(),
    ref: field.safeInt(),
    outKey: field.string(255, { nullable: true }),
    firstName: field.string(255, { required: true }),
    lastName: field.string(255, { required: true }),
    avatarUrl: field.string(2048, { nullable: true }),
    photoUrl: field.string(2048, { nullable: true }),
    password: field.hidden('string', { max: 255 }),
    rememberToken: field.hidden('string', { max: 100, nullable: true }),
    status: field.int32(),
    createdAt: field.createdAt(),
    updatedAt: field.updatedAt(),
    deletedAt: field.deletedAt(),
  },
  // A deleted user takes its tokens with it: they stop authenticating and listing, each an audit
  // event of its own, as DELETE /token/{id} writes it. (Its links go too: the relations of src/links/.)
  cascade: [{ table: 'tokens', column: 'user_id', event: { resource: 'token', action: 'delete' } }],
});

export type UserRecord = RecordOf<typeof users>;
export type UserValues = WritableOf<typeof users>;

/** The body of the status setter (REST's /user/{id}/status/, GraphQL's updateUserStatus): `{"status": n}`. */
export const USER_STATUS_BODY = defineBody({ status: field.int32({ required: true }) });
