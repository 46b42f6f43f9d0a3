import { Migration20261121000000_initial } from './Migration20261121000000_initial.js';
import { Migration20261123000000_live_counts } from './Migration20261123000000_live_counts.js';
import { Migration20261123100000_right_bigint } from './Migration20261123100000_right_bigint.js';
import { Migration20261123110000_audit_events } from './Migration20261123110000_audit_events.js';
import { Migration20261201000000_token_secret_columns } from './Migration20261201000000_token_secret_columns.js';
import { Migration20261201000100_drop_plain_tokens } from './Migration20261201000100_drop_plain_tokens.js';
import { Migration20261202000000_directory_version } from './Migration20261202000000_directory_version.js';
import { Migration20261203000000_drop_directory_version } from './Migration20261203000000_drop_directory_version.js';
import { Migration20261204000000_live_counts_on_liveness_changes } from './Migration20261204000000_live_counts_on_liveness_changes.js';
import { Migration20261205000000_live_id_indexes } from './Migration20261205000000_live_id_indexes.js';

/** The migration before which the service converts plain tokens with its key (src/tokens/secret-rows.ts). */
export const DROP_PLAIN_TOKENS = 'Migration20261201000100_drop_plain_tokens';

/** Every migration, in order. Listed explicitly so that the same list runs from src/ and dist/. */
export const migrations = [
  { name: 'Migration20261121000000_initial', class: Migration20261121000000_initial },
  { name: 'Migration20261123000000_live_counts', class: Migration20261123000000_live_counts },
  { name: 'Migration20261123100000_right_bigint', class: Migration20261123100000_right_bigint },
  { name: 'Migration20261123110000_audit_events', class: Migration20261123110000_audit_events },
  { name: 'Migration20261201000000_token_secret_columns', class: Migration20261201000000_token_secret_columns },
  { name: 'Migration20261201000100_drop_plain_tokens', class: Migration20261201000100_drop_plain_tokens },
  { name: 'Migration20261202000000_directory_version', class: Migration20261202000000_directory_version },
  { name: 'Migration20261203000000_drop_directory_version', class: Migration20261203000000_drop_directory_version },
  { name: 'Migration20261204000000_live_counts_on_liveness_changes', class: Migration20261204000000_live_counts_on_liveness_changes },
  { name: 'Migration20261205000000_live_id_indexes', class: Migration20261205000000_live_id_indexes },
];
