import { wireDate, wireInt } from '../db/reads.js';
import { isoDate } from '../shared/present.js';
import type { User } from './user.entity.js';

/** The user on the wire. `password` and `rememberToken` are never part of it. */
export interface UserRecord {
  id: number;
  ref: number;
  outKey: string | null;
  firstName: string;
  lastName: string;
  avatarUrl: string | null;
  photoUrl: string | null;
  status: number;
  createdAt: string | null;
  updatedAt: string | null;
}

/** The columns a read selects (alias `t`): never `password` or `remember_token`. */
export const USER_COLUMNS = 't.id, t.ref, t.out_key, t.first_name, t.last_name, t.avatar_url, t.photo_url, t.status, t.created_at, t.updated_at';

interface UserRow {
  id: string;
  ref: string;
  out_key: string | null;
  first_name: string;
  last_name: string;
  avatar_url: string | null;
  photo_url: string | null;
  status: number;
  created_at: string;
  updated_at: string;
}

/** A row of the read path (USER_COLUMNS). */
export const userFromRow = (row: UserRow): UserRecord => ({
  id: wireInt(row.id),
  ref: wireInt(row.ref),
  outKey: row.out_key,
  firstName: row.first_name,
  lastName: row.last_name,
  avatarUrl: row.avatar_url,
  photoUrl: row.photo_url,
  status: row.status,
  createdAt: wireDate(row.created_at),
  updatedAt: wireDate(row.updated_at),
});

/** An entity of the write path. */
export function presentUser(user: User): UserRecord {
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
