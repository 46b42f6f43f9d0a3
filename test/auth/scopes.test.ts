import { can, parseScopes, requirePermission, type Caller } from '../../src/auth/caller.js';
import { ScopeVocabulary } from '../../src/auth/scopes.js';
import { refusal } from '../support/refusal.js';

/** Scope words and the grant rule (src/auth/caller.ts, src/auth/scopes.ts), without a database. */

const caller = (scope: string): Caller => ({ tokenId: 1, userId: 1, scopes: parseScopes(scope), client: 'test' });

const vocabulary = new ScopeVocabulary([
  { name: 'user', actions: ['read', 'write'] },
  { name: 'token', actions: ['read', 'write'] },
  { name: 'audit', actions: ['read'] },
]);

describe('parseScopes', () => {
  test('splits on any run of white space, drops empties and duplicates, keeps case', () => {
    expect([...parseScopes('  user:read\ttoken:write\n user:read  ')]).toEqual(['user:read', 'token:write']);
    expect([...parseScopes('')]).toEqual([]);
    expect([...parseScopes('User:Read')]).toEqual(['User:Read']);
  });
});

describe('can', () => {
  test('`*` grants every permission', () => {
    expect(can(caller('*'), 'user:write')).toBe(true);
    expect(can(caller('*'), 'anything:read')).toBe(true);
  });

  test('`<name>:*` grants read and write of that scope only', () => {
    expect(can(caller('user:*'), 'user:read')).toBe(true);
    expect(can(caller('user:*'), 'user:write')).toBe(true);
    expect(can(caller('user:*'), 'token:read')).toBe(false);
  });

  test('an exact word grants itself only: write does not imply read', () => {
    expect(can(caller('user:write'), 'user:write')).toBe(true);
    expect(can(caller('user:write'), 'user:read')).toBe(false);
    expect(can(caller('user:read'), 'user:write')).toBe(false);
  });

  test('matching is exact: no case folding, no prefixes', () => {
    expect(can(caller('User:read'), 'user:read')).toBe(false);
    expect(can(caller('users:read'), 'user:read')).toBe(false);
    expect(can(caller('user'), 'user:read')).toBe(false);
    expect(can(caller('*:read'), 'user:read')).toBe(false);
    expect(can(caller(''), 'user:read')).toBe(false);
  });

  test('requirePermission refuses with FORBIDDEN naming the permission', () => {
    expect(() => requirePermission(caller('user:read'), 'user:read')).not.toThrow();
    const err = refusal(() => requirePermission(caller('user:read'), 'token:write'));
    expect(err.code).toBe('FORBIDDEN');
    expect(err.info.permission).toBe('token:write');
    expect(err.message).toBe('this token lacks the "token:write" permission');
  });
});

describe('ScopeVocabulary', () => {
  test('has `*`, each declared action and `<name>:*`; permissions are the actions only', () => {
    expect([...vocabulary.words].sort()).toEqual(['*', 'audit:*', 'audit:read', 'token:*', 'token:read', 'token:write', 'user:*', 'user:read', 'user:write']);
    expect([...vocabulary.permissions].sort()).toEqual(['audit:read', 'token:read', 'token:write', 'user:read', 'user:write']);
    expect(vocabulary.grantsSomething('audit:write')).toBe(false);
    expect(vocabulary.grantsSomething('user:*')).toBe(true);
    expect(vocabulary.grantsSomething('profile')).toBe(false);
  });

  test('refuses a scope name that is not lower-case letters, and a scope declared twice', () => {
    for (const name of ['User', 'user-name', '1user', '', 'user:read']) {
      expect(() => new ScopeVocabulary([{ name, actions: ['read'] }])).toThrow(/a scope name is lower-case letters/);
    }
    expect(() => new ScopeVocabulary([{ name: 'user_group', actions: ['read'] }])).not.toThrow();
    expect(
      () =>
        new ScopeVocabulary([
          { name: 'user', actions: ['read'] },
          { name: 'user', actions: ['write'] },
        ]),
    ).toThrow('two modules declare the scope "user"');
  });

  test('check refuses a permission no module declares, naming where it was asked for', () => {
    expect(() => vocabulary.check('user:read', 'GET /user/')).not.toThrow();
    expect(() => vocabulary.check('audit:write', 'DELETE /audit/')).toThrow(
      /^DELETE \/audit\/ needs the permission "audit:write", which no module declares \(known: /,
    );
    expect(() => vocabulary.check('usr:read', 'x')).toThrow(/"usr:read"/);
  });

  describe('the grant rule', () => {
    test('`*` may grant anything, itself included', () => {
      expect(vocabulary.ungrantableWords(caller('*'), '* user:write audit:*')).toEqual([]);
    });

    test('a caller grants the words it holds, directly or through `<name>:*`', () => {
      expect(vocabulary.ungrantableWords(caller('token:write user:read'), 'user:read')).toEqual([]);
      expect(vocabulary.ungrantableWords(caller('user:*'), 'user:read user:write user:*')).toEqual([]);
      expect(vocabulary.grantable(caller('user:*'), 'user:write')).toBe(true);
    });

    test('token:write alone cannot grant another scope, `*`, or `<name>:*` it only partly holds', () => {
      expect(vocabulary.ungrantableWords(caller('token:write'), 'user:write')).toEqual(['user:write']);
      expect(vocabulary.ungrantableWords(caller('token:write'), '*')).toEqual(['*']);
      expect(vocabulary.ungrantableWords(caller('user:read user:write'), 'user:*')).toEqual(['user:*']);
      expect(vocabulary.ungrantableWords(caller('token:write'), 'token:read user:read token:write')).toEqual(['token:read', 'user:read']);
      expect(vocabulary.grantable(caller('token:write'), 'user:read')).toBe(false);
    });

    test('words the service does not understand pass untouched: neither granted nor refused', () => {
      expect(vocabulary.ungrantableWords(caller('token:write'), 'openid profile email audit:write')).toEqual([]);
      expect(vocabulary.grantable(caller(''), 'openid')).toBe(true);
    });

    test('checkGrantable answers 403 naming the first word the caller lacks', () => {
      expect(() => vocabulary.checkGrantable(caller('token:write'), 'token:write openid')).not.toThrow();
      const err = refusal(() => vocabulary.checkGrantable(caller('token:write'), 'openid audit:read user:write'));
      expect(err.code).toBe('FORBIDDEN');
      expect(err.info.permission).toBe('audit:read');
      expect(err.message).toBe('this token cannot grant, change or revoke the scope "audit:read" because it does not hold it');
    });
  });
});
