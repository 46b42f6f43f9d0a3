import { parseFilterExpression } from '../../src/list/expression.js';
import { compileQuery, LIST_LIMITS, type ListFields } from '../../src/list/list.js';
import { AppError } from '../../src/errors.js';

/**
 * SPEC §5: the legacy expression form of a filter, translated into the JSON form. Pure unit tests:
 * no service, no database.
 */
const FIELDS = ['id', 'firstName', 'lastName', 'status', 'createdAt'] as const;
const LIST_FIELDS: ListFields = {
  id: { column: 't.id', kind: 'id' },
  firstName: { column: 't.first_name', kind: 'string' },
  lastName: { column: 't.last_name', kind: 'string' },
  status: { column: 't.status', kind: 'int32' },
  createdAt: { column: 't.created_at', kind: 'date' },
};

/** The JSON filter of an expression that must parse. */
function filterOf(text: string): Record<string, unknown> {
  const result = parseFilterExpression(text, FIELDS);
  if (!result.ok) throw new Error(`${JSON.stringify(text)} did not parse: ${result.message}`);
  return result.filter;
}

/** The message of an expression that must not parse. */
function errorOf(text: string): string {
  const result = parseFilterExpression(text, FIELDS);
  if (result.ok) throw new Error(`${JSON.stringify(text)} parsed: ${JSON.stringify(result.filter)}`);
  return result.message;
}

/** list.ts's problems with a JSON filter, [] when it compiles. */
function listProblems(filter: unknown): string[] {
  try {
    compileQuery({ filter }, LIST_FIELDS);
    return [];
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    return (error.details ?? []).map((d) => `${d.field}: ${d.message}`);
  }
}

const status = (value: number) => ({ status: { eq: value } });

describe('conditions', () => {
  test.each([
    ['eq', 'eq'],
    ['ne', 'ne'],
    ['gt', 'gt'],
    ['ge', 'gte'],
    ['lt', 'lt'],
    ['le', 'lte'],
  ])('%s becomes %s', (op, json) => {
    expect(filterOf(`status ${op} 3`)).toEqual({ status: { [json]: 3 } });
  });

  test('a single condition is the filter itself, with no wrapper', () => {
    expect(filterOf('lastName eq Smith')).toEqual({ lastName: { eq: 'Smith' } });
    expect(filterOf('((lastName eq Smith))')).toEqual({ lastName: { eq: 'Smith' } });
  });

  test('empty or blank text is the empty filter', () => {
    expect(parseFilterExpression('', FIELDS)).toEqual({ ok: true, filter: {} });
    expect(parseFilterExpression(' \t\r\n ', FIELDS)).toEqual({ ok: true, filter: {} });
  });

  test('any whitespace separates tokens; parentheses need none', () => {
    expect(filterOf('status\teq\n1\r\nor  status eq 2')).toEqual({ or: [status(1), status(2)] });
    expect(filterOf('(status eq 1)or(status eq 2)')).toEqual({ or: [status(1), status(2)] });
    expect(filterOf('not(status eq 1)')).toEqual({ not: status(1) });
  });
});

describe('values', () => {
  test('quoted strings, single or double, with the quote doubled inside', () => {
    expect(filterOf("lastName eq 'O''Brien'")).toEqual({ lastName: { eq: "O'Brien" } });
    expect(filterOf('lastName eq "say ""hi"""')).toEqual({ lastName: { eq: 'say "hi"' } });
    expect(filterOf(`lastName eq "it's"`)).toEqual({ lastName: { eq: "it's" } });
    expect(filterOf(`lastName eq ''''`)).toEqual({ lastName: { eq: "'" } });
    expect(filterOf(`lastName eq ''`)).toEqual({ lastName: { eq: '' } });
    expect(filterOf(`lastName eq ' a (b) or c '`)).toEqual({ lastName: { eq: ' a (b) or c ' } });
  });

  test('quoted keywords and numbers stay strings', () => {
    expect(filterOf(`lastName eq 'null'`)).toEqual({ lastName: { eq: 'null' } });
    expect(filterOf(`lastName eq "true"`)).toEqual({ lastName: { eq: 'true' } });
    expect(filterOf(`lastName eq '42'`)).toEqual({ lastName: { eq: '42' } });
    expect(filterOf(`lastName eq 'and'`)).toEqual({ lastName: { eq: 'and' } });
  });

  test('an unquoted word is a string; dates are strings', () => {
    expect(filterOf('lastName eq Smith')).toEqual({ lastName: { eq: 'Smith' } });
    expect(filterOf('lastName eq Müller-Lüdenscheidt')).toEqual({ lastName: { eq: 'Müller-Lüdenscheidt' } });
    expect(filterOf('createdAt ge 2020-01-01T00:00:00.000Z')).toEqual({ createdAt: { gte: '2020-01-01T00:00:00.000Z' } });
    expect(filterOf('createdAt lt 2020-01-01')).toEqual({ createdAt: { lt: '2020-01-01' } });
  });

  test('an unquoted word that looks like a JSON number is a number', () => {
    expect(filterOf('status eq 0')).toEqual({ status: { eq: 0 } });
    expect(filterOf('status eq -7')).toEqual({ status: { eq: -7 } });
    expect(filterOf('status gt 3.25')).toEqual({ status: { gt: 3.25 } });
    expect(filterOf('status lt -0.5')).toEqual({ status: { lt: -0.5 } });
    expect(filterOf('status lt 1e3')).toEqual({ status: { lt: 1000 } });
    // Not JSON numbers, so words.
    expect(filterOf('lastName eq 007')).toEqual({ lastName: { eq: '007' } });
    expect(filterOf('lastName eq .5')).toEqual({ lastName: { eq: '.5' } });
    expect(filterOf('lastName eq +1')).toEqual({ lastName: { eq: '+1' } });
    expect(filterOf('lastName eq 1.')).toEqual({ lastName: { eq: '1.' } });
  });

  test('a number too large for a double is an error, not Infinity', () => {
    expect(errorOf('status eq 1e999')).toBe('number out of range at position 11: "1e999"');
  });

  test('true and false are booleans, in any case', () => {
    expect(filterOf('status eq true')).toEqual({ status: { eq: true } });
    expect(filterOf('status ne FALSE')).toEqual({ status: { ne: false } });
    expect(filterOf('status eq True')).toEqual({ status: { eq: true } });
  });

  test('null goes with eq and ne only, as isNull', () => {
    expect(filterOf('lastName eq null')).toEqual({ lastName: { isNull: true } });
    expect(filterOf('lastName ne NULL')).toEqual({ lastName: { isNull: false } });
    expect(filterOf('lastName EQ Null')).toEqual({ lastName: { isNull: true } });
    expect(errorOf('lastName gt null')).toBe('null can only be compared with eq or ne, not "gt", at position 13');
    expect(errorOf('lastName LE null')).toBe('null can only be compared with eq or ne, not "LE", at position 13');
  });
});

describe('and, or, not', () => {
  const [a, b, c] = [status(1), status(2), status(3)];

  test('not binds tightest, then and, then or', () => {
    expect(filterOf('status eq 1 or status eq 2 and status eq 3')).toEqual({ or: [a, { and: [b, c] }] });
    expect(filterOf('status eq 1 and status eq 2 or status eq 3')).toEqual({ or: [{ and: [a, b] }, c] });
    expect(filterOf('not status eq 1 and status eq 2')).toEqual({ and: [{ not: a }, b] });
    expect(filterOf('status eq 1 or not status eq 2')).toEqual({ or: [a, { not: b }] });
    expect(filterOf('not not status eq 1')).toEqual({ not: { not: a } });
  });

  test('a chain of one keyword is one node', () => {
    expect(filterOf('status eq 1 and status eq 2 and status eq 3')).toEqual({ and: [a, b, c] });
    expect(filterOf('status eq 1 or status eq 2 or status eq 3')).toEqual({ or: [a, b, c] });
  });

  test('parentheses group, and a parenthesised group stays its own node', () => {
    expect(filterOf('(status eq 1 or status eq 2) and status eq 3')).toEqual({ and: [{ or: [a, b] }, c] });
    expect(filterOf('not (status eq 1 or status eq 2)')).toEqual({ not: { or: [a, b] } });
    expect(filterOf('(status eq 1 and status eq 2) and status eq 3')).toEqual({ and: [{ and: [a, b] }, c] });
    expect(filterOf('((status eq 1))')).toEqual(a);
  });

  test('keywords, operators and field names are case-insensitive', () => {
    expect(filterOf('FIRSTNAME EQ Ada AND NOT Status Ge 1 OR lastname Ne x')).toEqual({
      or: [{ and: [{ firstName: { eq: 'Ada' } }, { not: { status: { gte: 1 } } }] }, { lastName: { ne: 'x' } }],
    });
  });

  test('an exact spelling wins over a case-insensitive match', () => {
    const result = parseFilterExpression('Name eq a or name eq b or NAME eq c', ['name', 'Name']);
    expect(result).toEqual({ ok: true, filter: { or: [{ Name: { eq: 'a' } }, { name: { eq: 'b' } }, { name: { eq: 'c' } }] } });
  });

  test('an unknown field passes through unchanged for list.ts to report', () => {
    expect(filterOf('nickName eq x')).toEqual({ nickName: { eq: 'x' } });
    expect(listProblems(filterOf('nickName eq x'))).toEqual([expect.stringMatching(/^filter\.nickName: unknown field/)]);
    // An own property, not the object's prototype.
    const proto = filterOf('__proto__ eq 1');
    expect(Object.keys(proto)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(proto)).toBe(Object.prototype);
  });

  test('the translation compiles in list.ts', () => {
    const filter = filterOf(`(firstName eq 'Ada' or lastName ne null) and not status ge 2 and createdAt lt 2030-01-01T00:00:00.000Z`);
    expect(listProblems(filter)).toEqual([]);
  });
});

describe("list.ts's errors name the operator as written", () => {
  test.each([
    ["createdAt ge 'yesterday'", 'filter.createdAt.ge: must be an ISO 8601'],
    ["createdAt GE '2020-01-03'", 'filter.createdAt.GE: must be an ISO 8601'],
    ["status le 'x'", 'filter.status.le: must be an integer'],
    ['status eq 1 and lastName LT 5', 'filter.and[1].lastName.LT: must be a string'],
  ])('%s → %s', (text, problem) => {
    expect(listProblems(text)).toEqual([expect.stringContaining(problem)]);
  });

  test('the JSON form keeps its own names, even for an object equal to a translated one', () => {
    expect(listProblems({ createdAt: { gte: 'yesterday' } })).toEqual([expect.stringMatching(/^filter\.createdAt\.gte: /)]);
    const translated = filterOf("createdAt ge 'yesterday'");
    expect(listProblems(JSON.parse(JSON.stringify(translated)))).toEqual([expect.stringMatching(/^filter\.createdAt\.gte: /)]);
  });
});

describe('errors name the position and what was expected', () => {
  test.each([
    ['status == 1', 'expected an operator (eq, ne, gt, ge, lt, le) at position 8, found "=="'],
    ['status', 'unexpected end of the filter at position 7: expected an operator (eq, ne, gt, ge, lt, le)'],
    ['firstName eq ', 'unexpected end of the filter at position 14: expected a value'],
    ["lastName eq 'O''Brien", 'unclosed quote starting at position 13'],
    ['lastName eq "abc', 'unclosed quote starting at position 13'],
    ['status eq 1) or status eq 2', 'unmatched ")" at position 12'],
    [') status eq 1', 'unmatched ")" at position 1'],
    ['(status eq 1 foo', 'expected "and", "or" or ")" at position 14, found "foo"'],
    ['status eq 1 foo', 'expected "and" or "or" at position 13, found "foo"'],
    ["status eq 1 'x'", `expected "and" or "or" at position 13, found "'x'"`],
    ['(status eq 1', 'unexpected end of the filter at position 13: expected ")" to close the "(" at position 1'],
    ['status eq 1 and', 'unexpected end of the filter at position 16: expected a field name, "not" or "("'],
    ['status eq 1 and not', 'unexpected end of the filter at position 20: expected a field name, "not" or "("'],
    ['()', 'expected a field name, "not" or "(" at position 2, found ")"'],
    ['and status eq 1', 'expected a field name, "not" or "(" at position 1, found "and"'],
    ['"firstName" eq x', 'expected a field name, "not" or "(" at position 1, found "\\"firstName\\""'],
    ['status eq (1)', 'expected a value at position 11, found "("'],
    ['status eq 1\nand\nfoo bar', 'expected an operator (eq, ne, gt, ge, lt, le) at position 21, found "bar"'],
  ])('%j', (text, message) => {
    expect(errorOf(text)).toBe(message);
  });

  test('the first problem in the text is the one reported', () => {
    expect(errorOf("status == 1 and lastName eq 'open")).toMatch(/^expected an operator .* at position 8/);
  });

  test('an offending token is quoted cut short and escaped', () => {
    const long = 'x'.repeat(5000);
    expect(errorOf(`status eq 1 ${long}`)).toBe(`expected "and" or "or" at position 13, found "${'x'.repeat(32)}…"`);
    expect(errorOf('status eq 1 and "a\nb" eq 1')).toBe('expected a field name, "not" or "(" at position 17, found "\\"a\\nb\\""');
  });

  test('any non-string input is an error, not an exception', () => {
    expect(parseFilterExpression(undefined as unknown as string, FIELDS)).toEqual({ ok: false, message: 'must be a string' });
  });
});

describe('limits', () => {
  const { maxDepth, maxConditions } = LIST_LIMITS;

  /** `not not … status eq 1` and its JSON, `levels` deep as compileNode counts. */
  function nots(levels: number): [string, unknown] {
    return ['not '.repeat(levels - 1) + 'status eq 1', Array.from({ length: levels - 1 }).reduce<unknown>((inner) => ({ not: inner }), status(1))];
  }

  /** `status eq 1 or (status eq 2 and (status eq 3 or (…)))` and its JSON, `levels` deep. */
  function alternating(levels: number): [string, unknown] {
    let text = `status eq ${levels}`;
    let json: unknown = status(levels);
    // The innermost pair of conditions is one level below its and/or node.
    for (let level = levels - 1; level >= 1; level--) {
      const keyword = level % 2 ? 'or' : 'and';
      text = `status eq ${level} ${keyword} ${level === levels - 1 ? text : `(${text})`}`;
      json = { [keyword]: [status(level), json] };
    }
    return [text, json];
  }

  /** `((status eq 1 and status eq 2) and status eq 3) and …`: each group the first operand of the next. */
  function leftNested(levels: number): [string, unknown] {
    let text = 'status eq 1';
    let json: unknown = status(1);
    for (let level = 2; level <= levels; level++) {
      text = `${level > 2 ? `(${text})` : text} and status eq ${level}`;
      json = { and: [json, status(level)] };
    }
    return [text, json];
  }

  test.each([
    ['not', nots],
    ['alternating or/and', alternating],
    ['left-nested and', leftNested],
  ])('%s: the same depth passes or fails in both forms', (_name, build) => {
    for (let levels = 1; levels <= maxDepth + 2; levels++) {
      const [text, json] = build(levels);
      const result = parseFilterExpression(text, FIELDS);
      const jsonProblems = listProblems(json);
      if (levels <= maxDepth) {
        expect({ levels, result }).toEqual({ levels, result: { ok: true, filter: json } });
        expect(jsonProblems).toEqual([]);
      } else {
        expect({ levels, result }).toEqual({ levels, result: { ok: false, message: expect.stringMatching(/^nested deeper than 8 levels at position \d+$/) } });
        expect(jsonProblems).toEqual(expect.arrayContaining([expect.stringMatching(/nested deeper than 8 levels/)]));
      }
    }
  });

  test('the depth error points at what sits too deep', () => {
    const [text] = nots(maxDepth + 1);
    expect(errorOf(text)).toBe(`nested deeper than 8 levels at position ${text.indexOf('status') + 1}`);
  });

  test('parentheses around one condition add no level', () => {
    expect(filterOf(`${'('.repeat(20)}status eq 1${')'.repeat(20)}`)).toEqual(status(1));
    expect(filterOf(`not ${'('.repeat(20)}status eq 1${')'.repeat(20)}`)).toEqual({ not: status(1) });
  });

  test('hostile nesting stops early instead of recursing (each text just under the length limit)', () => {
    expect(errorOf(`${'not '.repeat(20_000)}status eq 1`)).toBe(`nested deeper than 8 levels at position ${maxDepth * 4 + 1}`);
    expect(errorOf(`${'('.repeat(49_000)}status eq 1${')'.repeat(49_000)}`)).toBe('parentheses nested deeper than 32 levels at position 33');
    expect(errorOf(`${'(not '.repeat(15_000)}status eq 1`)).toMatch(/^nested deeper than 8 levels at position \d+$/);
    expect(errorOf(`${'status eq 1 or ('.repeat(6_000)}status eq 1`)).toMatch(/^nested deeper than 8 levels at position \d+$/);
  });

  test(`at most ${maxConditions} conditions, as in the JSON form`, () => {
    const conditions = (count: number) => Array.from({ length: count }, (_, i) => `status eq ${i}`).join(' or ');
    const atLimit = filterOf(conditions(maxConditions));
    expect((atLimit.or as unknown[]).length).toBe(maxConditions);
    expect(listProblems(atLimit)).toEqual([]);
    const over = conditions(maxConditions + 1);
    expect(errorOf(over)).toBe(`more than 100 conditions: condition 101 starts at position ${over.lastIndexOf('status') + 1}`);
  });

  test('at most 100 000 characters', () => {
    expect(parseFilterExpression(' '.repeat(100_000), FIELDS)).toEqual({ ok: true, filter: {} });
    expect(errorOf(`lastName eq '${'x'.repeat(100_000)}'`)).toBe('longer than 100000 characters');
    const longValue = `lastName eq '${'x'.repeat(99_000)}'`;
    expect(filterOf(longValue)).toEqual({ lastName: { eq: 'x'.repeat(99_000) } });
  });
});

describe('properties', () => {
  /** mulberry32: a small seeded PRNG, so a failure replays. */
  function prng(seed: number): () => number {
    return () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  /** How deep a JSON filter is and how many conditions it has, counted as list.ts counts them. */
  function measure(node: Record<string, unknown>): { depth: number; conditions: number } {
    const [key, value] = Object.entries(node)[0];
    if (key === 'and' || key === 'or' || key === 'not') {
      const children = (key === 'not' ? [value] : (value as Record<string, unknown>[])).map((child) => measure(child as Record<string, unknown>));
      return { depth: 1 + Math.max(...children.map((c) => c.depth)), conditions: children.reduce((n, c) => n + c.conditions, 0) };
    }
    return { depth: 1, conditions: 1 };
  }

  /** Random filters within the depth limit and their expression text, spelled and spaced at random. */
  function filterMaker(random: () => number) {
    const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)];
    const spell = (word: string) => [...word].map((ch) => (random() < 0.5 ? ch.toUpperCase() : ch)).join('');
    const space = () => pick([' ', '  ', '\n', '\t ']);
    const make = (depth = 1): [Record<string, unknown>, string] => {
      const kind = depth >= LIST_LIMITS.maxDepth ? 'condition' : pick(['condition', 'condition', 'and', 'or', 'not']);
      if (kind === 'condition') {
        const [op, jsonOp] = pick([
          ['eq', 'eq'],
          ['ne', 'ne'],
          ['gt', 'gt'],
          ['ge', 'gte'],
          ['lt', 'lt'],
          ['le', 'lte'],
        ]);
        const [value, text] = pick<[unknown, string]>([
          [Math.floor(random() * 2000) - 1000, ''],
          [-12.5, '-12.5'],
          [true, 'true'],
          [false, 'False'],
          ["O'Brien", "'O''Brien'"],
          ['say "hi"', '"say ""hi"""'],
          ['Smith', 'Smith'],
          ['a b (c)', "'a b (c)'"],
        ]);
        return [{ lastName: { [jsonOp]: value } }, `${spell('lastname')} ${spell(op)} ${text || String(value)}`];
      }
      if (kind === 'not') {
        const [filter, text] = make(depth + 1);
        return [{ not: filter }, `${spell('not')}${space()}(${text})`];
      }
      const children = Array.from({ length: 2 + Math.floor(random() * 3) }, () => make(depth + 1));
      return [{ [kind]: children.map((c) => c[0]) }, children.map((c) => `(${c[1]})`).join(`${space()}${spell(kind)}${space()}`)];
    };
    return make;
  }

  /** Whatever the text, a result: a filter within list.ts's limits, or a short message with a position. */
  function expectWellFormed(text: string): boolean {
    const result = parseFilterExpression(text, FIELDS);
    if (!result.ok) {
      expect(result.message).toMatch(/position \d+/);
      expect(result.message.length).toBeLessThan(200);
      return false;
    }
    expect(JSON.parse(JSON.stringify(result.filter))).toEqual(result.filter);
    if (Object.keys(result.filter).length) {
      const { depth, conditions } = measure(result.filter);
      expect(depth).toBeLessThanOrEqual(LIST_LIMITS.maxDepth);
      expect(conditions).toBeLessThanOrEqual(LIST_LIMITS.maxConditions);
    }
    return true;
  }

  test('random token soup never throws', () => {
    const random = prng(20240601);
    const pieces = [
      'status',
      'FirstName',
      'x',
      '__proto__',
      'eq',
      'NE',
      'gt',
      'ge',
      'lt',
      'Le',
      '==',
      'and',
      'OR',
      'not',
      'Not',
      '(',
      ')',
      '((',
      '))',
      "'",
      '"',
      "'a''b'",
      '"q"',
      "''",
      '1',
      '-2.5',
      '1e999',
      '007',
      'null',
      'TRUE',
      'false',
      'é',
      '\u{1F600}',
    ];
    const separators = [' ', ' ', ' ', '', '\t', '\n'];
    const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)];
    for (let i = 0; i < 3000; i++) {
      const count = Math.floor(random() * 40);
      let text = '';
      for (let j = 0; j < count; j++) text += pick(pieces) + pick(separators);
      expectWellFormed(text);
    }
  });

  test('valid expressions with random edits never throw', () => {
    const random = prng(99);
    const make = filterMaker(random);
    const edits = ['(', ')', "'", '"', ' ', 'x', '1', 'not ', ' and ', ' or ', ' eq ', 'null'];
    let parsed = 0;
    for (let i = 0; i < 2000; i++) {
      let text = make()[1];
      for (let edit = 1 + Math.floor(random() * 3); edit > 0; edit--) {
        const at = Math.floor(random() * (text.length + 1));
        const cut = random() < 0.5 ? Math.floor(random() * 4) : 0;
        text = text.slice(0, at) + edits[Math.floor(random() * edits.length)] + text.slice(at + cut);
      }
      if (expectWellFormed(text)) parsed++;
    }
    // Both outcomes are exercised: some edits keep the text valid, most do not.
    expect(parsed).toBeGreaterThan(100);
    expect(parsed).toBeLessThan(1900);
  });

  test('random filters, printed as expressions, parse back to themselves', () => {
    const make = filterMaker(prng(7));
    for (let i = 0; i < 1000; i++) {
      const [filter, text] = make();
      if (measure(filter).conditions > LIST_LIMITS.maxConditions) continue;
      expect({ text, result: parseFilterExpression(text, ['lastName']) }).toEqual({ text, result: { ok: true, filter } });
    }
  });
});
