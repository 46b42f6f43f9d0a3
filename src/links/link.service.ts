import type { Caller } from '../auth/caller.js';
import type { Sql } from '../db/sql.js';
import { AppError } from '../errors.js';
import { relationService } from '../resource/relation-service.js';
import { userApplications, userRoles } from './link.resource.js';

const LIVE_APPLICATION = 'select 1 as live from applications where id = ? and deleted_at is null';
const LINK_RIGHT = 'select "right" from user_applications where user_id = ? and application_id = ? and deleted_at is null';

/** What the original family's authorize answers: the token's user and the right of its link to the application (0 when not linked). */
export interface Authorization {
  userId: number;
  right: number;
}

/** A user's links: to applications (with a `right`, changed by the `right` action) and to roles; and the original family's authorize. */
export function linkService() {
  return {
    applications: relationService(userApplications, { changeAction: 'right' }),
    roles: relationService(userRoles),

    /**
     * The original family's authorization call (GET /authorize/{applicationID}/): the user owning
     * the caller's token and the right of its link to the application, 0 when not linked. Any
     * valid token may ask about itself; an application that does not exist (or is deleted) is a 404.
     */
    async authorize(caller: Caller, sql: Sql, applicationId: number): Promise<Authorization> {
      const [application, [linked]] = await Promise.all([
        sql.rows(LIVE_APPLICATION, [applicationId]),
        sql.rows<{ right: number }>(LINK_RIGHT, [caller.userId, applicationId]),
      ]);
      if (application.length === 0) throw AppError.notFound(`no application with id ${applicationId}`);
      return { userId: caller.userId, right: linked ? linked.right : 0 };
    },
  };
}

export type LinkService = ReturnType<typeof linkService>;
