import { Migration } from '@mikro-orm/migrations';

/**
 * A link's `right` is the original service's 64-bit RBAC bit mask (SPEC §3–4): any safe integer,
 * stored as `bigint`. Widening integer → bigint keeps every value.
 */
export class Migration20261123100000_right_bigint extends Migration {
  override name = 'Migration20261123100000_right_bigint';

  override async up(): Promise<void> {
    this.addSql(`alter table user_applications alter column "right" type bigint`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table user_applications alter column "right" type integer`);
  }
}
