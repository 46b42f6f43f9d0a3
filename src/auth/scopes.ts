import { AppError } from '../errors.js';
import { can, parseScopes, type Caller, type Permission } from './caller.js';

/** A module's scope: its name (`user`) and what it may be granted for (audit: only `read`). */
export interface ScopeSpec {
  name: string;
  actions: readonly ('read' | 'write')[];
}

/**
 * The scope words this service understands, built from its modules' scopes (src/module/registry.ts):
 * `*`, and for each scope `<name>:<action>` and `<name>:*` (`user:read`, `user:write`, `user:*`;
 * `audit:read`, `audit:*`). A token may hold other words: they pass through untouched, neither
 * granted nor refused. A module added to src/modules.ts adds its words here, so that the grant rule
 * below covers it without an edit.
 */
export class ScopeVocabulary {
  readonly words: ReadonlySet<string>;
  /** The permissions (`user:read`): what routes, resolvers and services may ask for. */
  readonly permissions: ReadonlySet<string>;

  constructor(scopes: readonly ScopeSpec[]) {
    const permissions = new Set<string>();
    const words = new Set<string>(['*']);
    for (const { name, actions } of scopes) {
      if (!/^[a-z][a-z_]*$/.test(name)) throw new Error(`a scope name is lower-case letters: "${name}"`);
      if (words.has(`${name}:*`)) throw new Error(`two modules declare the scope "${name}"`);
      words.add(`${name}:*`);
      for (const action of actions) {
        permissions.add(`${name}:${action}`);
        words.add(`${name}:${action}`);
      }
    }
    this.words = words;
    this.permissions = permissions;
  }

  /**
   * Whether a scope word grants anything in this service (as `can` reads it): `*`, a permission,
   * or `<name>:*` of a module's scope (`npm run token` warns of the words that do not: a typo).
   */
  grantsSomething(word: string): boolean {
    return this.words.has(word);
  }

  /** Refuses (at start) a permission no module declares: a typo would otherwise refuse every caller but `*`. */
  check(permission: string, where: string): void {
    if (!this.permissions.has(permission)) {
      throw new Error(`${where} needs the permission "${permission}", which no module declares (known: ${[...this.permissions].join(', ')})`);
    }
  }

  /**
   * The grant rule (docs/rest.md#permissions): a token may only carry this service's words that its
   * creator holds itself, and only such tokens may be changed, revoked or ended in any other way
   * (the delete of their user): `token:write` or `user:write` lets a caller manage records, not end
   * a credential stronger than its own. The words of `scope` this service understands that the
   * caller could not grant (none: it could have granted the token).
   */
  ungrantableWords(caller: Caller, scope: string): string[] {
    if (caller.scopes.has('*')) return [];
    const missing: string[] = [];
    for (const word of parseScopes(scope)) {
      if (!this.words.has(word)) continue;
      const granted = word === '*' ? false : word.endsWith(':*') ? caller.scopes.has(word) : can(caller, word as Permission);
      if (!granted) missing.push(word);
    }
    return missing;
  }

  /** Refuses (403) a scope the caller could not grant: naming the first word it lacks. */
  checkGrantable(caller: Caller, scope: string): void {
    const [word] = this.ungrantableWords(caller, scope);
    if (word !== undefined) throw AppError.forbidden(word, `this token cannot grant, change or revoke the scope "${word}" because it does not hold it`);
  }

  /** Whether the caller could have granted this scope (and so may change or revoke its token). */
  grantable(caller: Caller, scope: string): boolean {
    return this.ungrantableWords(caller, scope).length === 0;
  }
}
