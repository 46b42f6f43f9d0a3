import { loadConfig } from '../../src/config.js';
import { Keyring } from '../../src/db/keyring.js';
import { migrations as coreMigrations } from '../../src/db/migrations/index.js';
import type { RouteSpec } from '../../src/http/routes.js';
import { defineModule, serviceOf, type AnyModule, type ModuleDeps } from '../../src/module/module.js';
import {
  apiRoutes,
  auditResources,
  createServices,
  databaseSchemaOf,
  federationEntities,
  schemaResolvers,
  scopeVocabulary,
  startModules,
} from '../../src/module/registry.js';
import { MODULES } from '../../src/modules.js';
import groupsModule, { groups } from '../support/group/index.js';

/**
 * What src/module/registry.ts derives from a list of modules, and the module sets it refuses, without
 * a database: made-up modules of a few lines each, and src/modules.ts's own list.
 * test/resource/module.test.ts registers a whole made-up module in a running service.
 */

const keyring = Keyring.of(Buffer.alloc(32, 7));
const config = loadConfig({}, false);

/** A module of a key, a scope and a service (by default one that declares no permission). */
const module = (key: string, more: Partial<AnyModule> = {}): AnyModule => defineModule({ key, service: () => ({ permissions: {} }), ...more });

const route = (path: string, permission?: RouteSpec['permission']): RouteSpec => ({
  method: 'GET',
  path,
  permission,
  docs: { tag: { name: 'x', description: 'x' }, summary: path, description: '', operation: {} },
  handle: async () => {},
});

describe('the scope vocabulary', () => {
  test("of src/modules.ts: each module's read and write, audit read only, and `*`", () => {
    const scopes = scopeVocabulary(MODULES);
    expect([...scopes.permissions].sort()).toEqual([
      'application:read',
      'application:write',
      'audit:read',
      'role:read',
      'role:write',
      'token:read',
      'token:write',
      'user:read',
      'user:write',
      'webhook:read',
      'webhook:write',
    ]);
    expect(scopes.grantsSomething('audit:*')).toBe(true);
    expect(scopes.grantsSomething('audit:write')).toBe(false);
  });

  test("a module's scope joins it: a name is read and write, a spec its own actions, none nothing", () => {
    const scopes = scopeVocabulary([module('a', { scope: 'alpha' }), module('b', { scope: { name: 'beta', actions: ['read'] } }), module('c')]);
    expect([...scopes.words].sort()).toEqual(['*', 'alpha:*', 'alpha:read', 'alpha:write', 'beta:*', 'beta:read']);
  });

  test('two modules with one scope are refused', () => {
    expect(() => scopeVocabulary([module('a', { scope: 'user' }), module('b', { scope: 'user' })])).toThrow('two modules declare the scope "user"');
  });
});

describe('audit resources', () => {
  test("a module's own declaration, else its records' names and its relations' link resources; each once, in list order", () => {
    expect(auditResources([module('a', { auditResources: ['x', 'y'] }), groupsModule, module('c', { auditResources: ['y', 'z'] })])).toEqual([
      'x',
      'y',
      'group',
      'z',
    ]);
    expect(auditResources(MODULES)).toEqual(expect.arrayContaining(['user', 'token', 'application', 'role', 'webhook']));
  });
});

describe('the services container', () => {
  test("each module's service under its key, made in list order with the services before it", () => {
    const seen: string[][] = [];
    const made = (name: string) => (deps: ModuleDeps) => {
      seen.push(Object.keys(deps.services));
      return { permissions: {}, name };
    };
    const first = module('first', { service: made('one') });
    const services = createServices([first, module('second', { service: made('two') }), module('third', { service: made('three') })], keyring, config);
    expect(seen).toEqual([[], ['first'], ['first', 'second']]);
    expect(Object.keys(services)).toEqual(['first', 'second', 'third']);
    expect(serviceOf(first, services)).toEqual({ permissions: {}, name: 'one' });
    expect(Object.isFrozen(services)).toBe(true);
  });

  test('a service of a module listed later is not there yet', () => {
    const later = module('later');
    expect(() => createServices([module('early', { service: (deps) => serviceOf(later, deps.services) }), later], keyring, config)).toThrow(
      "the later module's service is not made yet: list its module before the modules that use it",
    );
  });

  test('two modules with one key are refused', () => {
    expect(() => createServices([module('same', { scope: 'a' }), module('same', { scope: 'b' })], keyring, config)).toThrow('two modules have the key "same"');
  });

  test("a permission a service declares, or a service it holds declares, must be in the modules' scopes", () => {
    const declares = (permissions: Record<string, string>, held?: object) => () => ({ permissions, ...(held ? { links: held } : {}) });
    expect(() => createServices([module('things', { scope: 'thing', service: declares({ list: 'thing:read' }) })], keyring, config)).not.toThrow();
    expect(() =>
      createServices([module('things', { scope: 'thing', service: declares({ list: 'thing:read', remove: 'thing:delete' }) })], keyring, config),
    ).toThrow(/^the operation things\.remove needs the permission "thing:delete", which no module declares \(known: thing:read, thing:write\)$/);
    expect(() =>
      createServices([module('things', { scope: 'thing', service: declares({}, { permissions: { link: 'other:write' } }) })], keyring, config),
    ).toThrow(/^the operation things\.links\.link needs the permission "other:write"/);
  });

  test("the deps: every module's audit resources, and what a delete of a record takes through every module's relations", () => {
    let deps: ModuleDeps | undefined;
    createServices(
      [
        ...MODULES.filter((m) => m.key === 'users' || m.key === 'tokens' || m.key === 'applications' || m.key === 'roles' || m.key === 'links'),
        module('probe', {
          service: (d) => {
            deps = d;
            return { permissions: {} };
          },
        }),
      ],
      keyring,
      config,
    );
    const users = MODULES.find((m) => m.key === 'users')!.records![0];
    expect(deps!.cascadeOf(users).length).toBeGreaterThanOrEqual(2); // its application and role links
    expect(deps!.cascadeOf(groups)).toEqual([]);
    expect(deps!.auditResources).toEqual(expect.arrayContaining(['user', 'token']));
  });
});

describe('the REST route table', () => {
  test('module by module, each with the base path; a route needing an unknown permission is refused', () => {
    const routesOf =
      (prefix: string) =>
      (_: unknown, { basePath }: { basePath: string }) => [route(`${basePath}/${prefix}`, `${prefix}:read`)];
    const modules = [module('b', { scope: 'b', routes: routesOf('b') }), module('a', { scope: 'a', routes: routesOf('a') }), module('none')];
    const services = createServices(modules, keyring, config);
    expect(apiRoutes(modules, services, '/api').map((r) => r.path)).toEqual(['/api/b', '/api/a']);
    const typo = [module('a', { scope: 'a', routes: () => [route('/a', 'aa:read')] })];
    expect(() => apiRoutes(typo, createServices(typo, keyring, config), '')).toThrow(/^GET \/a needs the permission "aa:read", which no module declares/);
  });
});

describe('the GraphQL resolvers', () => {
  test('operations in the schema order, then subscriptions; modules not named after those named, in list order; each made once', () => {
    class A {}
    class B {}
    class C {}
    class SubA {}
    let calls = 0;
    const a = module('a', {
      graphql: () => {
        calls++;
        return [A];
      },
      subscriptions: () => [SubA],
    });
    const modules = [a, module('b', { graphql: () => [B] }), module('c', { graphql: () => [C] })];
    expect(schemaResolvers(modules, { operations: ['c', 'a'], subscriptions: [] })).toEqual([C, A, B, SubA]);
    expect(schemaResolvers(modules, { operations: [], subscriptions: [] })).toEqual([A, B, C, SubA]);
    expect(calls).toBe(1);
  });
});

describe('the database schema', () => {
  test("the core migrations and the modules' own, in name order; the records' entities; the modules' hooks", () => {
    const hooks = { steps: [] };
    const schema = databaseSchemaOf([
      groupsModule,
      module('early', { migrations: [{ name: 'Migration00000000000000_first', class: class {} as never }], database: hooks }),
    ]);
    const names = schema.migrations.map((m) => m.name);
    expect(names[0]).toBe('Migration00000000000000_first');
    expect(names).toEqual([...names].sort());
    expect(names).toEqual(expect.arrayContaining([...coreMigrations.map((m) => m.name), 'Migration20270101000000_groups']));
    expect(schema.entities.map((e) => e.meta.tableName)).toEqual(['groups']);
    expect(schema.hooks).toEqual([hooks]);
  });

  test('two migrations of one name are refused', () => {
    const again = module('again', { migrations: [{ name: coreMigrations[0].name, class: class {} as never }] });
    expect(() => databaseSchemaOf([again])).toThrow(`two migrations are named ${coreMigrations[0].name}`);
  });
});

describe('federation entities', () => {
  test('one per declared record type; a type two modules declare is refused', () => {
    expect(federationEntities([module('g', { entities: [groups] })]).map((e) => e.type)).toEqual(['Group']);
    expect(() => federationEntities([module('g', { entities: [groups] }), module('h', { entities: [groups] })])).toThrow(
      'two modules declare the entity Group',
    );
  });
});

describe("the modules' work beside the requests", () => {
  const runtime = {} as Parameters<typeof startModules>[2];

  test('started in list order with its service, stopped in the reverse order', async () => {
    const log: string[] = [];
    const worker = (key: string) =>
      module(key, {
        service: () => ({ permissions: {}, key }),
        start: ({ service }) => {
          log.push(`start ${(service as { key: string }).key}`);
          return { stop: async () => void log.push(`stop ${key}`) };
        },
      });
    const modules = [worker('a'), module('idle'), worker('b')];
    const work = await startModules(modules, createServices(modules, keyring, config), runtime);
    await work.stop();
    expect(log).toEqual(['start a', 'start b', 'stop b', 'stop a']);
  });

  test('a start that fails stops those already started, then throws', async () => {
    const log: string[] = [];
    const modules = [
      module('a', { start: () => ({ stop: async () => void log.push('stop a') }) }),
      module('b', {
        start: async () => {
          throw new Error('b cannot start');
        },
      }),
      module('c', { start: () => ({ stop: async () => void log.push('stop c') }) }),
    ];
    await expect(startModules(modules, createServices(modules, keyring, config), runtime)).rejects.toThrow('b cannot start');
    expect(log).toEqual(['stop a']);
  });
});
