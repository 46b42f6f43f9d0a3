import { wireDate, wireInt } from '../db/reads.js';
import { isoDate } from '../shared/present.js';
import { namedFromRow, NAMED_COLUMNS, presentNamed, type NamedWire } from '../shared/named-record.js';
import type { UserApplication } from './link.entities.js';

/** A user's link to an application, with the application (GraphQL's ApplicationLink). */
export interface ApplicationLinkRecord {
  userID: number;
  applicationID: number;
  right: number;
  createdAt: string | null;
  updatedAt: string | null;
  application: NamedWire;
}

/** The columns a link read selects: the link (`l`) and its application (`t`). */
export const APPLICATION_LINK_COLUMNS = `l.user_id as link_user_id, l."right", l.created_at as link_created_at, l.updated_at as link_updated_at, ${NAMED_COLUMNS}`;

interface ApplicationLinkRow {
  link_user_id: string;
  right: string;
  link_created_at: string;
  link_updated_at: string;
  id: string;
  name: string;
  created_at: string;
  updated_at: string;
}

export const applicationLinkFromRow = (row: ApplicationLinkRow): ApplicationLinkRecord => ({
  userID: wireInt(row.link_user_id),
  applicationID: wireInt(row.id),
  right: wireInt(row.right),
  createdAt: wireDate(row.link_created_at),
  updatedAt: wireDate(row.link_updated_at),
  application: namedFromRow(row),
});

/** An entity of the write path (its application populated). */
export const applicationLinkFromEntity = (link: UserApplication): ApplicationLinkRecord => ({
  userID: link.user,
  applicationID: link.application.id,
  right: link.right,
  createdAt: isoDate(link.createdAt),
  updatedAt: isoDate(link.updatedAt),
  application: presentNamed(link.application),
});

/** GET /user/{id}/application/{applicationID}: the link itself. */
export function presentApplicationLink(link: ApplicationLinkRecord) {
  return { userID: link.userID, applicationID: link.applicationID, right: link.right, createdAt: link.createdAt, updatedAt: link.updatedAt };
}

/** An item of GET /user/{id}/application/: the application, with the link's right. */
export const presentLinkedApplication = (link: ApplicationLinkRecord) => ({ ...link.application, right: link.right });
