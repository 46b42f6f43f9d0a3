import { namedRecordGraphQL } from '../shared/named-record.graphql.js';

export const {
  RecordPage: RolePage,
  RecordListArgs: RoleListArgs,
  RecordConnection: RoleConnection,
  RecordConnectionArgs: RoleConnectionArgs,
  RecordResolver: RoleResolver,
} = namedRecordGraphQL({ type: 'Role', service: 'roles' });
