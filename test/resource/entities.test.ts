import { startTestService, type TestService } from '../support/service.js';

/**
 * The ORM's entity metadata is derived from the resource definitions (src/resource/entity.ts); the
 * tables are made by the migrations. They must agree column for column (name and nullability), so
 * that a field added to a definition without its migration, or a migration without its field,
 * fails here.
 */
let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
}, 120_000);
afterAll(() => svc?.stop());

test('every entity column is a column of its migrated table, with the same nullability, and the other way round', async () => {
  const metas = [...svc.running.db.orm.getMetadata()];
  const tables = metas.map((meta) => meta.tableName);
  expect(tables.sort()).toEqual(['applications', 'audit_events', 'roles', 'tokens', 'users', 'webhook_deliveries', 'webhooks']);
  for (const meta of metas) {
    const fromEntity = Object.values(meta.properties)
      .map((p) => `${p.fieldNames[0]} ${p.primary || !p.nullable ? 'not null' : 'null'}`)
      .sort();
    const fromTable = (
      await svc.sql<{ column_name: string; is_nullable: string }>(
        `select column_name, is_nullable from information_schema.columns where table_schema = current_schema() and table_name = $1`,
        [meta.tableName],
      )
    )
      .map((c) => `${c.column_name} ${c.is_nullable === 'YES' ? 'null' : 'not null'}`)
      .sort();
    expect({ table: meta.tableName, columns: fromEntity }).toEqual({ table: meta.tableName, columns: fromTable });
  }
});
