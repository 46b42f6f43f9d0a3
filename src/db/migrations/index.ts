import { Migration20261121000000_initial } from './Migration20261121000000_initial.js';

/** Every migration, in order. Listed explicitly so that the same list runs from src/ and dist/. */
export const migrations = [{ name: 'Migration20261121000000_initial', class: Migration20261121000000_initial }];
