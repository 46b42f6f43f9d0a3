import { randomBytes } from 'node:crypto';

/**
 * A name no other test uses, in this file or in any other running beside it on the same database
 * (`prefix-` and 12 random hex digits): names are unique columns, and tests never clean up.
 */
export const uniq = (prefix: string): string => `${prefix}-${randomBytes(6).toString('hex')}`;
