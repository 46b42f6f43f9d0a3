import { KINDS, describeNamedResource, useService } from '../support/named-resources.js';

/**
 * REST /role/: create, read, lists, PUT, PATCH, DELETE and permissions. The same tests run for
 * the other resource of the same definition in test/applications/applications.test.ts (test/support/named-resources.ts).
 */
useService();
describeNamedResource(KINDS[1]);
