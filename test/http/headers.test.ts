import { returnPreference } from '../../src/http/presenter.js';
import { parseAttrs } from '../../src/resource/input.js';
import { headerCount, headerText } from '../../src/shared/headers.js';
import { tokens } from '../../src/tokens/token.resource.js';
import { users } from '../../src/users/user.resource.js';
import { refusal } from '../support/refusal.js';

/**
 * The request headers of the original service's wire dialect, read without a service: `Prefer`
 * (RFC 7240's `return`), `Attrs` (the fields a PATCH writes) and the header text beneath both.
 * test/http/dialect.test.ts checks the same over real HTTP.
 */

/** A header's UTF-8 bytes as Node hands them over: each byte a latin1 character. */
const asNodeReadsIt = (text: string) => Buffer.from(text, 'utf8').toString('latin1');

describe('Prefer: return', () => {
  test('no header, or no return preference, states nothing', () => {
    expect(returnPreference(undefined)).toBeNull();
    expect(returnPreference('')).toBeNull();
    expect(returnPreference('respond-async, wait=10')).toBeNull();
  });

  test('representation and minimal, in any case, quoted or not, with parameters and spaces', () => {
    expect(returnPreference('return=representation')).toBe('representation');
    expect(returnPreference('return=minimal')).toBe('minimal');
    expect(returnPreference('RETURN=Representation')).toBe('representation');
    expect(returnPreference('return="minimal"')).toBe('minimal');
    expect(returnPreference(' return = representation ; charset=utf-8')).toBe('representation');
  });

  test('found among other preferences, as several Prefer headers arrive joined by ", "', () => {
    expect(returnPreference('respond-async, return=representation')).toBe('representation');
    expect(returnPreference('wait=5;x=y, handling=lenient, return=minimal')).toBe('minimal');
  });

  test('of a return given more than once, only the first counts (RFC 7240 §2), even when the first is unknown', () => {
    expect(returnPreference('return=minimal, return=representation')).toBe('minimal');
    expect(returnPreference('return=everything, return=representation')).toBeNull();
    expect(returnPreference('return, return=representation')).toBeNull();
  });

  test('names are matched whole: returned=… or x-return=… are other preferences', () => {
    expect(returnPreference('returned=representation')).toBeNull();
    expect(returnPreference('x-return=representation')).toBeNull();
  });
});

describe('Attrs', () => {
  test('no header, or one naming nothing, leaves the body to say what changes', () => {
    expect(parseAttrs(undefined, users)).toBeUndefined();
    expect(parseAttrs('', users)).toBeUndefined();
    expect(parseAttrs(' , ,\t', users)).toBeUndefined();
  });

  test('comma-separated names, spaces ignored, matched in any case, answered under their own names, each once', () => {
    expect(parseAttrs('firstName, lastName', users)).toEqual(['firstName', 'lastName']);
    expect(parseAttrs(' FIRSTNAME ,lastname,,firstName ', users)).toEqual(['firstName', 'lastName']);
    expect(parseAttrs('userid,Scope', tokens)).toEqual(['userID', 'scope']);
  });

  test('read-only names are skipped in any case, whatever the resource', () => {
    expect(parseAttrs('id, createdAt, UPDATEDAT, deletedAt, password, rememberToken, status', users)).toEqual(['status']);
    expect(parseAttrs('client, version', tokens)).toEqual([]);
  });

  test('any other name is a 400 on the field Attrs, one problem per name, listing the writable fields', () => {
    const err = refusal(() => parseAttrs('firstName, nickname, Shoe size', users));
    expect(err.code).toBe('BAD_REQUEST');
    const writable = users.writable.map(([name]) => name).join(', ');
    expect(err.details).toEqual([
      { field: 'Attrs', message: `"nickname" is not a writable field; writable: ${writable}` },
      { field: 'Attrs', message: `"Shoe size" is not a writable field; writable: ${writable}` },
    ]);
  });

  test('only ASCII letters fold: a look-alike (the long s, the Kelvin sign) is not a field name', () => {
    expect(refusal(() => parseAttrs('ſtatus', users)).details?.[0].field).toBe('Attrs');
    expect(refusal(() => parseAttrs('\u212Aey', tokens)).details).toHaveLength(1);
  });

  test('an unknown name is shown as the client wrote it: UTF-8 read as such, other bytes escaped, at most 64 characters', () => {
    expect(refusal(() => parseAttrs(asNodeReadsIt('prénom'), users)).details?.[0].message).toMatch(/^"prénom" is not a writable field/);
    expect(refusal(() => parseAttrs('pr\u00e9nom', users)).details?.[0].message).toMatch(/^"pr\\xE9nom" is not a writable field/);
    const long = `${'é'.repeat(70)}`;
    expect(refusal(() => parseAttrs(asNodeReadsIt(long), users)).details?.[0].message).toMatch(new RegExp(`^"${'é'.repeat(64)}" is not`));
  });
});

describe('header text and counts', () => {
  test('ASCII passes as it is; UTF-8 bytes read as UTF-8; other bytes stay, or show as \\xHH when echoed', () => {
    expect(headerText('plain')).toBe('plain');
    expect(headerText(asNodeReadsIt('Zoë 🙂'))).toBe('Zoë 🙂');
    expect(headerText('caf\u00e9')).toBe('caf\u00e9');
    expect(headerText('caf\u00e9\u00ff', { escape: true })).toBe('caf\\xE9\\xFF');
  });

  test('headerCount counts a header however its name is cased, and no other header', () => {
    const raw = ['Prefer', 'return=minimal', 'content-type', 'application/json', 'PREFER', 'return=representation', 'Preference', 'x'];
    expect(headerCount(raw, 'prefer')).toBe(2);
    expect(headerCount(raw, 'content-type')).toBe(1);
    expect(headerCount(raw, 'attrs')).toBe(0);
  });
});
