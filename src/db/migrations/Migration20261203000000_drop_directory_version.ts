import { Migration } from '@mikro-orm/migrations';
import { DIRECTORY_TABLES } from './Migration20261202000000_directory_version.js';

/**
 * The directory version goes: every write transaction to the directory moved one row at its
 * commit, so concurrent writes queued on that row's lock for the length of each other's commit
 * (about 1,700 updates a second at most on the benchmark machine, 6,600 without it). The read
 * cache now keys answers by the database snapshot each request reads with its token
 * (src/read-cache/store.ts), which every commit moves and no write has to maintain.
 */
export class Migration20261203000000_drop_directory_version extends Migration {
  override name = 'Migration20261203000000_drop_directory_version';

  override async up(): Promise<void> {
    for (const table of DIRECTORY_TABLES) {
      this.addSql(`drop trigger ${table}_directory_version on ${table}`);
      this.addSql(`drop trigger ${table}_directory_version_truncate on ${table}`);
    }
    this.addSql('drop function bump_directory_version()');
    this.addSql('drop table directory_version');
  }

  override async down(): Promise<void> {
    throw new Error('Migration20261203000000_drop_directory_version cannot be reverted; run Migration20261202000000_directory_version up again instead');
  }
}
