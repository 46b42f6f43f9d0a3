/**
 * The REST tests of applications and roles, which share one definition (src/resource/named.ts):
 * test/applications/applications.test.ts and test/roles/roles.test.ts each run them for their kind.
 */
import { svc, useService } from './service.js';

export { svc, useService };
import { ISO, recordOf } from './contracts.js';
export { ISO };
export const REPRESENTATION = { Prefer: 'return=representation' };

import { uniq as fresh } from './names.js';
export { fresh };

export interface Kind {
  resource: 'application' | 'role';
  table: 'applications' | 'roles';
  linkTable: 'user_applications' | 'user_roles';
  linkColumn: 'application_id' | 'role_id';
}

export const KINDS: Kind[] = [
  { resource: 'application', table: 'applications', linkTable: 'user_applications', linkColumn: 'application_id' },
  { resource: 'role', table: 'roles', linkTable: 'user_roles', linkColumn: 'role_id' },
];

/** Every REST test of /application/ or /role/, for one of them. */
export function describeNamedResource(kind: Kind): void {
  describe.each([kind])('/$resource/', ({ resource, table, linkTable, linkColumn }) => {
    const base = `/${resource}`;

    /** A new record, as the create answered it (Prefer: return=representation). */
    async function create(name = fresh(resource)) {
      const res = await svc.request('POST', `${base}/`, { body: { name }, headers: REPRESENTATION });
      expect(res.status).toBe(201);
      expect(res.headers.get('location')).toBe(`${base}/${res.body.id}`);
      return res.body as { id: number; name: string; createdAt: string; updatedAt: string };
    }

    const get = async (id: number) => {
      const res = await svc.request('GET', `${base}/${id}`);
      expect(res.status).toBe(200);
      return res.body as { id: number; name: string; createdAt: string; updatedAt: string };
    };

    /** A list answer's ids and total (X-Total-Count). */
    const listed = (res: { status: number; headers: Headers; body: any }) => {
      expect(res.status).toBe(200);
      expect(Array.isArray(res.body)).toBe(true);
      return { total: Number(res.headers.get('x-total-count')), ids: (res.body as { id: number }[]).map((r) => r.id) };
    };

    const count = async () => (await svc.sql<{ n: number }>(`select count(*)::int as n from ${table}`))[0].n;

    const row = async (id: number) =>
      (await svc.sql<{ name: string; deleted: boolean }>(`select name, deleted_at is not null as deleted from ${table} where id = ?`, [id]))[0];

    describe('POST', () => {
      test('creates: 201, Location, the new id as a bare number; fields outside the writable set are ignored', async () => {
        const name = fresh(resource);
        const res = await svc.request('POST', `${base}/`, {
          body: { name, createdAt: '2000-01-01T00:00:00Z', extra: 'x' },
        });
        expect(res.status).toBe(201);
        expect(res.body).toEqual(expect.any(Number));
        expect(res.text).toBe(String(res.body));
        expect(res.headers.get('location')).toBe(`${base}/${res.body}`);
        expect(res.headers.get('vary')).toMatch(/\bPrefer\b/i);
        expect(res.headers.get('preference-applied')).toBeNull();
        const stored = await get(res.body);
        expect(stored).toEqual(recordOf(resource, { id: res.body, name }));
        expect(stored.createdAt).not.toBe('2000-01-01T00:00:00.000Z');
        expect(await row(res.body)).toEqual({ name, deleted: false });
      });

      test('with Prefer: return=representation answers the created record', async () => {
        const name = fresh(resource);
        const res = await svc.request('POST', `${base}/`, { body: { name }, headers: REPRESENTATION });
        expect(res.status).toBe(201);
        expect(res.headers.get('preference-applied')).toBe('return=representation');
        expect(res.body).toEqual(recordOf(resource, { name }));
        expect(res.headers.get('location')).toBe(`${base}/${res.body.id}`);
        expect(await get(res.body.id)).toEqual(res.body);
      });

      test('an id in the body: one never reserved is a 400 naming id, an existing one a 409; both store nothing', async () => {
        const before = await svc.snapshot();
        const unreserved = await svc.request('POST', `${base}/`, { body: { name: fresh(resource), id: 424242 } });
        expect(unreserved.status).toBe(400);
        expect(unreserved.body).toMatchObject({ code: 400, error: 'BAD_REQUEST' });
        expect(unreserved.body.details).toEqual([{ field: 'id', message: expect.any(String) }]);
        expect(await svc.snapshot()).toEqual(before);

        const existing = await create();
        const afterCreate = await svc.snapshot({ sequences: false });
        const taken = await svc.request('POST', `${base}/`, { body: { name: fresh(resource), id: existing.id } });
        expect(taken.status).toBe(409);
        expect(taken.body).toMatchObject({ code: 409, error: 'CONFLICT' });
        expect(await svc.snapshot({ sequences: false })).toEqual(afterCreate);
        expect(await get(existing.id)).toEqual(existing);
      });

      test.each([0, null])('an id of %j means no id: the next id is used', async (id) => {
        const name = fresh(resource);
        const res = await svc.request('POST', `${base}/`, { body: { name, id } });
        expect(res.status).toBe(201);
        expect(res.body).toEqual(expect.any(Number));
        expect(await row(res.body)).toEqual({ name, deleted: false });
      });

      test('works without the trailing slash', async () => {
        const name = fresh(resource);
        const res = await svc.request('POST', base, { body: { name } });
        expect(res.status).toBe(201);
        expect(res.headers.get('location')).toBe(`${base}/${res.body}`);
        expect((await get(res.body)).name).toBe(name);
      });

      test('a name of exactly 255 characters is accepted', async () => {
        const name = `${fresh(resource)}-`.padEnd(255, 'n');
        const res = await svc.request('POST', `${base}/`, { body: { name } });
        expect(res.status).toBe(201);
        expect((await get(res.body)).name).toBe(name);
        expect((await row(res.body)).name).toBe(name);
      });

      test.each([
        ['no name', {}, 'is required'],
        ['a null name', { name: null }, 'must not be null'],
        ['a number', { name: 5 }, 'must be a string'],
        ['an array', { name: ['a'] }, 'must be a string'],
        ['256 characters', { name: 'x'.repeat(256) }, 'at most 255'],
        ['an empty name', { name: '' }, 'must not be empty'],
        ['a name of spaces', { name: '   ' }, 'must not be empty'],
      ])('rejects %s with 400 naming name, and stores nothing', async (_label, body, message) => {
        const before = await count();
        const res = await svc.request('POST', `${base}/`, { body });
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ code: 400, error: 'BAD_REQUEST', requestId: expect.any(String) });
        expect(res.body.details).toEqual([{ field: 'name', message: expect.stringContaining(message) }]);
        expect(await count()).toBe(before);
      });

      test('a body that is not a JSON object is a 400 and stores nothing', async () => {
        const before = await count();
        const res = await svc.request('POST', `${base}/`, { body: ['name'] });
        expect(res.status).toBe(400);
        expect(res.body.error).toBe('BAD_REQUEST');
        expect(await count()).toBe(before);
      });

      test('a duplicate name among live records is a 409 CONFLICT naming the field', async () => {
        const first = await create();
        const before = await count();
        const res = await svc.request('POST', `${base}/`, { body: { name: first.name } });
        expect(res.status).toBe(409);
        expect(res.body).toMatchObject({ code: 409, error: 'CONFLICT', requestId: expect.any(String) });
        expect(res.body.details).toEqual([{ field: 'name', message: expect.any(String) }]);
        expect(await count()).toBe(before);
      });

      test('the name of a deleted record can be reused', async () => {
        const first = await create();
        const deleted = await svc.request('DELETE', `${base}/${first.id}`);
        expect(deleted.status).toBe(200);
        expect(deleted.body).toBe(1);
        const res = await svc.request('POST', `${base}/`, { body: { name: first.name } });
        expect(res.status).toBe(201);
        expect(res.body).not.toBe(first.id);
        expect((await get(res.body)).name).toBe(first.name);
        // The deleted row is kept, still deleted, with its name.
        expect(await row(first.id)).toEqual({ name: first.name, deleted: true });
      });
    });

    describe('GET list', () => {
      test('answers a bare array of live records, X-Total-Count and Link, with and without the trailing slash', async () => {
        const prefix = fresh(`${resource}-list`);
        const a = await create(`${prefix}-a`);
        const b = await create(`${prefix}-b`);
        const gone = await create(`${prefix}-c`);
        await svc.request('DELETE', `${base}/${gone.id}`);

        const filter = encodeURIComponent(JSON.stringify({ name: { like: `${prefix}-%` } }));
        for (const path of [`${base}/`, base]) {
          const res = await svc.request('GET', `${path}?filter=${filter}`);
          expect(res.status).toBe(200);
          expect(res.body).toEqual([a, b]);
          expect(res.headers.get('x-total-count')).toBe('2');
          expect(res.headers.get('link')).toBe(`<${path}?filter=${filter}&page=1>; rel="first", <${path}?filter=${filter}&page=1>; rel="last"`);
        }
      });

      test('supports orderBy, page and pageSize; X-Total-Count counts every match', async () => {
        const prefix = fresh(`${resource}-page`);
        const made = [];
        for (const suffix of ['a', 'b', 'c']) made.push(await create(`${prefix}-${suffix}`));
        const filter = encodeURIComponent(JSON.stringify({ name: { like: `${prefix}-%` } }));

        const desc = await svc.request('GET', `${base}/?filter=${filter}&orderBy=-name`);
        expect(desc.status).toBe(200);
        expect(desc.body.map((r: { name: string }) => r.name)).toEqual([`${prefix}-c`, `${prefix}-b`, `${prefix}-a`]);
        expect(desc.headers.get('x-total-count')).toBe('3');

        // Field names and keywords of orderBy are case-insensitive.
        const descUpper = await svc.request('GET', `${base}/?filter=${filter}&orderBy=${encodeURIComponent('Name DESC')}`);
        expect(descUpper.status).toBe(200);
        expect(descUpper.body).toEqual(desc.body);

        const page2 = await svc.request('GET', `${base}/?filter=${filter}&orderBy=name&page=2&pageSize=2`);
        expect(page2.status).toBe(200);
        expect(page2.body).toEqual([made[2]]);
        expect(page2.headers.get('x-total-count')).toBe('3');
        // The other parameters as sent, `page` replaced (here: moved to the end).
        const at = (page: number) => `<${base}/?filter=${filter}&orderBy=name&page=${page}&pageSize=2>`;
        expect(page2.headers.get('link')).toBe(`${at(1)}; rel="first", ${at(1)}; rel="prev", ${at(2)}; rel="last"`);

        const past = await svc.request('GET', `${base}/?filter=${filter}&page=9&pageSize=2`);
        expect(past.status).toBe(200);
        expect(past.body).toEqual([]);
        expect(past.headers.get('x-total-count')).toBe('3');
      });

      test('page below 1 is read as 1, pageSize below 1 as 20 and above 1000 as 1000', async () => {
        const prefix = fresh(`${resource}-clamp`);
        const made = [];
        for (const suffix of ['a', 'b', 'c']) made.push(await create(`${prefix}-${suffix}`));
        const filter = encodeURIComponent(JSON.stringify({ name: { like: `${prefix}-%` } }));
        const ids = made.map((r) => r.id);

        for (const page of ['0', '-4']) {
          const res = await svc.request('GET', `${base}/?filter=${filter}&page=${page}&pageSize=2`);
          expect(listed(res)).toEqual({ total: 3, ids: ids.slice(0, 2) });
          expect(res.headers.get('link')).not.toContain('rel="prev"');
          expect(res.headers.get('link')).toContain('page=2&pageSize=2>; rel="next"');
        }
        for (const pageSize of ['0', '-1', '1001', '5000']) {
          const res = await svc.request('GET', `${base}/?filter=${filter}&pageSize=${pageSize}`);
          expect(listed(res)).toEqual({ total: 3, ids });
          expect(res.headers.get('link')).not.toContain('rel="next"');
        }
      });

      test.each([
        ['filter', encodeURIComponent(JSON.stringify({ password: 'x' }))],
        ['filter', encodeURIComponent('name eq')],
        ['orderBy', 'nope'],
        ['page', 'x'],
        ['page', '1.5'],
        ['pageSize', 'ten'],
      ])('a bad %s (%s) is a 400', async (param, value) => {
        const res = await svc.request('GET', `${base}/?${param}=${value}`);
        expect(res.status).toBe(400);
        expect(res.body.error).toBe('BAD_REQUEST');
        expect(res.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: expect.stringMatching(new RegExp(`^${param}\\b`)) })]));
      });

      test('filter in the expression form, with field names in any case, selects the same records as the JSON form', async () => {
        const prefix = fresh(`${resource}-expr`);
        const a = await create(`${prefix}-a`);
        const b = await create(`${prefix}-b`);
        await create(`${prefix}-c`);
        const json = encodeURIComponent(JSON.stringify({ or: [{ name: `${prefix}-a` }, { name: `${prefix}-b` }] }));
        const expression = encodeURIComponent(`NAME eq '${prefix}-a' or name eq "${prefix}-b"`);
        const byJson = await svc.request('GET', `${base}/?filter=${json}`);
        const byExpression = await svc.request('GET', `${base}/?filter=${expression}`);
        expect(listed(byJson)).toEqual({ total: 2, ids: [a.id, b.id] });
        expect(listed(byExpression)).toEqual({ total: 2, ids: [a.id, b.id] });
        expect(byExpression.body).toEqual([a, b]);
      });
    });

    describe('GET one', () => {
      test('returns the record; unknown id 404; malformed id 400', async () => {
        const made = await create();
        const res = await svc.request('GET', `${base}/${made.id}`);
        expect(res.status).toBe(200);
        expect(res.body).toEqual(made);

        const missing = await svc.request('GET', `${base}/987654321`);
        expect(missing.status).toBe(404);
        expect(missing.body).toMatchObject({ code: 404, error: 'NOT_FOUND' });

        const bad = await svc.request('GET', `${base}/abc`);
        expect(bad.status).toBe(400);
        expect(bad.body.details).toEqual([{ field: 'id', message: 'must be a positive integer' }]);
      });
    });

    describe('PUT', () => {
      test('replaces the name and keeps id and createdAt', async () => {
        const made = await create();
        const name = fresh(resource);
        const res = await svc.request('PUT', `${base}/${made.id}`, { body: { name, createdAt: '2000-01-01T00:00:00Z' } });
        expect(res.status).toBe(200);
        expect(res.body).toBe(1);
        expect(res.headers.get('location')).toBeNull();
        expect(res.headers.get('vary')).toMatch(/\bPrefer\b/i);
        expect(await get(made.id)).toEqual({ id: made.id, name, createdAt: made.createdAt, updatedAt: expect.stringMatching(ISO) });
        expect(await row(made.id)).toEqual({ name, deleted: false });
      });

      test('with Prefer: return=representation answers the replaced record', async () => {
        const made = await create();
        const name = fresh(resource);
        const res = await svc.request('PUT', `${base}/${made.id}`, { body: { name }, headers: REPRESENTATION });
        expect(res.status).toBe(200);
        expect(res.headers.get('preference-applied')).toBe('return=representation');
        expect(res.body).toEqual({ id: made.id, name, createdAt: made.createdAt, updatedAt: expect.stringMatching(ISO) });
        expect(await get(made.id)).toEqual(res.body);
      });

      test('PUT with its own current name is fine (not a conflict with itself): 1, record unchanged', async () => {
        const made = await create();
        const res = await svc.request('PUT', `${base}/${made.id}`, { body: { name: made.name } });
        expect(res.status).toBe(200);
        expect(res.body).toBe(1);
        // Counted as matched; no value changed, so updatedAt stays as it was.
        expect(await get(made.id)).toEqual(made);
      });

      test('on an unknown id answers 404 and creates nothing', async () => {
        const before = await count();
        const res = await svc.request('PUT', `${base}/5000000`, { body: { name: fresh(resource) } });
        expect(res.status).toBe(404);
        expect(res.body.error).toBe('NOT_FOUND');
        expect(await svc.sql(`select id from ${table} where id = 5000000`)).toEqual([]);
        expect(await count()).toBe(before);
      });

      test('on a deleted record answers 404 and leaves it deleted', async () => {
        const made = await create();
        await svc.request('DELETE', `${base}/${made.id}`);
        const res = await svc.request('PUT', `${base}/${made.id}`, { body: { name: fresh(resource) } });
        expect(res.status).toBe(404);
        expect(await row(made.id)).toEqual({ name: made.name, deleted: true });
      });

      test.each([
        ['no name', {}, 'is required'],
        ['256 characters', { name: 'x'.repeat(256) }, 'at most 255'],
        ['a number', { name: 1 }, 'must be a string'],
      ])('invalid body (%s): 400 naming name, record unchanged', async (_label, body, message) => {
        const made = await create();
        const res = await svc.request('PUT', `${base}/${made.id}`, { body });
        expect(res.status).toBe(400);
        expect(res.body.details).toEqual([{ field: 'name', message: expect.stringContaining(message) }]);
        expect(await get(made.id)).toEqual(made);
      });

      test("taking another live record's name is a 409 naming the field; record unchanged", async () => {
        const a = await create();
        const b = await create();
        const res = await svc.request('PUT', `${base}/${b.id}`, { body: { name: a.name } });
        expect(res.status).toBe(409);
        expect(res.body).toMatchObject({ code: 409, error: 'CONFLICT' });
        expect(res.body.details).toEqual([{ field: 'name', message: expect.any(String) }]);
        expect(await row(b.id)).toEqual({ name: b.name, deleted: false });
      });
    });

    describe('PATCH', () => {
      test('changes the name given in the body', async () => {
        const made = await create();
        const name = fresh(resource);
        const res = await svc.request('PATCH', `${base}/${made.id}`, { body: { name } });
        expect(res.status).toBe(200);
        expect(res.body).toBe(1);
        expect(await get(made.id)).toEqual({ id: made.id, name, createdAt: made.createdAt, updatedAt: expect.stringMatching(ISO) });
        expect(await row(made.id)).toEqual({ name, deleted: false });
      });

      test('with Prefer: return=representation answers the patched record', async () => {
        const made = await create();
        const name = fresh(resource);
        const res = await svc.request('PATCH', `${base}/${made.id}`, { body: { name }, headers: REPRESENTATION });
        expect(res.status).toBe(200);
        expect(res.headers.get('preference-applied')).toBe('return=representation');
        expect(res.body).toEqual({ id: made.id, name, createdAt: made.createdAt, updatedAt: expect.stringMatching(ISO) });
        expect(await get(made.id)).toEqual(res.body);
      });

      test('an empty body changes nothing', async () => {
        const made = await create();
        const res = await svc.request('PATCH', `${base}/${made.id}`, { body: {} });
        expect(res.status).toBe(200);
        expect(res.body).toBe(1);
        expect(await get(made.id)).toEqual(made);
      });

      test('Attrs names are trimmed and case-insensitive; read-only names (id, createdAt) are skipped', async () => {
        const made = await create();
        const name = fresh(resource);
        const res = await svc.request('PATCH', `${base}/${made.id}`, {
          body: { name, id: 3, createdAt: '2000-01-01T00:00:00Z' },
          headers: { Attrs: ' NAME , id,CreatedAt ' },
        });
        expect(res.status).toBe(200);
        expect(res.body).toBe(1);
        expect(await get(made.id)).toEqual({ id: made.id, name, createdAt: made.createdAt, updatedAt: expect.stringMatching(ISO) });
      });

      test('Attrs naming an unknown field is a 400, record unchanged', async () => {
        const made = await create();
        const res = await svc.request('PATCH', `${base}/${made.id}`, {
          body: { name: fresh(resource), colour: 'red' },
          headers: { Attrs: 'name,colour' },
        });
        expect(res.status).toBe(400);
        expect(res.body.details).toEqual([{ field: 'Attrs', message: expect.stringContaining('"colour"') }]);
        expect(await get(made.id)).toEqual(made);
      });

      test('Attrs naming name without a name in the body writes its default "", which a name cannot be: 400 naming name, record unchanged', async () => {
        const made = await create();
        const res = await svc.request('PATCH', `${base}/${made.id}`, { body: {}, headers: { Attrs: 'name' } });
        expect(res.status).toBe(400);
        expect(res.body.details).toEqual([{ field: 'name', message: expect.stringContaining('must not be empty') }]);
        expect(await get(made.id)).toEqual(made);
      });

      test('too long or duplicate names are refused, record unchanged', async () => {
        const other = await create();
        const made = await create();
        const long = await svc.request('PATCH', `${base}/${made.id}`, { body: { name: 'y'.repeat(256) } });
        expect(long.status).toBe(400);
        expect(long.body.details).toEqual([{ field: 'name', message: expect.stringContaining('at most 255') }]);
        const empty = await svc.request('PATCH', `${base}/${made.id}`, { body: { name: '' } });
        expect(empty.status).toBe(400);
        expect(empty.body.details).toEqual([{ field: 'name', message: 'must not be empty' }]);
        const dup = await svc.request('PATCH', `${base}/${made.id}`, { body: { name: other.name } });
        expect(dup.status).toBe(409);
        expect(dup.body.error).toBe('CONFLICT');
        expect(dup.body.details).toEqual([{ field: 'name', message: expect.any(String) }]);
        expect(await row(made.id)).toEqual({ name: made.name, deleted: false });
      });

      test('on an unknown id answers 404', async () => {
        const res = await svc.request('PATCH', `${base}/5000001`, { body: { name: fresh(resource) } });
        expect(res.status).toBe(404);
      });
    });

    describe('DELETE', () => {
      test('is soft: 200 with body 1, then 404 everywhere, the row kept and marked deleted', async () => {
        const made = await create();
        const res = await svc.request('DELETE', `${base}/${made.id}`);
        expect(res.status).toBe(200);
        expect(res.body).toBe(1);
        expect(res.text).toBe('1');

        expect((await svc.request('GET', `${base}/${made.id}`)).status).toBe(404);
        expect((await svc.request('PATCH', `${base}/${made.id}`, { body: { name: fresh(resource) } })).status).toBe(404);
        const again = await svc.request('DELETE', `${base}/${made.id}`);
        expect(again.status).toBe(404);
        expect(again.body.error).toBe('NOT_FOUND');

        const list = await svc.request('GET', `${base}/?filter=${encodeURIComponent(JSON.stringify({ id: made.id }))}`);
        expect(list.status).toBe(200);
        expect(list.body).toEqual([]);
        expect(list.headers.get('x-total-count')).toBe('0');
        expect(await row(made.id)).toEqual({ name: made.name, deleted: true });
      });

      test('on an unknown id answers 404', async () => {
        expect((await svc.request('DELETE', `${base}/5000002`)).status).toBe(404);
      });

      test("removes it from users' lists: the links are soft-deleted too, other links untouched", async () => {
        const user = await svc.request('POST', '/user/', { body: { firstName: 'Link', lastName: resource } });
        const other = await svc.request('POST', '/user/', { body: { firstName: 'Other', lastName: resource } });
        const doomed = await create();
        const kept = await create();
        for (const u of [user.body, other.body]) {
          const linked = await svc.request('POST', `/user/${u}/${resource}/`, { body: [doomed.id, kept.id] });
          expect(linked.status).toBe(201);
          expect(linked.body).toBe(2);
        }
        const before = await svc.request('GET', `/user/${user.body}/${resource}/`);
        expect(listed(before)).toEqual({ total: 2, ids: [doomed.id, kept.id] });

        const deleted = await svc.request('DELETE', `${base}/${doomed.id}`);
        expect(deleted.status).toBe(200);
        expect(deleted.body).toBe(1);

        for (const u of [user.body, other.body]) {
          const after = await svc.request('GET', `/user/${u}/${resource}/`);
          expect(listed(after)).toEqual({ total: 1, ids: [kept.id] });
        }
        const links = await svc.sql<{ target: number; deleted: boolean }>(
          `select ${linkColumn}::int as target, deleted_at is not null as deleted from ${linkTable}
           where user_id in (?, ?) order by user_id, ${linkColumn}`,
          [user.body, other.body],
        );
        expect(links).toEqual([
          { target: doomed.id, deleted: true },
          { target: kept.id, deleted: false },
          { target: doomed.id, deleted: true },
          { target: kept.id, deleted: false },
        ]);

        // Linking the deleted record again is refused, and nothing is revived.
        const relink = await svc.request('POST', `/user/${user.body}/${resource}/`, { body: [doomed.id] });
        expect(relink.status).toBe(400);
        const [{ live }] = await svc.sql<{ live: number }>(`select count(*)::int as live from ${linkTable} where ${linkColumn} = ? and deleted_at is null`, [
          doomed.id,
        ]);
        expect(live).toBe(0);
      });
    });

    describe('permissions', () => {
      test(`${resource}:read may read but not write; other scopes get 403`, async () => {
        const made = await create();
        const reader = await svc.tokenWith(`${resource}:read`);
        expect((await svc.request('GET', `${base}/${made.id}`, { token: reader })).status).toBe(200);
        const write = await svc.request('POST', `${base}/`, { token: reader, body: { name: fresh(resource) } });
        expect(write.status).toBe(403);
        expect(write.headers.get('www-authenticate')).toContain(`scope="${resource}:write"`);

        const userOnly = await svc.tokenWith('user:*');
        expect((await svc.request('GET', `${base}/`, { token: userOnly })).status).toBe(403);
        expect((await svc.request('DELETE', `${base}/${made.id}`, { token: userOnly })).status).toBe(403);
        expect(await row(made.id)).toEqual({ name: made.name, deleted: false });
      });
    });
  });
}
