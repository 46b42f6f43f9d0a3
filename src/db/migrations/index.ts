import { Migration20261121000000_initial } from './Migration20261121000000_initial.js';
import { Migration20261123000000_live_counts } from './Migration20261123000000_live_counts.js';
import { Migration20261123100000_right_bigint } from './Migration20261123100000_right_bigint.js';
import { Migration20261123110000_audit_events } from './Migration20261123110000_audit_events.js';

/** Every migration, in order. Listed explicitly so that the same list runs from src/ and dist/. */
export const migrations = [
  { name: 'Migration20261121000000_initial', class: Migration20261121000000_initial },
  { name: 'Migration20261123000000_live_counts', class: Migration20261123000000_live_counts },
  { name: 'Migration20261123100000_right_bigint', class: Migration20261123100000_right_bigint },
  { name: 'Migration20261123110000_audit_events', class: Migration20261123110000_audit_events },
];
