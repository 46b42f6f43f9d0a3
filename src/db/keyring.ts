import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { chmod, link, mkdir, open, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError, KEY_BYTES, parseKey } from '../config.js';

/**
 * Secrets at rest (docs/operations.md#secrets-at-rest): the values of `secret` fields (src/resource/field.ts; a token's
 * `accessToken` and `refreshToken`) are never stored as they are. Each is stored twice, in two
 * forms that are useless without the key:
 *
 * - a keyed hash, HMAC-SHA-256, for lookup (the bearer check, list filters) and for the unique
 *   index of live access tokens: equal values give equal hashes, so `=` and a unique index work;
 * - an AES-256-GCM ciphertext for read-back (the record still answers its values):
 *   `[format 0x01][key id, 8 bytes][nonce, 12 random bytes][ciphertext][tag, 16 bytes]`, with the
 *   format byte, the key id and the field's name as additional authenticated data (a ciphertext
 *   moved to another field, or to another key id, fails to open).
 *
 * The 32-byte key (TOKEN_KEY, or DATA_DIR/token.key on the embedded database) is never used as
 * such: HKDF-SHA-256 derives an encryption key, a hashing key and the key id from it. The key id
 * (8 bytes derived one-way from the key, not the key) is what tells rows of the current key from
 * rows of TOKEN_KEY_PREVIOUS during a rotation. The key itself never goes into the database.
 */

const FORMAT = 0x01;
const KEY_ID_BYTES = 8;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + KEY_ID_BYTES + NONCE_BYTES;

/**
 * The name of a secret field (a token's `accessToken`): part of what is hashed and of a
 * ciphertext's authenticated data, so that a value moved to another field neither matches nor opens.
 */
export type SecretField = string;

export class TokenKey {
  /** 8 bytes derived from the key: stored in every ciphertext, so rotation can tell keys apart. */
  readonly id: Buffer;
  readonly #encryption: Buffer;
  readonly #hashing: Buffer;

  constructor(raw: Buffer) {
    if (raw.length !== KEY_BYTES) throw new Error(`a token key has ${KEY_BYTES} bytes`);
    const derive = (info: string, length: number) => Buffer.from(hkdfSync('sha256', raw, Buffer.alloc(0), `user-token-service ${info}`, length));
    this.id = derive('token key id', KEY_ID_BYTES);
    this.#encryption = derive('token encryption', 32);
    this.#hashing = derive('token lookup', 32);
  }

  /** The key id in hex, as logs and messages show it. */
  get hexId(): string {
    return this.id.toString('hex');
  }

  hash(field: SecretField, value: string): Buffer {
    return createHmac('sha256', this.#hashing).update(`${field}\0${value}`, 'utf8').digest();
  }

  seal(field: SecretField, value: string): Buffer {
    const header = Buffer.alloc(HEADER_BYTES);
    header[0] = FORMAT;
    this.id.copy(header, 1);
    randomBytes(NONCE_BYTES).copy(header, 1 + KEY_ID_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#encryption, header.subarray(1 + KEY_ID_BYTES));
    cipher.setAAD(Buffer.concat([header.subarray(0, 1 + KEY_ID_BYTES), Buffer.from(field)]));
    const body = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
    return Buffer.concat([header, body, cipher.getAuthTag()]);
  }

  /** The value of a ciphertext sealed with this key (throws when it was not, or was altered). */
  open(field: SecretField, sealed: Buffer): string {
    const decipher = createDecipheriv('aes-256-gcm', this.#encryption, sealed.subarray(1 + KEY_ID_BYTES, HEADER_BYTES));
    decipher.setAAD(Buffer.concat([sealed.subarray(0, 1 + KEY_ID_BYTES), Buffer.from(field)]));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    return Buffer.concat([decipher.update(sealed.subarray(HEADER_BYTES, sealed.length - TAG_BYTES)), decipher.final()]).toString('utf8');
  }
}

/** A stored secret this service cannot open: sealed under a key it does not hold, or altered. */
export class UnreadableSecretError extends Error {
  override name = 'UnreadableSecretError';
}

/** The key id of a stored ciphertext (hex), or null when it is not one of ours. */
function keyIdOf(sealed: Buffer): string | null {
  return sealed.length >= HEADER_BYTES + TAG_BYTES && sealed[0] === FORMAT ? sealed.subarray(1, 1 + KEY_ID_BYTES).toString('hex') : null;
}

/** The SQL expression of a ciphertext column's key id in hex (matches `keyIdOf`). */
export const keyIdSql = (column: string) => `encode(substring(${column} from 2 for ${KEY_ID_BYTES}), 'hex')`;

/**
 * The keys a service holds: `current` (TOKEN_KEY or the key file) seals and hashes every write;
 * `previous` (TOKEN_KEY_PREVIOUS) still opens and matches rows not yet re-encrypted by
 * `npm run rotate-key`.
 */
export class Keyring {
  readonly keys: readonly TokenKey[];

  constructor(
    readonly current: TokenKey,
    readonly previous: TokenKey | null = null,
  ) {
    this.keys = previous && !previous.id.equals(current.id) ? [current, previous] : [current];
  }

  static of(current: Buffer, previous?: Buffer | null): Keyring {
    return new Keyring(new TokenKey(current), previous ? new TokenKey(previous) : null);
  }

  /** The key ids (hex) of every key held. */
  get hexIds(): string[] {
    return this.keys.map((k) => k.hexId);
  }

  /** The keyed hash under the current key: what a write stores. */
  hash(field: SecretField, value: string): Buffer {
    return this.current.hash(field, value);
  }

  /** The keyed hashes under every key held: what a lookup or a filter matches against. */
  hashes(field: SecretField, value: string): Buffer[] {
    return this.keys.map((k) => k.hash(field, value));
  }

  seal(field: SecretField, value: string): Buffer {
    return this.current.seal(field, value);
  }

  open(field: SecretField, sealed: Buffer): string {
    const id = keyIdOf(sealed);
    const key = this.keys.find((k) => k.hexId === id);
    if (!key) throw new UnreadableSecretError(`a token's ${field} is encrypted under a key this service does not hold (key id ${id ?? 'unknown'})`);
    try {
      return key.open(field, sealed);
    } catch {
      throw new UnreadableSecretError(`a token's ${field} does not decrypt under key ${id}: it was altered`);
    }
  }
}

/** The key file of the embedded database, in DATA_DIR. */
export const KEY_FILE = 'token.key';

/** Whether a path names something (a dangling link does not). */
async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/**
 * A new key file at `path`, unless another process puts one there first: written whole under a name
 * of its own, then linked into place (which fails when the file is there), so that a process
 * starting beside another never reads a key file not yet written.
 */
async function placeKeyFile(path: string): Promise<void> {
  const written = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    const file = await open(written, 'wx', 0o600);
    try {
      await file.writeFile(`${randomBytes(KEY_BYTES).toString('base64')}\n`);
      await file.sync();
    } finally {
      await file.close();
    }
    await chmod(written, 0o600); // whatever the umask
    await link(written, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    await rm(written, { force: true });
  }
}

/**
 * The embedded database's key when TOKEN_KEY is not set: DATA_DIR/token.key, created on first
 * start (32 random bytes, base64, mode 0600, put in place whole and exclusively so two processes
 * never write two keys, nor read one half written) and read on every later start. A key file others may read is refused.
 */
export async function embeddedKey(dataDir: string): Promise<Buffer> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, KEY_FILE);
  // Once the key file is there (every start but the first), nothing is written: no candidate key
  // made, synced to disk and unlinked at each start, no file left beside it by a crash meanwhile.
  if (!(await exists(path))) await placeKeyFile(path);
  const info = await stat(path);
  if (process.platform !== 'win32' && (info.mode & 0o077) !== 0) {
    throw new ConfigError(`${path} holds the token key and may be read by other users (mode ${(info.mode & 0o777).toString(8)}); run chmod 600 on it`);
  }
  const key = parseKey(path, await readFile(path, 'utf8'));
  if (!key) throw new ConfigError(`${path} is empty; remove it only if the database holds no token (a new key cannot read the old tokens)`);
  return key;
}

/**
 * The service's keys (docs/operations.md#secrets-at-rest): TOKEN_KEY (required with DATABASE_URL, checked by loadConfig), else
 * on the embedded database the key file; TOKEN_KEY_PREVIOUS beside either.
 */
export async function loadKeyring(config: { tokenKey?: Buffer; tokenKeyPrevious?: Buffer; databaseUrl?: string; dataDir: string }): Promise<Keyring> {
  let current = config.tokenKey;
  if (!current) {
    if (config.databaseUrl) throw new ConfigError('TOKEN_KEY is required with DATABASE_URL (32 bytes in base64; generate one with: openssl rand -base64 32)');
    current = await embeddedKey(config.dataDir);
  }
  return Keyring.of(current, config.tokenKeyPrevious);
}
