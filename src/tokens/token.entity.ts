import { Entity, ManyToOne, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { bigintNumber, TIMESTAMP } from '../db/columns.js';
import { User } from '../users/user.entity.js';

@Entity({ tableName: 'tokens' })
export class Token {
  @PrimaryKey({ type: bigintNumber(), autoincrement: true })
  id!: number;

  /** The owning user's id (`userID` on the wire). */
  @ManyToOne(() => User, { mapToPk: true, fieldName: 'user_id' })
  user!: number;

  @Property({ type: 'string', length: 1024 })
  accessToken!: string;

  /**
   * sha256 of `accessToken`, computed by PostgreSQL (a generated column). The unique index of live
   * tokens and the bearer lookup use it: a fixed 32-byte key, whatever the token's length.
   */
  @Property({ type: 'blob', persist: false, hidden: true, lazy: true })
  accessTokenHash?: Buffer;

  @Property({ type: 'string', length: 1024 })
  refreshToken: string = '';

  @Property({ type: 'string', length: 255 })
  scope: string = '';

  @Property({ type: 'string', length: 1024 })
  code: string = '';

  @Property({ type: 'string', length: 1024, nullable: true })
  codeChallenge: string | null = null;

  @Property({ type: 'string', length: 255 })
  tokenType: string = '';

  @Property({ type: 'datetime', columnType: TIMESTAMP, nullable: true })
  expireAt: Date | null = null;

  @Property({ type: 'string', length: 255 })
  client: string = '';

  /** The record's revision, 1 on create, +1 on every change (`version` on the wire, as a string). */
  @Property({ type: 'integer' })
  version: number = 1;

  @Property({ type: 'datetime', columnType: TIMESTAMP })
  createdAt: Date = new Date();

  @Property({ type: 'datetime', columnType: TIMESTAMP })
  updatedAt: Date = new Date();

  @Property({ type: 'datetime', columnType: TIMESTAMP, nullable: true })
  deletedAt: Date | null = null;
}
