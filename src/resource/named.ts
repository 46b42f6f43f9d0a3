import { AppError } from '../errors.js';
import { field } from './field.js';
import { defineResource, type RecordOf } from './resource.js';
import { recordService, type RecordDeps } from './service.js';

const namedFields = () => ({
  id: field.id(),
  name: field.string(255, { required: true, nonEmpty: true }),
  createdAt: field.createdAt(),
  updatedAt: field.updatedAt(),
  deletedAt: field.deletedAt(),
});

/**
 * Applications and roles are the same kind of record, `{id, name, createdAt, updatedAt}` with a
 * name unique among live records. A deleted one is unlinked from every user (the relations of
 * src/links/ say so: src/resource/relation.ts).
 */
export function namedResource(spec: { name: string; table: string; type: string }) {
  return defineResource({ name: spec.name, label: spec.name, table: spec.table, counted: true, type: spec.type, fields: namedFields() });
}

export type NamedResource = ReturnType<typeof namedResource>;
export type NamedRecord = RecordOf<NamedResource>;

/** The shared record operations of an application or a role; a name taken by a live record is a 409 naming it. */
export function namedService(resource: NamedResource, deps: RecordDeps) {
  const article = /^[aeiou]/.test(resource.label) ? 'an' : 'a';
  return recordService(
    resource,
    {
      conflict: (values) =>
        AppError.conflict(`${article} ${resource.label} with this name already exists`, [
          { field: 'name', message: `"${String(values.name)}" is already in use` },
        ]),
    },
    deps,
  );
}

export type NamedService = ReturnType<typeof namedService>;
