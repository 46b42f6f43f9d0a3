import { LIST_LIMITS } from './list.js';

/**
 * The legacy "expression form" of a list filter (docs/rest.md#lists-filter-orderby-page-pagesize, from the Go service gostartkit `auth`),
 * e.g. `(status eq 1 or status eq 2) and not lastName eq 'O''Brien'`, translated into the JSON
 * filter form that list.ts validates and compiles. Only the syntax is checked here: field names and
 * value types are list.ts's business, so an unknown field passes through for it to report.
 *
 * Grammar (`not` binds tightest, then `and`, then `or`; keywords and operators case-insensitive):
 *   or        := and ("or" and)*
 *   and       := unary ("and" unary)*
 *   unary     := "not" unary | "(" or ")" | condition
 *   condition := field ("eq" | "ne" | "gt" | "ge" | "lt" | "le") value
 *
 * Depth is counted as list.ts's compileNode counts it on the JSON produced: the outermost object is
 * level 1 and each `and`/`or`/`not` puts its operands one level deeper. Parentheses add no level of
 * their own (`((a))` is `a`), so an expression and its translation pass or fail the limit together.
 */

export type ExpressionResult = { ok: true; filter: Record<string, unknown> } | { ok: false; message: string };

/** Longer texts are refused before any work: the expression form travels in a URL anyway. */
const MAX_TEXT_LENGTH = 100_000;
/**
 * Open parentheses at once. Only a guard for the parser's recursion: parentheses around a single
 * condition or another group add no depth, so the depth limit alone cannot bound them.
 */
const MAX_OPEN_PARENTHESES = 32;
/** Longest piece of the text quoted in a message. */
const MAX_QUOTED = 32;

/** Expression operator → JSON operator. */
const OPERATORS = new Map([
  ['eq', 'eq'],
  ['ne', 'ne'],
  ['gt', 'gt'],
  ['ge', 'gte'],
  ['lt', 'lt'],
  ['le', 'lte'],
]);
const OPERATOR_LIST = 'eq, ne, gt, ge, lt, le';
/** JSON's number grammar: `007`, `.5`, `+1` and `1.` are words, hence strings. */
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
const SPACE = /\s+/y;
const WORD = /[^\s()'"]+/y;

type Filter = Record<string, unknown>;

interface Token {
  kind: 'word' | 'quoted' | '(' | ')' | 'end';
  /** The text as written (quotes included). */
  text: string;
  /** 1-based position of the token's first character (for `end`, one past the last). */
  at: number;
}

/** A parsed piece and what the depth check needs: its height and where its deepest condition is. */
interface Parsed {
  filter: Filter;
  /** 1 for a condition; 1 + the tallest operand for `and`, `or`, `not`. */
  height: number;
  deepestAt: number;
}

/**
 * The operator each condition of a translated filter was written with (`ge` for `{"gte": …}`,
 * `EQ` for `{"isNull": true}` from `x EQ null`), keyed by the condition's operator object, so that
 * list.ts names the operator as the user wrote it in an error (`filter.createdAt.ge`). A side table
 * rather than a field of the result: the filter stays the plain JSON form list.ts validates, and
 * the entries go with the objects.
 */
const writtenOperators = new WeakMap<object, string>();

/** The operator a condition object made by parseFilterExpression was written with; undefined for any other object. */
export const operatorAsWritten = (condition: object): string | undefined => writtenOperators.get(condition);

/** Why the text does not parse; caught in parseFilterExpression, never seen by callers. */
class ExpressionError extends Error {}

export function parseFilterExpression(text: string, fieldNames: readonly string[]): ExpressionResult {
  if (typeof text !== 'string') return { ok: false, message: 'must be a string' };
  if (text.length > MAX_TEXT_LENGTH) return { ok: false, message: `longer than ${MAX_TEXT_LENGTH} characters` };
  if (text.trim() === '') return { ok: true, filter: {} };
  try {
    return { ok: true, filter: new Parser(text, fieldNames).parse() };
  } catch (error) {
    if (error instanceof ExpressionError) return { ok: false, message: error.message };
    throw error; // a bug, not bad input: let the tests see it
  }
}

const fail = (message: string): never => {
  throw new ExpressionError(message);
};

/** `"=="`, cut short and JSON-escaped so that a message stays one short line whatever was sent. */
const quote = (text: string) => JSON.stringify(text.length > MAX_QUOTED ? `${text.slice(0, MAX_QUOTED)}…` : text);

const isKeyword = (token: Token, keyword: string) => token.kind === 'word' && token.text.length === keyword.length && token.text.toLowerCase() === keyword;

/** Reads one token at a time, so that the first problem in the text is the one reported. */
class Lexer {
  private index = 0;
  private lookahead: Token | undefined;

  constructor(private readonly text: string) {}

  peek(): Token {
    this.lookahead ??= this.read();
    return this.lookahead;
  }

  next(): Token {
    const token = this.peek();
    this.lookahead = undefined;
    return token;
  }

  private read(): Token {
    const text = this.text;
    SPACE.lastIndex = this.index;
    if (SPACE.exec(text)) this.index = SPACE.lastIndex;
    const start = this.index;
    const char = text[start];
    if (char === undefined) return { kind: 'end', text: '', at: start + 1 };
    if (char === '(' || char === ')') {
      this.index += 1;
      return { kind: char, text: char, at: start + 1 };
    }
    if (char === "'" || char === '"') {
      // The closing quote is the first one not doubled; a doubled one stands for itself.
      let from = start + 1;
      for (;;) {
        const close = text.indexOf(char, from);
        if (close < 0) return fail(`unclosed quote starting at position ${start + 1}`);
        if (text[close + 1] !== char) {
          this.index = close + 1;
          return { kind: 'quoted', text: text.slice(start, close + 1), at: start + 1 };
        }
        from = close + 2;
      }
    }
    WORD.lastIndex = start;
    WORD.exec(text);
    this.index = WORD.lastIndex;
    return { kind: 'word', text: text.slice(start, this.index), at: start + 1 };
  }
}

/**
 * Recursive descent, bounded: `not` and operands of `and`/`or` each go one level deeper and stop at
 * the depth limit; parentheses, which may add no level, stop at MAX_OPEN_PARENTHESES. Chains of
 * `and`/`or` are loops, so the stack never holds more than a few frames per level.
 */
class Parser {
  private readonly lexer: Lexer;
  private readonly fieldNames: ReadonlySet<string>;
  /** Lower-cased field name → the list's own spelling. */
  private readonly fieldByLowerCase = new Map<string, string>();
  private conditions = 0;
  private openParentheses = 0;
  // Read here, not at module load: list.ts may import this module, and a cycle leaves it unset then.
  private readonly maxDepth: number = LIST_LIMITS.maxDepth;
  private readonly maxConditions: number = LIST_LIMITS.maxConditions;

  constructor(text: string, fieldNames: readonly string[]) {
    this.lexer = new Lexer(text);
    this.fieldNames = new Set(fieldNames);
    for (const name of fieldNames) if (!this.fieldByLowerCase.has(name.toLowerCase())) this.fieldByLowerCase.set(name.toLowerCase(), name);
  }

  parse(): Filter {
    const parsed = this.parseChain('or', 1);
    const token = this.lexer.peek();
    if (token.kind === 'end') return parsed.filter;
    if (token.kind === ')') return fail(`unmatched ")" at position ${token.at}`);
    return fail(`expected "and" or "or" at position ${token.at}, found ${quote(token.text)}`);
  }

  /**
   * `a or b or c` (or the same with `and`) as one node, or a lone operand as itself. `depth` is the
   * level the result sits at if it is a node; a lone operand takes it over, so the first operand is
   * parsed at `depth` and its height checked again once it is known to be one of several.
   */
  private parseChain(keyword: 'or' | 'and', depth: number): Parsed {
    const parseOperand = (level: number) => (keyword === 'or' ? this.parseChain('and', level) : this.parseUnary(level));
    const first = parseOperand(depth);
    if (!isKeyword(this.lexer.peek(), keyword)) return first;
    const operands = [first];
    while (isKeyword(this.lexer.peek(), keyword)) {
      this.lexer.next();
      operands.push(parseOperand(depth + 1));
    }
    let tallest = first;
    for (const operand of operands) if (operand.height > tallest.height) tallest = operand;
    const parsed = { filter: { [keyword]: operands.map((o) => o.filter) }, height: tallest.height + 1, deepestAt: tallest.deepestAt };
    this.checkDepth(depth + parsed.height - 1, parsed.deepestAt);
    return parsed;
  }

  private parseUnary(depth: number): Parsed {
    const token = this.lexer.peek();
    this.checkDepth(depth, token.at);
    if (isKeyword(token, 'not')) {
      this.lexer.next();
      const operand = this.parseUnary(depth + 1);
      return { filter: { not: operand.filter }, height: operand.height + 1, deepestAt: operand.deepestAt };
    }
    if (token.kind === '(') {
      this.lexer.next();
      if (this.openParentheses >= MAX_OPEN_PARENTHESES) {
        return fail(`parentheses nested deeper than ${MAX_OPEN_PARENTHESES} levels at position ${token.at}`);
      }
      this.openParentheses += 1;
      const inner = this.parseChain('or', depth);
      const close = this.lexer.next();
      if (close.kind === 'end') return fail(`unexpected end of the filter at position ${close.at}: expected ")" to close the "(" at position ${token.at}`);
      if (close.kind !== ')') return fail(`expected "and", "or" or ")" at position ${close.at}, found ${quote(close.text)}`);
      this.openParentheses -= 1;
      return inner;
    }
    return this.parseCondition();
  }

  private parseCondition(): Parsed {
    const fieldToken = this.lexer.next();
    const expected = 'a field name, "not" or "("';
    if (fieldToken.kind === 'end') return fail(`unexpected end of the filter at position ${fieldToken.at}: expected ${expected}`);
    if (fieldToken.kind === ')' && this.openParentheses === 0) return fail(`unmatched ")" at position ${fieldToken.at}`);
    // `and`/`or` as a field would reach list.ts as a combinator; they are misplaced keywords here.
    if (fieldToken.kind !== 'word' || isKeyword(fieldToken, 'and') || isKeyword(fieldToken, 'or')) {
      return fail(`expected ${expected} at position ${fieldToken.at}, found ${quote(fieldToken.text)}`);
    }
    this.conditions += 1;
    if (this.conditions > this.maxConditions) {
      return fail(`more than ${this.maxConditions} conditions: condition ${this.conditions} starts at position ${fieldToken.at}`);
    }
    // An unknown name passes through unchanged: list.ts reports it along with the fields it knows.
    // An exact spelling wins over a case-insensitive match.
    const name = fieldToken.text;
    const field = this.fieldNames.has(name) ? name : (this.fieldByLowerCase.get(name.toLowerCase()) ?? name);

    const opToken = this.lexer.next();
    const expectedOp = `an operator (${OPERATOR_LIST})`;
    if (opToken.kind === 'end') return fail(`unexpected end of the filter at position ${opToken.at}: expected ${expectedOp}`);
    const op = opToken.kind === 'word' ? OPERATORS.get(opToken.text.toLowerCase()) : undefined;
    if (op === undefined) return fail(`expected ${expectedOp} at position ${opToken.at}, found ${quote(opToken.text)}`);

    const valueToken = this.lexer.next();
    if (valueToken.kind === 'end') return fail(`unexpected end of the filter at position ${valueToken.at}: expected a value`);
    const value = this.valueOf(valueToken);
    if (value === null) {
      if (op !== 'eq' && op !== 'ne') {
        return fail(`null can only be compared with eq or ne, not ${quote(opToken.text)}, at position ${valueToken.at}`);
      }
      return { filter: { [field]: this.written({ isNull: op === 'eq' }, opToken.text) }, height: 1, deepestAt: fieldToken.at };
    }
    return { filter: { [field]: this.written({ [op]: value }, opToken.text) }, height: 1, deepestAt: fieldToken.at };
  }

  /** `condition`, noted as written with `operator`. */
  private written(condition: Record<string, unknown>, operator: string): Record<string, unknown> {
    writtenOperators.set(condition, operator);
    return condition;
  }

  /** A value token's value; null for the word `null`. */
  private valueOf(token: Token): string | number | boolean | null {
    if (token.kind === 'quoted') {
      const mark = token.text[0];
      return token.text.slice(1, -1).replaceAll(mark + mark, mark);
    }
    if (token.kind !== 'word') return fail(`expected a value at position ${token.at}, found ${quote(token.text)}`);
    if (token.text.length <= 5) {
      const lower = token.text.toLowerCase();
      if (lower === 'true') return true;
      if (lower === 'false') return false;
      if (lower === 'null') return null;
    }
    if (!NUMBER.test(token.text)) return token.text;
    const number = Number(token.text);
    // JSON.parse would give the same Infinity, which no JSON filter can carry.
    if (!Number.isFinite(number)) return fail(`number out of range at position ${token.at}: ${quote(token.text)}`);
    return number;
  }

  /** `level`: how deep something sits (at least); `at`: where it starts, for the message. */
  private checkDepth(level: number, at: number): void {
    if (level > this.maxDepth) fail(`nested deeper than ${this.maxDepth} levels at position ${at}`);
  }
}
