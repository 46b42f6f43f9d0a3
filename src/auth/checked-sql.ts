import { LRUCache } from 'lru-cache';
import type { ArrayRows, PoolSql, Sql, Statement, Transaction } from '../db/sql.js';
import type { Database } from '../db/database.js';
import { liveTokenByHashes, liveTokenGate, liveTokenOfRow, notLive, withLiveToken, type LiveToken } from './authenticate.js';

/**
 * A request's token check in its first statement: one round trip fewer for every request.
 *
 * Every request's bearer token is checked against the database (SPEC §2: a revoked token is
 * refused at the next request, on every instance). A request used to send that check and then its
 * own statements: two round trips for a record by id or a PATCH, and the first was ~40 % of a
 * read's cost (docs/benchmarks.md). Here the check rides in the request's first statement, so it
 * sees the very snapshot that statement sees: a read is answered beside the token (withLiveToken),
 * a write runs only if the token is live and as the request was served (liveTokenGate).
 *
 * To run that statement before the check's answer, the request needs its caller (the permission is
 * checked first, and a service shapes its statement by the caller): TokenHints keeps what the last
 * check of each token found, as a hint. A hint grants nothing: a read is answered, a write commits,
 * only where its statement found that token live and the same (id, user, scope); when it is not
 * live the answer is a 401, and when it changed, the request runs again with the token looked up
 * afresh (src/http/routes.ts), having changed nothing. So a hint can make a request cheaper,
 * never let a revoked token through.
 */

/** The snapshot asked for with the token (the read cache wanted it). */
const WANTED = { wantsSnapshot: () => true };

/**
 * The instance's token checks, for REST and GraphQL alike: a token looked up by itself (lookUp),
 * and what the last checks of each token found, by its keyed hash (no secret: the database holds
 * the same), for a request to check it in its own first statement (checkedFor).
 */
export class TokenHints {
  constructor(private readonly db: Pick<Database, 'sql' | 'readFloors'>) {}

  // ~150 bytes a token (its key, the hint, the LRU's slots) with a short scope, ~650 with one of 255
  // characters: 50,000 tokens in use at once are 7.5 to 33 MB.
  private readonly hints = new LRUCache<string, LiveToken>({ max: 50_000 });

  /** Scope texts as kept, one string per distinct text (tokens share a few; each row read brings a new copy). */
  private readonly scopes = new Map<string, string>();

  private static key(hashes: readonly Buffer[]): string {
    // The hash under the current key (a value's hashes under other keys come with it), one byte a
    // character: 32 characters where base64 took 44.
    return hashes[0].toString('latin1');
  }

  private scopeText(scope: string): string {
    let kept = this.scopes.get(scope);
    if (kept === undefined) {
      if (this.scopes.size >= 1024) this.scopes.clear();
      this.scopes.set(scope, (kept = scope));
    }
    return kept;
  }

  get(hashes: readonly Buffer[]): LiveToken | undefined {
    return this.hints.get(TokenHints.key(hashes));
  }

  /**
   * The statements of a request with this token, checked in their first; null when it is to be
   * looked up first (lookUp): it has no hint, or the lookup must read more than the token (the
   * snapshot the read cache wants, the read floor a replica waits for).
   */
  checkedFor(hashes: Buffer[] | null, wantsSnapshot: boolean): CheckedSql | null {
    if (!hashes || wantsSnapshot || this.db.readFloors) return null;
    const hint = this.get(hashes);
    return hint ? new CheckedSql(this.db.sql, hashes, hint, this) : null;
  }

  /** The live token with these hashes, looked up by itself (with the snapshot when it is wanted, and the read floor), its hint kept. */
  async lookUp(hashes: Buffer[] | null, wantsSnapshot: boolean): Promise<LiveToken | null> {
    const token = await liveTokenByHashes(this.db.sql, hashes, { snapshot: wantsSnapshot ? WANTED : null, floor: this.db.readFloors });
    if (hashes) this.found(hashes, token);
    return token;
  }

  /** What a check found (null: not live, the hint goes). */
  found(hashes: readonly Buffer[], token: LiveToken | null): void {
    if (token) this.hints.set(TokenHints.key(hashes), { tokenId: token.tokenId, userId: token.userId, scope: this.scopeText(token.scope) });
    else this.hints.delete(TokenHints.key(hashes));
  }
}

/** The check found the token live but not as its hint said (its scope, or its user, changed): the request runs again. */
export class StaleTokenHint extends Error {
  override name = 'StaleTokenHint';
}

export const sameToken = (a: LiveToken, b: LiveToken) => a.tokenId === b.tokenId && a.userId === b.userId && a.scope === b.scope;

/** Statements that may carry the check: plain reads (a data-modifying `with` must stay at the top level). */
const CHECKABLE = /^\s*select\s/i;

/** The statement's own rows beside the token (withLiveToken: its first four columns are the check's). */
function readRows<R>(result: ArrayRows): R[] {
  const names = result.names;
  const rows: R[] = [];
  for (const values of result.rows) {
    if (values[3] !== true) continue; // the statement found nothing: the token's row alone
    const row: Record<string, unknown> = {};
    for (let i = 4; i < names.length; i++) row[names[i]] = values[i];
    rows.push(row as R);
  }
  return rows;
}

/**
 * The statements of one request whose token is checked by its first (see above). `verified()` is
 * what the check found, once it ran: the pipeline answers only when that is the hint.
 *
 * The first statement carries the check: a plain read beside the token, or a write that can take
 * a gate (src/resource/writes.ts), conditional on it. Anything else first (a transaction, a write
 * that cannot), and every write after it, waits for the check's answer; so do all later statements
 * of a request that may write (mayWrite), whose next steps may act on what a statement answered.
 * The reads after a read-only request's first run beside it: that request answers nothing before
 * the check passed (answer).
 */
export class CheckedSql implements Sql {
  private check: Promise<LiveToken | null> | null = null;
  private writes = false;

  constructor(
    private readonly sql: PoolSql,
    private readonly hashes: Buffer[],
    /** The token as last seen: the request's caller until the check says otherwise. */
    readonly hint: LiveToken,
    private readonly hints: TokenHints,
  ) {}

  /** The request may write (a REST write, a GraphQL mutation): past the first statement, nothing runs before the check passed. */
  mayWrite(): this {
    this.writes = true;
    return this;
  }

  /**
   * Runs a request's `work` on these statements, then answers as the check found (it waits for it,
   * and checks by itself when no statement carried it): true when the token was as hinted (the
   * work's outcome stands, its failure thrown again), a 401 when it is not live, false when it
   * changed (the caller runs the request again, with the token looked up afresh); in both of
   * these, `undo` first takes back what the work set of the answer.
   */
  async answer(work: () => Promise<void>, undo: () => void): Promise<boolean> {
    let failure: { err: unknown } | null = null;
    try {
      await work();
    } catch (err) {
      failure = { err };
    }
    const token = await this.verified();
    if (token && sameToken(token, this.hint)) {
      if (failure) throw failure.err;
      return true;
    }
    // Not the work's answer: nothing it set (a header) may go out with the 401 or the next run.
    undo();
    this.hints.found(this.hashes, token);
    if (!token) throw notLive();
    return false;
  }

  /**
   * Resolves once the check found the token as hinted: what must come before anything the first
   * statement could not carry it in, and before any effect outside the database (whenConfirmed:
   * src/db/sql.ts).
   */
  async confirm(): Promise<void> {
    this.expectHinted(await this.verified());
  }

  /** A 401 when the check found no live token, StaleTokenHint when it found it changed. */
  private expectHinted(token: LiveToken | null): void {
    if (!token) throw notLive();
    if (!sameToken(token, this.hint)) throw new StaleTokenHint();
  }

  rows<R>(text: string, params: readonly unknown[] = []): Promise<R[]> {
    if (CHECKABLE.test(text)) {
      if (this.check === null) return this.carry<R>(withLiveToken(this.hashes.length, text), [...this.hashes, ...params]);
      // A read beside the first, in a request that only reads, needs not wait.
      if (!this.writes) return this.sql.rows<R>(text, params);
    }
    return this.afterCheck<R>(text, params);
  }

  /** A write: the first statement carries the check in its gate (nothing is written unless the token is as hinted). */
  write<R>(statement: Statement): Promise<R[]> {
    if (this.check === null && statement.gated) {
      const { tokenId, userId, scope } = this.hint;
      return this.carry<R>(statement.gated(liveTokenGate(this.hashes.length)), [...this.hashes, tokenId, userId, scope, ...statement.params]);
    }
    return this.afterCheck<R>(statement.text, statement.params);
  }

  /** A statement that must not run before the check passed (a `with` may write). */
  private afterCheck<R>(text: string, params: readonly unknown[]): Promise<R[]> {
    return this.confirm().then(() => this.sql.rows<R>(text, params));
  }

  /** Runs the statement that carries the check (its rows beside the token: withLiveToken), its own rows answered once the token is as hinted. */
  private carry<R>(text: string, params: readonly unknown[]): Promise<R[]> {
    const fused = this.sql.arrays(text, params);
    // A statement that fails on its own (a value PostgreSQL refuses, a unique violation) takes its
    // check with it: then the token is checked by itself, so that the answer is still the token's
    // (a 401 when not live). Nothing of it was written: the statement failed as a whole.
    this.settle(
      fused.then(
        (result) => liveTokenOfRow(result.rows[0]),
        () => liveTokenByHashes(this.sql, this.hashes),
      ),
    );
    return fused.then((result) => {
      this.expectHinted(liveTokenOfRow(result.rows[0]));
      return readRows<R>(result);
    });
  }

  /** A transaction only after the check. */
  async transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
    await this.confirm();
    return this.sql.transaction(work);
  }

  /** What the check found (null: the token is not live); checks by itself when no statement carried it. */
  verified(): Promise<LiveToken | null> {
    if (this.check === null) this.settle(liveTokenByHashes(this.sql, this.hashes));
    return this.check!;
  }

  private settle(check: Promise<LiveToken | null>): void {
    this.check = check;
    // Awaited by verified() once the request is done; a failure meanwhile is not unhandled.
    check.catch(() => undefined);
  }
}
