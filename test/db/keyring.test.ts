import { randomBytes } from 'node:crypto';
import { watch } from 'node:fs';
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, parseKey } from '../../src/config.js';
import { embeddedKey, KEY_FILE, Keyring, loadKeyring, TokenKey, UnreadableSecretError } from '../../src/db/keyring.js';

/**
 * The key ring of secrets at rest (src/db/keyring.ts, docs/operations.md#secrets-at-rest), without a
 * database: keyed hashes, ciphertexts that open only under their key and field, rotation with a
 * previous key, the embedded database's key file. test/tokens/keys.test.ts and
 * test/tokens/secrets.test.ts check the same through a service and its database.
 */

const keyA = Buffer.alloc(32, 0xa1);
const keyB = Buffer.alloc(32, 0xb2);

/** The error a function throws (fails the test if it throws nothing). */
function thrown(run: () => unknown): Error {
  try {
    run();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected an error');
}

describe('a token key', () => {
  test('is 32 bytes; its id is 8 bytes derived from it, not the key', () => {
    expect(() => new TokenKey(Buffer.alloc(31))).toThrow('a token key has 32 bytes');
    expect(() => new TokenKey(Buffer.alloc(33))).toThrow('a token key has 32 bytes');
    const key = new TokenKey(keyA);
    expect(key.id).toHaveLength(8);
    expect(key.hexId).toMatch(/^[0-9a-f]{16}$/);
    expect(keyA.includes(key.id)).toBe(false);
    expect(new TokenKey(Buffer.from(keyA)).hexId).toBe(key.hexId);
    expect(new TokenKey(keyB).hexId).not.toBe(key.hexId);
  });

  test('hashes a value under its field: equal for equal values, different for another field, value or key', () => {
    const a = new TokenKey(keyA);
    expect(a.hash('accessToken', 'secret')).toHaveLength(32);
    expect(a.hash('accessToken', 'secret').equals(a.hash('accessToken', 'secret'))).toBe(true);
    expect(a.hash('accessToken', 'secret').equals(a.hash('refreshToken', 'secret'))).toBe(false);
    expect(a.hash('accessToken', 'secret').equals(a.hash('accessToken', 'secreT'))).toBe(false);
    expect(a.hash('accessToken', 'secret').equals(new TokenKey(keyB).hash('accessToken', 'secret'))).toBe(false);
    // The field and the value are kept apart: ("a", "b\0c") is not ("a\0b", "c").
    expect(a.hash('a', 'b').equals(a.hash('a\u0000', 'b'))).toBe(false);
  });

  test('seals as [0x01][key id][12-byte nonce][ciphertext][16-byte tag], a fresh nonce each time, and opens it', () => {
    const key = new TokenKey(keyA);
    const sealed = key.seal('accessToken', 'the value ✓');
    expect(sealed[0]).toBe(0x01);
    expect(sealed.subarray(1, 9).equals(key.id)).toBe(true);
    expect(sealed).toHaveLength(1 + 8 + 12 + Buffer.byteLength('the value ✓') + 16);
    expect(sealed.includes(Buffer.from('the value'))).toBe(false);
    expect(key.seal('accessToken', 'the value ✓').equals(sealed)).toBe(false);
    expect(key.open('accessToken', sealed)).toBe('the value ✓');
    expect(key.open('accessToken', key.seal('accessToken', ''))).toBe('');
  });
});

describe('a key ring', () => {
  const current = Keyring.of(keyA);

  test('opens what it sealed', () => {
    expect(current.open('accessToken', current.seal('accessToken', 'abc'))).toBe('abc');
    expect(current.hexIds).toEqual([new TokenKey(keyA).hexId]);
  });

  test('a ciphertext moved to another field, altered anywhere, or cut short does not open', () => {
    const sealed = current.seal('accessToken', 'abc');
    expect(thrown(() => current.open('refreshToken', sealed))).toBeInstanceOf(UnreadableSecretError);
    for (const at of [9, 21, sealed.length - 1]) {
      const altered = Buffer.from(sealed);
      altered[at] ^= 0x01;
      const err = thrown(() => current.open('accessToken', altered));
      expect(err).toBeInstanceOf(UnreadableSecretError);
      expect(err.message).toBe(`a token's accessToken does not decrypt under key ${current.current.hexId}: it was altered`);
    }
    expect(thrown(() => current.open('accessToken', sealed.subarray(0, 20))).message).toMatch(/under a key this service does not hold \(key id unknown\)/);
    const otherFormat = Buffer.from(sealed);
    otherFormat[0] = 0x02;
    expect(thrown(() => current.open('accessToken', otherFormat))).toBeInstanceOf(UnreadableSecretError);
  });

  test('a ciphertext of a key it does not hold names that key id, never the value', () => {
    const foreign = Keyring.of(keyB).seal('accessToken', 'abc');
    const err = thrown(() => current.open('accessToken', foreign));
    expect(err).toBeInstanceOf(UnreadableSecretError);
    expect(err.name).toBe('UnreadableSecretError');
    expect(err.message).toBe(`a token's accessToken is encrypted under a key this service does not hold (key id ${new TokenKey(keyB).hexId})`);
  });

  describe('during a rotation (TOKEN_KEY_PREVIOUS)', () => {
    const rotating = Keyring.of(keyB, keyA);

    test('writes under the new key, and still opens and matches rows of the previous one', () => {
      const old = current.seal('accessToken', 'abc');
      expect(rotating.open('accessToken', old)).toBe('abc');
      const fresh = rotating.seal('accessToken', 'abc');
      expect(fresh.subarray(1, 9).equals(new TokenKey(keyB).id)).toBe(true);
      expect(thrown(() => current.open('accessToken', fresh))).toBeInstanceOf(UnreadableSecretError);
      expect(rotating.hash('accessToken', 'abc').equals(Keyring.of(keyB).hash('accessToken', 'abc'))).toBe(true);
      expect(rotating.hashes('accessToken', 'abc')).toEqual([Keyring.of(keyB).hash('accessToken', 'abc'), current.hash('accessToken', 'abc')]);
      expect(rotating.hexIds).toEqual([new TokenKey(keyB).hexId, new TokenKey(keyA).hexId]);
    });

    test('a previous key equal to the current one is held once', () => {
      const same = Keyring.of(keyA, Buffer.from(keyA));
      expect(same.keys).toHaveLength(1);
      expect(same.hashes('accessToken', 'abc')).toHaveLength(1);
      expect(Keyring.of(keyA, null).keys).toHaveLength(1);
    });

    test('once the previous key is dropped, its rows no longer open', () => {
      const old = current.seal('accessToken', 'abc');
      expect(thrown(() => Keyring.of(keyB).open('accessToken', old))).toBeInstanceOf(UnreadableSecretError);
    });
  });
});

describe('where the key comes from', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'keyring-test-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('TOKEN_KEY, with TOKEN_KEY_PREVIOUS beside it; without it, DATABASE_URL is refused', async () => {
    const ring = await loadKeyring({ tokenKey: keyB, tokenKeyPrevious: keyA, databaseUrl: 'postgres://x@127.0.0.1/db', dataDir: dir });
    expect(ring.hexIds).toEqual(Keyring.of(keyB, keyA).hexIds);
    await expect(loadKeyring({ databaseUrl: 'postgres://x@127.0.0.1/db', dataDir: dir })).rejects.toThrow(
      new ConfigError('TOKEN_KEY is required with DATABASE_URL (32 bytes in base64; generate one with: openssl rand -base64 32)'),
    );
  });

  test('the embedded database: a key file made once (mode 0600), the same key on every later start', async () => {
    const dataDir = join(dir, 'data');
    const first = await loadKeyring({ dataDir });
    const file = join(dataDir, KEY_FILE);
    if (process.platform !== 'win32') expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(parseKey(file, await readFile(file, 'utf8'))).toHaveLength(32);
    expect((await loadKeyring({ dataDir })).hexIds).toEqual(first.hexIds);
  });

  test('a later start writes nothing in DATA_DIR (no candidate key made and unlinked), and none leaves a file beside the key', async () => {
    const dataDir = join(dir, 'data');
    const first = await embeddedKey(dataDir);
    expect(await readdir(dataDir)).toEqual([KEY_FILE]);
    // What is created or removed in DATA_DIR during a second start, in order: a marker written after
    // it ends the list (inotify reports one directory's changes in the order they happened).
    const changed: string[] = [];
    const watcher = watch(dataDir);
    const marked = new Promise<void>((resolve) =>
      watcher.on('change', (_type, name) => {
        if (name === 'marker') resolve();
        else changed.push(String(name));
      }),
    );
    try {
      expect((await embeddedKey(dataDir)).equals(first)).toBe(true);
      await writeFile(join(dataDir, 'marker'), '');
      await marked;
    } finally {
      watcher.close();
    }
    expect(changed).toEqual([]);
  });

  test('processes starting at once on a new DATA_DIR read one key, never a file half written', async () => {
    // One race is lost now and then only: many, one after the other.
    for (let i = 0; i < 100; i++) {
      const [a, b] = await Promise.all([embeddedKey(join(dir, `race-${i}`)), embeddedKey(join(dir, `race-${i}`))]);
      expect(a.equals(b)).toBe(true);
    }
  });

  test('a key file others may read, an empty one or a malformed one stops the start', async () => {
    const file = join(dir, KEY_FILE);
    await writeFile(file, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
    if (process.platform !== 'win32') {
      await chmod(file, 0o644);
      await expect(embeddedKey(dir)).rejects.toThrow(/may be read by other users \(mode 644\); run chmod 600 on it/);
      await chmod(file, 0o600);
    }
    await writeFile(file, '\n');
    await expect(embeddedKey(dir)).rejects.toThrow(/is empty; remove it only if the database holds no token/);
    await writeFile(file, 'c2hvcnQ=\n');
    await expect(embeddedKey(dir)).rejects.toThrow(/must be 32 bytes in base64 \(44 characters\), but it decodes to 5 bytes/);
  });
});
