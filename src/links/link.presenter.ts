import { isoDate } from '../shared/present.js';
import { presentNamed } from '../shared/named-record.js';
import type { UserApplication, UserRole } from './link.entities.js';

/** GET /user/{id}/application/{applicationID}: the link itself. */
export function presentApplicationLink(link: UserApplication) {
  return {
    userID: link.user,
    applicationID: link.application.id,
    right: link.right,
    createdAt: isoDate(link.createdAt),
    updatedAt: isoDate(link.updatedAt),
  };
}

/** An item of GET /user/{id}/application/: the application, with the link's right. */
export const presentLinkedApplication = (link: UserApplication) => ({ ...presentNamed(link.application), right: link.right });

/** An item of GET /user/{id}/role/: the role. */
export const presentLinkedRole = (link: UserRole) => presentNamed(link.role);
