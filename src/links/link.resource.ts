import { applications } from '../applications/application.resource.js';
import { field } from '../resource/field.js';
import { defineRelation } from '../resource/relation.js';
import { roles } from '../roles/role.resource.js';
import { users } from '../users/user.resource.js';

/** A user's links to applications, each with a numeric `right` (the original service's RBAC bit mask). */
export const userApplications = defineRelation({
  parent: users,
  child: applications,
  table: 'user_applications',
  parentColumn: 'user_id',
  childColumn: 'application_id',
  linkFields: { right: field.safeInt({ required: true, description: 'The original service’s RBAC bit mask: any safe integer.' }) },
  auditResource: 'application_link',
});

/** A user's links to roles. */
export const userRoles = defineRelation({
  parent: users,
  child: roles,
  table: 'user_roles',
  parentColumn: 'user_id',
  childColumn: 'role_id',
  auditResource: 'role_link',
});

/** The relations of the links module, in the order the API lists them. */
export const RELATIONS = [userApplications, userRoles] as const;
