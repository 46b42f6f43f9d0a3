import { Migration } from '@mikro-orm/migrations';

/**
 * A link's `right` is the original service's 64-bit RBAC bit mask (docs/rest.md): any safe integer,
 * stored as `bigint`, bounded to the safe integers. Widening integer → bigint keeps every value.
 */
export class Migration20261123100000_right_bigint extends Migration {
  override name = 'Migration20261123100000_right_bigint';

  override async up(): Promise<void> {
    this.addSql(`alter table user_applications alter column "right" type bigint`);
    // The API speaks JSON numbers: a value past 2^53 (written by hand, or carried over from the
    // original's unsigned masks) could not be answered exactly, so the column refuses it.
    this.addSql(`alter table user_applications add constraint user_applications_right_safe check ("right" between -9007199254740991 and 9007199254740991)`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table user_applications drop constraint user_applications_right_safe`);
    this.addSql(`alter table user_applications alter column "right" type integer`);
  }
}
