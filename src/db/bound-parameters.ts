import { isRaw, Utils, type Configuration, type LoggingOptions } from '@mikro-orm/core';
import { PostgreSqlConnection, PostgreSqlDriver, type Transaction } from '@mikro-orm/postgresql';
import { CompiledQuery } from 'kysely';

/**
 * SPEC §5: "values are always bound parameters". MikroORM 7 writes every value into the SQL text
 * itself (escaped) before sending it; this connection sends the same statements with the values as
 * bind parameters instead. Its placeholder scan is MikroORM's own (`Platform.formatQuery`): `?` is
 * a value, `??` an identifier (quoted into the text, as before), `\?` a literal question mark; a
 * value that is itself a raw SQL fragment has its own values bound the same way, and a list (an
 * `in (?)`) becomes one parameter per item.
 */
export function bindParameters(
  platform: { quoteIdentifier(id: unknown): string; formatDate(date: Date): string },
  sql: string,
  params: readonly unknown[],
  values: unknown[] = [],
): { sql: string; values: unknown[] } {
  let text = '';
  let next = 0;
  let pos = 0;
  while (pos < sql.length) {
    const idx = sql.indexOf('?', pos);
    if (idx === -1) {
      text += sql.slice(pos);
      break;
    }
    text += sql.slice(pos, idx);
    if (idx > 0 && sql[idx - 1] === '\\') {
      text = `${text.slice(0, -1)}?`;
      pos = idx + 1;
    } else if (sql[idx + 1] === '?') {
      text += platform.quoteIdentifier(params[next++]);
      pos = idx + 2;
    } else {
      text += placeholder(platform, params[next++], values);
      pos = idx + 1;
    }
  }
  return { sql: text, values };
}

/** The SQL standing for one value: `$n` (the value appended to `values`), or for a list `$n, $m, …`. */
function placeholder(platform: Parameters<typeof bindParameters>[0], value: unknown, values: unknown[]): string {
  if (isRaw(value)) return bindParameters(platform, value.sql, value.params, values).sql;
  if (Array.isArray(value)) return value.map((item) => placeholder(platform, item, values)).join(', ');
  values.push(parameterValue(platform, value));
  return `$${values.length}`;
}

/** A value as the `pg` driver should send it, meaning what MikroORM's escaping meant it to be. */
function parameterValue(platform: Parameters<typeof bindParameters>[0], value: unknown): unknown {
  if (value === undefined) return null;
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Date) return platform.formatDate(value);
  if (ArrayBuffer.isView(value)) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (Utils.isPlainObject(value)) return JSON.stringify(value);
  return value;
}

/** MikroORM's PostgreSQL connection, sending values as bind parameters. */
export class BoundParametersConnection extends PostgreSqlConnection {
  override async execute<T>(
    query: unknown,
    params: readonly unknown[] = [],
    method: 'all' | 'get' | 'run' = 'all',
    ctx?: Transaction,
    loggerContext?: LoggingOptions,
  ): Promise<T> {
    await this.ensureConnection();
    // The base class's own reading of the query: raw fragments and named parameters resolved.
    const prepared = (this as unknown as { prepareQuery(q: unknown, p: readonly unknown[]): { query: string; params: unknown[] } }).prepareQuery(query, params);
    const bound = bindParameters(this.platform as never, prepared.query, prepared.params);
    // Cancellation options ride on the logger context; this service does not use them.
    const { signal: _signal, inflightQueryAbortStrategy: _strategy, ...context } = (loggerContext ?? {}) as Record<string, unknown>;
    const sql = this.getSql(bound.sql, bound.sql, context as never); // the log shows what is sent
    return this.executeQuery(
      sql,
      async () => {
        const result = await (ctx ?? this.getClient()).executeQuery(CompiledQuery.raw(bound.sql, bound.values));
        return this.transformRawResult<T>(result, method);
      },
      { query: prepared.query, params: prepared.params, ...context } as never,
    );
  }
}

/** MikroORM's PostgreSQL driver with the connection above. */
export class BoundParametersDriver extends PostgreSqlDriver {
  constructor(config: Configuration) {
    super(config);
    (this as unknown as { connection: PostgreSqlConnection }).connection = new BoundParametersConnection(this.config);
  }
}
