import { Entity, PrimaryKey, Property } from '@mikro-orm/decorators/legacy';
import { bigintNumber, TIMESTAMP } from '../db/columns.js';

@Entity({ tableName: 'applications' })
export class Application {
  @PrimaryKey({ type: bigintNumber(), autoincrement: true })
  id!: number;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'datetime', columnType: TIMESTAMP })
  createdAt: Date = new Date();

  @Property({ type: 'datetime', columnType: TIMESTAMP })
  updatedAt: Date = new Date();

  @Property({ type: 'datetime', columnType: TIMESTAMP, nullable: true })
  deletedAt: Date | null = null;
}
