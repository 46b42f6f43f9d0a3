import { BigIntType, PrimaryKeyProp } from '@mikro-orm/core';
import { Entity, ManyToOne, Property } from '@mikro-orm/decorators/legacy';
import { Application } from '../applications/application.entity.js';
import { Role } from '../roles/role.entity.js';
import { User } from '../users/user.entity.js';
import { TIMESTAMP } from '../db/columns.js';

/**
 * user → application link with its numeric `right`. Unlinking marks the row deleted (the API never
 * erases); linking again revives it with `right` 0.
 */
@Entity({ tableName: 'user_applications' })
export class UserApplication {
  [PrimaryKeyProp]?: ['user', 'application'];

  @ManyToOne(() => User, { primary: true, mapToPk: true, fieldName: 'user_id' })
  user!: number;

  @ManyToOne(() => Application, { primary: true, fieldName: 'application_id' })
  application!: Application;

  /** A bigint column holding any safe integer; read and written as a JS number. */
  @Property({ type: new BigIntType('number') })
  right: number = 0;

  @Property({ type: 'datetime', columnType: TIMESTAMP })
  createdAt: Date = new Date();

  @Property({ type: 'datetime', columnType: TIMESTAMP })
  updatedAt: Date = new Date();

  @Property({ type: 'datetime', columnType: TIMESTAMP, nullable: true })
  deletedAt: Date | null = null;
}

/** user → role link; same life cycle as UserApplication, without a right. */
@Entity({ tableName: 'user_roles' })
export class UserRole {
  [PrimaryKeyProp]?: ['user', 'role'];

  @ManyToOne(() => User, { primary: true, mapToPk: true, fieldName: 'user_id' })
  user!: number;

  @ManyToOne(() => Role, { primary: true, fieldName: 'role_id' })
  role!: Role;

  @Property({ type: 'datetime', columnType: TIMESTAMP })
  createdAt: Date = new Date();

  @Property({ type: 'datetime', columnType: TIMESTAMP })
  updatedAt: Date = new Date();

  @Property({ type: 'datetime', columnType: TIMESTAMP, nullable: true })
  deletedAt: Date | null = null;
}
