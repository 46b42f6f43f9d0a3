/**
 * The fields of a resource: one entry per field, from which the entity metadata, the row mapping,
 * input parsing, the OpenAPI schemas, the list language's field table and the GraphQL types are
 * derived (see resource.ts). A field is described once, here, by its kind and a few flags.
 */

/**
 * What a field holds, which decides how it is stored, checked, compared and shown:
 * - `id`: the record's own id (a bigint identity; a positive safe integer on the wire, an ID in GraphQL);
 * - `reference`: the id of another record (a token's `userID`), same shape as `id`;
 * - `int32` and `safeInt`: whole numbers (GraphQL Int and SafeInt);
 * - `string`: text of at most `max` characters;
 * - `date`: a `timestamptz(3)`, ISO 8601 on the wire;
 * - `revision`: an integer counter shown as a decimal string (a token's `version`);
 * - `secret`: text stored only as a keyed hash and a ciphertext (a token's `accessToken`), compared
 *   through the hash: equality only, never sorted;
 * - `json`: a JSON object (an audit event's `changes`);
 * - `boolean`: true or false (a webhook's `active`);
 * - `textList`: a list of texts, each of at most `max` characters, at most `maxItems` of them
 *   (a webhook's `events`), stored as `text[]`; not in the list language.
 */
export type FieldKind = 'id' | 'reference' | 'int32' | 'safeInt' | 'string' | 'date' | 'revision' | 'secret' | 'json' | 'boolean' | 'textList';

/** Who sets a field's value. */
export type Origin =
  /** A client, in create, replace and patch bodies. */
  | 'client'
  /** The service (id, timestamps, a token's client and version). */
  | 'service'
  /** Nobody through the API: stored for other applications, never read or written (a user's password). */
  | 'hidden';

export interface Field {
  kind: FieldKind;
  /** The column, in snake case. */
  column: string;
  nullable: boolean;
  origin: Origin;
  /** Must be given on create and replace (client fields). */
  required: boolean;
  /** Longest text, in characters (strings, secrets, each item of a text list). */
  max?: number;
  /** Most items of a text list. */
  maxItems?: number;
  /**
   * What a create or a replace writes when the field is absent (else `null`, `""` or `0` by kind):
   * a webhook is `active` unless said otherwise.
   */
  defaultValue?: unknown;
  /**
   * Written by clients, never answered (a webhook's secret): left out of records, lists and the
   * GraphQL object type; a replace (PUT) without it keeps the stored value, since a client that
   * never reads it cannot send it back.
   */
  writeOnly?: boolean;
  /** "" (or only spaces) is refused too: a value that must say something (a name). */
  nonEmpty?: boolean;
  /** A rule the text (each item of a text list) must follow, and what a refusal says. */
  pattern?: { test: RegExp; message: string };
  /** In the list language (filter and orderBy). `deletedAt` is read but not filtered on. */
  listed: boolean;
  /** Sortable in GraphQL's `…OrderBy` input (REST sorts on every listed field but secrets). */
  graphqlOrder: boolean;
  /** What GraphQL says of the field on its object type. */
  description?: string;
  /** What GraphQL says of the field in the `…Filter` input. */
  filterDescription?: string;
  /** For `secret`: the two columns it is stored in. */
  secretColumns?: { hmac: string; cipher: string };
  /**
   * A credential kept in clear because it is read back (a token's `code` and `codeChallenge`, of an
   * authorization flow): like a secret, never shown in an audit event (`redactedInAudit`).
   */
  credential?: boolean;
}

/** Whether an audit event shows a field's values as "[redacted]": a secret's, or a credential's. */
export const redactedInAudit = (field: Field): boolean => field.kind === 'secret' || field.credential === true;

/** `firstName` → `first_name`, `recordID` → `record_id`. */
const snake = (name: string) =>
  name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z])([A-Z][a-z])/g, '$1_$2')
    .toLowerCase();

/** A field description without its column (named after the field unless given). */
export type FieldSpec = Omit<Field, 'column'> & { column?: string };

/** A spec that remembers its kind, nullability and origin (the record types are inferred from them). */
export type Spec<K extends FieldKind, N extends boolean, O extends Origin> = FieldSpec & { kind: K; nullable: N; origin: O };

type Options<N extends boolean, O extends Origin> = Partial<Omit<Field, 'kind' | 'nullable' | 'origin'>> & { nullable?: N; origin?: O };

function spec<K extends FieldKind, N extends boolean = false, O extends Origin = 'client'>(
  kind: K,
  options: Options<N, O>,
  defaults: Partial<Field> = {},
): Spec<K, N, O> {
  const origin = (options.origin ?? defaults.origin ?? 'client') as O;
  return {
    kind: kind as FieldKind,
    required: false,
    listed: origin !== 'hidden',
    graphqlOrder: origin !== 'hidden',
    ...defaults,
    ...options,
    nullable: (options.nullable ?? false) as N,
    origin,
  } as Spec<K, N, O>;
}

/** The builders of field specs, one per kind. */
export const field = {
  id: () => spec<'id', false, 'service'>('id', { origin: 'service' }),
  reference: <N extends boolean = false, O extends Origin = 'client'>(options: Options<N, O> = {}) => spec('reference', options),
  int32: <N extends boolean = false, O extends Origin = 'client'>(options: Options<N, O> = {}) => spec('int32', options),
  safeInt: <N extends boolean = false, O extends Origin = 'client'>(options: Options<N, O> = {}) => spec('safeInt', options),
  string: <N extends boolean = false, O extends Origin = 'client'>(max: number, options: Options<N, O> = {}) => spec('string', { max, ...options }),
  date: <N extends boolean = false, O extends Origin = 'client'>(options: Options<N, O> = {}) => spec('date', options),
  revision: (options: Options<false, 'service'> = {}) => spec('revision', { ...options, origin: 'service' }),
  secret: <N extends boolean = false>(max: number, columns: { hmac: string; cipher: string }, options: Options<N, 'client'> = {}) =>
    spec('secret', { max, secretColumns: columns, ...options }, { graphqlOrder: false }),
  boolean: <N extends boolean = false, O extends Origin = 'client'>(options: Options<N, O> = {}) => spec('boolean', options),
  /** A list of texts (`max` characters each, at most `maxItems`): not in the list language. */
  textList: <O extends Origin = 'client'>(maxItems: number, max: number, options: Options<false, O> = {}) =>
    spec('textList', { maxItems, max, ...options }, { listed: false, graphqlOrder: false }),
  /** A secret a client writes and the API never answers (`writeOnly`), stored as a keyed hash and a ciphertext. */
  writeOnlySecret: (max: number, columns: { hmac: string; cipher: string }, options: Options<true, 'client'> = {}) =>
    spec('secret', { max, secretColumns: columns, writeOnly: true, nullable: true as const, ...options }, { listed: false, graphqlOrder: false }) as Spec<
      'secret',
      true,
      'client'
    > & { writeOnly: true },
  json: (options: Options<false, 'service'> = {}) => spec('json', { ...options, origin: 'service' }, { listed: false, graphqlOrder: false }),
  /** Stored for other applications; the API never reads or writes it. */
  hidden: <K extends FieldKind, N extends boolean = false>(kind: K, options: Options<N, 'hidden'> = {}) =>
    spec(kind, { ...options, origin: 'hidden' }, { listed: false, graphqlOrder: false }),
  createdAt: () => spec('date', { origin: 'service', description: 'When it was created (set by the service).' }),
  updatedAt: () => spec('date', { origin: 'service', description: 'When it last changed (set by the service).' }),
  /** Soft deletion: null while live; read only by lists that ask for deleted records. */
  deletedAt: () =>
    spec(
      'date',
      {
        origin: 'service',
        nullable: true,
        description: 'When it was deleted (soft); null for a live record. Read by lists with deleted: ONLY or INCLUDE.',
      },
      { listed: false, graphqlOrder: false },
    ),
};

/** The spec with its column filled in. */
export const withColumn = (name: string, s: FieldSpec): Field => ({ ...s, column: s.column ?? snake(name) });

/** A field's value in a record the API answers. */
export type WireValue<S> = S extends { kind: infer K; nullable: infer N }
  ? | (K extends 'id' | 'reference' | 'int32' | 'safeInt'
        ? number
        : K extends 'json'
          ? Record<string, unknown>
          : K extends 'boolean'
            ? boolean
            : K extends 'textList'
              ? string[]
              : string)
    | (N extends true ? null : never)
  : never;

/** A field's value as a write takes it (dates parsed). */
export type InputValue<S> = S extends { kind: 'date'; nullable: infer N } ? Date | (N extends true ? null : never) : WireValue<S>;

/** The record the API answers for a resource's fields (hidden and write-only fields and deletedAt aside). */
export type RecordOf<F> = {
  -readonly [
    K in keyof F as F[K] extends { origin: 'hidden' } ? never : F[K] extends { writeOnly: true } ? never : K extends 'deletedAt' ? never : K
  ]: WireValue<F[K]>;
};

/** The values a client writes: every client field (create, replace). */
export type WritableOf<F> = { -readonly [K in keyof F as F[K] extends { origin: 'client' } ? K : never]: InputValue<F[K]> };
