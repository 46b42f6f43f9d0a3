import { Counter } from 'prom-client';
import { recordResolver } from '../../../src/graphql/record-resolver.js';
import { recordTypes, type RecordTypes } from '../../../src/graphql/record-types.js';
import { recordRoutes } from '../../../src/http/record-routes.js';
import { AppError } from '../../../src/errors.js';
import { defineModule, type ModuleRuntime, type Stoppable } from '../../../src/module/module.js';
import { recordEvents } from '../../../src/realtime/realtime.graphql.js';
import { field } from '../../../src/resource/field.js';
import { defineResource } from '../../../src/resource/resource.js';
import { recordService, type RecordDeps } from '../../../src/resource/service.js';
import { Migration20270101000000_groups, Migration20270101000000_groups_uncounted } from './Migration20270101000000_groups.js';

/**
 * A made-up resource module, written as docs/architecture.md#adding-a-resource says: a definition,
 * its migration, a service, REST routes, GraphQL resolvers and subscriptions, all from the generic
 * parts. test/resource/module.test.ts registers it beside src/modules.ts's and finds it everywhere.
 */
export const groups = defineResource({
  name: 'group',
  label: 'group',
  table: 'groups',
  counted: true,
  type: 'Group',
  fields: {
    id: field.id(),
    name: field.string(255, { required: true, nonEmpty: true }),
    size: field.int32(),
    createdAt: field.createdAt(),
    updatedAt: field.updatedAt(),
    deletedAt: field.deletedAt(),
  },
});

const groupService = (deps: RecordDeps) =>
  recordService(
    groups,
    { conflict: (values) => AppError.conflict('a group with this name already exists', [{ field: 'name', message: `"${values.name}" is already in use` }]) },
    deps,
  );

/** What one start of the module's work saw (one per service started with it): the test reads these. */
export interface GroupWork {
  /** Group events read from the instance's event source. */
  events: number;
  /** The graceful stop stopped it. */
  stopped: boolean;
  /** The event source still delivered after the stop (it must not: the work stops before the source closes, and lets it go). */
  eventsAfterStop: number;
}
export const groupWork: GroupWork[] = [];

/**
 * Its work beside the requests, as a module with background work has it (src/webhooks/: the
 * deliveries): it reads the instance's event source, counts the group events in a metric of its own
 * in /metrics, and lets the source go when the service stops.
 */
function startGroupWork({ events, metrics }: ModuleRuntime<unknown>): Stoppable {
  const work: GroupWork = { events: 0, stopped: false, eventsAfterStop: 0 };
  groupWork.push(work);
  const seen = metrics ? new Counter({ name: 'group_events_seen_total', help: 'Group events read by the groups module', registers: [metrics] }) : null;
  const unlisten = events.listen((batch) => {
    const read = batch.filter((e) => e.resource === 'group').length;
    if (work.stopped) work.eventsAfterStop += read;
    work.events += read;
    seen?.inc(read);
  });
  return {
    async stop() {
      unlisten();
      work.stopped = true;
    },
  };
}

let types: RecordTypes | undefined;
const groupTypes = () => (types ??= recordTypes(groups, { cacheable: true }));

const spec = {
  key: 'groups',
  records: [groups],
  scope: 'group',
  migrations: [{ name: 'Migration20270101000000_groups', class: Migration20270101000000_groups }],
  service: (deps: RecordDeps) => groupService(deps),
  routes: (service: ReturnType<typeof groupService>, { basePath }: { basePath: string }) =>
    recordRoutes({ path: '/group', basePath, service, cacheable: true, tag: { name: 'groups', description: 'Groups: a made-up module of the tests.' } }),
} as const;

export default defineModule({
  ...spec,
  start: (runtime) => startGroupWork(runtime),
  graphql: (api) => [recordResolver(groups, api.service, groupTypes(), { cacheable: true, mutations: ['create', 'update', 'patch', 'destroy', 'restore'] })],
  subscriptions: (api) =>
    recordEvents({ definition: groups, recordType: () => groupTypes().Type, find: (ctx, caller, id) => api.service(ctx).find(caller, ctx.sql, id) }),
});

/** The module whose migration forgot the table's live_counts row. */
export const uncountedGroups = defineModule({
  ...spec,
  migrations: [{ name: 'Migration20270101000000_groups', class: Migration20270101000000_groups_uncounted }],
});
