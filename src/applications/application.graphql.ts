import { namedRecordGraphQL } from '../shared/named-record.graphql.js';

export const {
  RecordType: ApplicationType,
  RecordPage: ApplicationPage,
  RecordResolver: ApplicationResolver,
} = namedRecordGraphQL({ type: 'Application', service: 'applications' });
