import { getNamedType, isLeafType, Kind, TypeInfo, visit, visitWithTypeInfo, type DocumentNode, type GraphQLSchema } from 'graphql';

/**
 * Which GraphQL fields may be answered from the read cache, declared where each field is defined:
 * type-graphql's `@Extensions(CACHEABLE)` on the field (the record types derived from a directory
 * resource mark their fields; a field resolver is not cacheable unless marked). A cacheable field
 * answers from the database alone, the same for every caller with the same scopes: no clock (a
 * token's expiry), no caller identity (`viewer`).
 */
export const CACHEABLE = { readCache: true } as const;

/**
 * Whether every operation of a (valid) document is a query and every field it selects is declared
 * cacheable (`__typename` always is). The gate asks once per document text (src/graphql/documents.ts).
 */
export function isCacheableDocument(schema: GraphQLSchema, document: DocumentNode): boolean {
  const typeInfo = new TypeInfo(schema);
  let cacheable = document.definitions.every((d) => d.kind === Kind.OPERATION_DEFINITION || d.kind === Kind.FRAGMENT_DEFINITION);
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      OperationDefinition(node) {
        if (node.operation !== 'query') cacheable = false;
      },
      Field(node) {
        if (node.name.value === '__typename') return;
        const field = typeInfo.getFieldDef();
        if (!field || field.extensions?.readCache !== true) cacheable = false;
        else if (!isLeafType(getNamedType(field.type)) && !node.selectionSet) cacheable = false;
      },
      Directive(node) {
        // @skip and @include only choose among the fields above; anything else is not known here.
        if (node.name.value !== 'skip' && node.name.value !== 'include') cacheable = false;
      },
    }),
  );
  return cacheable;
}

/** Query texts longer than this are not cached: a few directory queries are. */
export const MAX_CACHED_QUERY = 16 * 1024;
