import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rotateKeyCommand } from '../../src/cli/rotate-key.js';
import { loadConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/database.js';
import { databaseSchemaOf } from '../../src/module/registry.js';
import { MODULES } from '../../src/modules.js';
import { newTestDatabase } from '../support/service.js';
import { onEmbedded, newKey, silent, ADMIN, baseEnv, start, call, sqlOf, dumpOf, expectAbsent, makeUser, makeToken } from '../support/secrets.js';

/**
 * The token key: TOKEN_KEY or the embedded database's key file, a wrong key refused at start,
 * rotation with TOKEN_KEY_PREVIOUS and `npm run rotate-key`, and plain rows of an older schema
 * encrypted at start.
 */

describe('keys', () => {
  test('TOKEN_KEY: required with DATABASE_URL, 32 bytes of base64; a malformed one is a clear error that never repeats it', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://x@127.0.0.1/db' })).toThrow(/^TOKEN_KEY is required with DATABASE_URL/);
    expect(() => loadConfig({ DATABASE_URL: 'postgres://x@127.0.0.1/db', TOKEN_KEY: ' ' })).toThrow(/TOKEN_KEY is required/);
    for (const bad of [
      'short',
      randomBytes(31).toString('base64'),
      randomBytes(33).toString('base64'),
      `${'!'.repeat(44)}`,
      'not base64 at all, with spaces',
    ]) {
      let message = '';
      try {
        loadConfig({ TOKEN_KEY: bad });
      } catch (err) {
        message = (err as Error).message;
        expect((err as Error).name).toBe('ConfigError');
      }
      expect(message).toMatch(/^TOKEN_KEY must be 32 bytes in base64/);
      expect(message).not.toContain(bad);
    }
    expect(() => loadConfig({ TOKEN_KEY: newKey(), TOKEN_KEY_PREVIOUS: 'abc' })).toThrow(/^TOKEN_KEY_PREVIOUS must be 32 bytes in base64/);
    // Both alphabets, with or without padding.
    const raw = randomBytes(32);
    for (const text of [raw.toString('base64'), raw.toString('base64url'), raw.toString('base64').replace(/=+$/, '')]) {
      expect(loadConfig({ TOKEN_KEY: text }).tokenKey).toEqual(raw);
    }
  });

  test('npm start: a missing TOKEN_KEY with DATABASE_URL, or a malformed one, stops the start with a clear message (exit 1)', async () => {
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const run = (env: Record<string, string>) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn('npm', ['start', '--silent'], {
          cwd: root,
          env: { ...process.env, LOG_LEVEL: 'silent', PORT: '0', TOKEN_KEY: '', ...env },
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (d) => (stderr += d));
        child.on('exit', (code) => resolve({ code, stderr }));
      });
    const missing = await run({ DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/Could not start: TOKEN_KEY is required with DATABASE_URL/);
    const malformed = await run({ DATABASE_URL: '', TOKEN_KEY: 'c2VjcmV0' });
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toMatch(/Could not start: TOKEN_KEY must be 32 bytes in base64 \(44 characters\), but it decodes to 6 bytes/);
    expect(malformed.stderr).not.toContain('c2VjcmV0');
  }, 120_000);

  onEmbedded('embedded database without TOKEN_KEY: a key file created in DATA_DIR (mode 0600) on first start, reused later', async () => {
    const place = await newTestDatabase();
    try {
      const keyFile = join(place.dataDir!, 'token.key');
      const first = await start(place, {});
      let token: { id: number; accessToken: string };
      try {
        token = await makeToken(first, await makeUser(first));
      } finally {
        await first.stop();
      }
      const info = await stat(keyFile);
      expect(info.mode & 0o777).toBe(0o600);
      const content = await readFile(keyFile, 'utf8');
      expect(content).toMatch(/^[A-Za-z0-9+/]{43}=\n$/);

      const second = await start(place, {});
      try {
        expect(await readFile(keyFile, 'utf8')).toBe(content);
        const read = await call(second, 'GET', `/token/${token.id}`, token.accessToken);
        expect(read.status).toBe(200);
        expect(read.body.accessToken).toBe(token.accessToken);
      } finally {
        await second.stop();
      }
      // The file's key is the TOKEN_KEY of these tokens: the same value works as TOKEN_KEY.
      const asEnv = await start(place, { TOKEN_KEY: content.trim() });
      try {
        expect((await call(asEnv, 'GET', `/token/${token.id}`, token.accessToken)).status).toBe(200);
      } finally {
        await asEnv.stop();
      }
      // A key file others may read is refused; so is a replaced one (another key).
      await chmod(keyFile, 0o644);
      await expect(start(place, {})).rejects.toThrow(/may be read by other users \(mode 644\); run chmod 600/);
      await writeFile(keyFile, `${newKey()}\n`, { mode: 0o600 });
      await chmod(keyFile, 0o600);
      await expect(start(place, {})).rejects.toThrow(/encrypted under a key this service does not hold/);
    } finally {
      await place.drop();
    }
  });

  test('a service started with a wrong key does not start (it could read no token and would mix keys); the message names key ids, never keys', async () => {
    const place = await newTestDatabase();
    try {
      const keyA = newKey();
      const first = await start(place, { TOKEN_KEY: keyA });
      try {
        await makeToken(first, await makeUser(first));
      } finally {
        await first.stop();
      }
      const wrong = newKey();
      let message = '';
      try {
        const service = await start(place, { TOKEN_KEY: wrong });
        await service.stop();
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toMatch(
        /^the database holds tokens encrypted under a key this service does not hold \(key id [0-9a-f]{16}, \d+ tokens; this service holds [0-9a-f]{16}\)/,
      );
      expect(message).not.toContain(keyA);
      expect(message).not.toContain(wrong);
      // Nothing was written under the wrong key.
      const again = await start(place, { TOKEN_KEY: keyA });
      try {
        const rows = await sqlOf(again)<{ key_id: string }>("select distinct encode(substring(access_token_cipher from 2 for 8), 'hex') as key_id from tokens");
        expect(rows).toHaveLength(1);
      } finally {
        await again.stop();
      }
    } finally {
      await place.drop();
    }
  });
});

describe('key rotation', () => {
  test('key A, then TOKEN_KEY=B with TOKEN_KEY_PREVIOUS=A while npm run rotate-key re-encrypts, then B alone', async () => {
    const place = await newTestDatabase();
    try {
      const keyA = newKey();
      const keyB = newKey();
      const underA = await start(place, { TOKEN_KEY: keyA });
      const tokens: { id: number; accessToken: string }[] = [];
      let deleted: { id: number; accessToken: string };
      try {
        const user = await makeUser(underA);
        for (let i = 0; i < 3; i++) tokens.push(await makeToken(underA, user, { refreshToken: `refresh-${i}` }));
        deleted = await makeToken(underA, user);
        expect((await call(underA, 'DELETE', `/token/${deleted.id}`, ADMIN)).status).toBe(200);
      } finally {
        await underA.stop();
      }
      const total = tokens.length + 2; // and the bootstrap token

      const both = { TOKEN_KEY: keyB, TOKEN_KEY_PREVIOUS: keyA };
      const rotating = await start(place, both);
      try {
        for (const [i, token] of tokens.entries()) {
          const read = await call(rotating, 'GET', `/token/${token.id}`, token.accessToken);
          expect(read.status).toBe(200);
          expect(read.body).toMatchObject({ accessToken: token.accessToken, refreshToken: `refresh-${i}` });
        }
        // Filters match rows under either key.
        const filtered = await call(
          rotating,
          'GET',
          `/token/?filter=${encodeURIComponent(JSON.stringify({ accessToken: { in: tokens.map((t) => t.accessToken) } }))}`,
          ADMIN,
        );
        expect(filtered.body.map((t: { id: number }) => t.id)).toEqual(tokens.map((t) => t.id));
        // A live value under key A is still taken.
        const dup = await call(rotating, 'POST', '/token/', ADMIN, { userID: 1, accessToken: tokens[0].accessToken });
        expect(dup.status).toBe(409);
        // New writes are under B.
        tokens.push(await makeToken(rotating, 1));
        // The deleted token's value taken again, under B: restoring the one under A is a 409, though
        // the unique index (current-key hashes) cannot see the two are the same.
        const twin = await call(rotating, 'POST', '/token/', ADMIN, { userID: 1, accessToken: deleted!.accessToken });
        expect(twin.status).toBe(201);
        const restore = await call(rotating, 'POST', `/token/${deleted!.id}/restore`, ADMIN);
        expect({ status: restore.status, field: restore.body.details?.[0]?.field }).toEqual({ status: 409, field: 'accessToken' });

        // The rotation runs beside the service.
        const out: string[] = [];
        const err: string[] = [];
        const io = { out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
        expect(await rotateKeyCommand([], baseEnv(place, both), io)).toBe(0);
        expect(err.join('')).toBe('');
        expect(out.join('')).toMatch(new RegExp(`^${total} tokens re-encrypted with TOKEN_KEY \\(key id [0-9a-f]{16}\\); 2 already under it\\.\\n$`));
        out.length = 0;
        expect(await rotateKeyCommand([], baseEnv(place, both), io)).toBe(0);
        expect(out.join('')).toMatch(/^0 tokens re-encrypted with TOKEN_KEY \(key id [0-9a-f]{16}\); 7 already under it\.\n$/);

        for (const token of tokens) expect((await call(rotating, 'GET', `/token/${token.id}`, token.accessToken)).status).toBe(200);
      } finally {
        await rotating.stop();
      }

      const onlyB = await start(place, { TOKEN_KEY: keyB });
      try {
        for (const token of tokens) {
          const read = await call(onlyB, 'GET', `/token/${token.id}`, token.accessToken);
          expect(read.status).toBe(200);
          expect(read.body.accessToken).toBe(token.accessToken);
        }
        expect((await call(onlyB, 'GET', `/token/${tokens[1].id}`, ADMIN)).body.refreshToken).toBe('refresh-1');
        const keyIds = await sqlOf(onlyB)<{ key_id: string }>(
          "select distinct encode(substring(access_token_cipher from 2 for 8), 'hex') as key_id from tokens union select distinct encode(substring(refresh_token_cipher from 2 for 8), 'hex') from tokens",
        );
        expect(keyIds).toHaveLength(1);
      } finally {
        await onlyB.stop();
      }
      // Key A alone opens nothing any more.
      await expect(start(place, { TOKEN_KEY: keyA })).rejects.toThrow(/encrypted under a key this service does not hold/);
      // rotate-key without the old key cannot help either, and says why.
      const err: string[] = [];
      expect(await rotateKeyCommand([], baseEnv(place, { TOKEN_KEY: newKey() }), { ...silent, err: (t) => err.push(t) })).toBe(1);
      expect(err.join('')).toMatch(/^Could not rotate the token key: the database holds tokens encrypted under a key this service does not hold/);
    } finally {
      await place.drop();
    }
  });

  test('rotate-key: --help, and TOKEN_KEY is required', async () => {
    const out: string[] = [];
    expect(await rotateKeyCommand(['--help'], {}, { ...silent, out: (t) => out.push(t) })).toBe(0);
    expect(out.join('')).toMatch(/^usage: TOKEN_KEY=<new key> TOKEN_KEY_PREVIOUS=<old key> npm run rotate-key/);
    const err: string[] = [];
    expect(await rotateKeyCommand([], { DATA_DIR: join(tmpdir(), 'uts-never-created') }, { ...silent, err: (t) => err.push(t) })).toBe(1);
    expect(err.join('')).toMatch(/TOKEN_KEY must be set to the new key/);
  });
});

describe('existing rows', () => {
  test('plain rows of an older schema are encrypted at start, still authenticate, read back, and leave no plain value behind', async () => {
    const place = await newTestDatabase();
    try {
      const env = { TOKEN_KEY: newKey() };
      // The schema before secrets at rest, with tokens written the old way (plain).
      const old = await openDatabase(loadConfig(baseEnv(place, env)), { schema: databaseSchemaOf(MODULES) });
      const plain = Array.from({ length: 3 }, (_, i) => `plain-${i}-${randomBytes(8).toString('hex')}`);
      try {
        await old.orm.migrator.up({ to: 'Migration20261123100000_right_bigint' });
        const em = old.orm.em.fork();
        await em.execute("insert into users (first_name, last_name, out_key) values ('Old', 'Owner', 'old')");
        const [{ id: userId }] = await em.execute<{ id: string }[]>('select id from users');
        await em.execute('insert into tokens (user_id, access_token, refresh_token, scope) values (?, ?, ?, ?), (?, ?, ?, ?), (?, ?, ?, ?)', [
          userId,
          plain[0],
          'old-refresh',
          '*',
          userId,
          plain[1],
          '',
          'user:read',
          userId,
          plain[2],
          '',
          'token:read',
        ]);
        await em.execute('update tokens set deleted_at = now() where access_token = ?', [plain[2]]);
      } finally {
        await old.close();
      }

      const service = await start(place, { ...env, BOOTSTRAP_TOKEN: plain[0] });
      try {
        const sql = sqlOf(service);
        const columns = (await sql<{ column_name: string }>("select column_name from information_schema.columns where table_name = 'tokens'")).map(
          (c) => c.column_name,
        );
        expect(columns).not.toContain('access_token');
        expect(columns).not.toContain('refresh_token');
        const rows = await sql<{ id: string; hmac: Buffer; deleted: boolean }>(
          'select id, access_token_hmac as hmac, deleted_at is not null as deleted from tokens order by id',
        );
        expect(rows.map((r) => [r.hmac.equals(service.db.keyring.hash('accessToken', plain[Number(r.id) - 1])), r.deleted])).toEqual([
          [true, false],
          [true, false],
          [true, true],
        ]);
        // The bootstrap token was found as it was (by its keyed hash), not created again.
        expect(await sql('select count(*)::int as n from tokens')).toEqual([{ n: 3 }]);
        const first = await call(service, 'GET', '/token/1', plain[0]);
        expect(first.status).toBe(200);
        expect(first.body).toMatchObject({ accessToken: plain[0], refreshToken: 'old-refresh', scope: '*', version: '1' });
        expect((await call(service, 'GET', '/user/1', plain[1])).status).toBe(200);
        expect((await call(service, 'GET', '/user/1', plain[2])).status).toBe(401);
      } finally {
        await service.stop();
      }
      expectAbsent(await dumpOf(place), place.name ? [...plain, 'old-refresh'] : []);

      // A later start converts nothing and changes nothing.
      const again = await start(place, { ...env, BOOTSTRAP_TOKEN: plain[0] });
      try {
        expect((await call(again, 'GET', '/token/2', plain[0])).body.accessToken).toBe(plain[1]);
        expect((await call(again, 'GET', '/user/1', plain[1])).status).toBe(200);
        expect(await sqlOf(again)('select count(*)::int as n from tokens')).toEqual([{ n: 3 }]);
      } finally {
        await again.stop();
      }
    } finally {
      await place.drop();
    }
  });
});
