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

  /**
   * The secrets as stored (SPEC §9, src/tokens/secrets.ts): HMAC-SHA-256 of each under the current
   * key (the unique index of live tokens and the bearer lookup use `accessTokenHmac`), and its
   * AES-256-GCM ciphertext. Set by the token service from `accessToken` and `refreshToken`.
   */
  @Property({ type: 'blob', hidden: true })
  accessTokenHmac!: Buffer;

  @Property({ type: 'blob', hidden: true })
  accessTokenCipher!: Buffer;

  @Property({ type: 'blob', hidden: true })
  refreshTokenHmac!: Buffer;

  @Property({ type: 'blob', hidden: true })
  refreshTokenCipher!: Buffer;

  /**
   * The plain values, in memory only (not mapped: MikroORM never writes them). The token service
   * fills them when it loads a token for a write and seals them into the four columns above.
   */
  accessToken!: string;
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
