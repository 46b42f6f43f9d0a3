import { isoDate } from '../shared/present.js';
import type { User } from './user.entity.js';

/** The user on the wire. `password` and `rememberToken` are never part of it. */
export function presentUser(user: User) {
  return {
    id: user.id,
    ref: user.ref,
    outKey: user.outKey,
    firstName: user.firstName,
    lastName: user.lastName,
    avatarUrl: user.avatarUrl,
    photoUrl: user.photoUrl,
    status: user.status,
    createdAt: isoDate(user.createdAt),
    updatedAt: isoDate(user.updatedAt),
  };
}
