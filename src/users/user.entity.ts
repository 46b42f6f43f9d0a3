import { Entity, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { bigintNumber, TIMESTAMP } from '../db/columns.js';

@Entity({ tableName: 'users' })
export class User {
  @PrimaryKey({ type: bigintNumber(), autoincrement: true })
  id!: number;

  @Property({ type: bigintNumber() })
  ref: number = 0;

  @Property({ type: 'string', length: 255, nullable: true })
  outKey: string | null = null;

  @Property({ type: 'string', length: 255 })
  firstName!: string;

  @Property({ type: 'string', length: 255 })
  lastName!: string;

  @Property({ type: 'string', length: 2048, nullable: true })
  avatarUrl: string | null = null;

  @Property({ type: 'string', length: 2048, nullable: true })
  photoUrl: string | null = null;

  // `password` and `rememberToken` live in the table for the applications that own them, but no
  // API reads or writes them: lazy keeps them out of every SELECT, hidden out of any serialization.
  @Property({ type: 'string', length: 255, lazy: true, hidden: true })
  password: string = '';

  @Property({ type: 'string', length: 100, nullable: true, lazy: true, hidden: true })
  rememberToken: string | null = null;

  @Property({ type: 'integer' })
  status: number = 0;

  @Property({ type: 'datetime', columnType: TIMESTAMP })
  createdAt: Date = new Date();

  @Property({ type: 'datetime', columnType: TIMESTAMP })
  updatedAt: Date = new Date();

  @Property({ type: 'datetime', columnType: TIMESTAMP, nullable: true })
  deletedAt: Date | null = null;
}
