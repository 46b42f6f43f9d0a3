import { namedRecordGraphQL } from '../shared/named-record.graphql.js';

export const {
  RecordPage: RolePage,
  RecordListArgs: RoleListArgs,
  RecordResolver: RoleResolver,
} = namedRecordGraphQL({ type: 'Role', service: 'roles' });
