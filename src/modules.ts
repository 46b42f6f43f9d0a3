import applications from './applications/index.js';
import audit from './audit/index.js';
import links from './links/index.js';
import type { SchemaOrder } from './module/registry.js';
import oauth from './oauth/index.js';
import roles from './roles/index.js';
import tokens from './tokens/index.js';
import users from './users/index.js';
import webhooks from './webhooks/index.js';

/**
 * The service's modules: one resource folder each (src/module/module.ts), and the one place a new
 * one is registered. The services container, the REST routes and their OpenAPI document, the
 * GraphQL schema, the ORM's entities and the migrations, the scope vocabulary and the live-count
 * check are derived from this list (src/module/registry.ts). Its order is the order of the REST
 * routes and of the OpenAPI tags; a module's service may use the services of the modules before it.
 */
export const MODULES = [users, tokens, applications, roles, links, webhooks, audit, oauth] as const;

/**
 * The order schema.graphql lists the modules' operations and subscriptions in: the order their
 * GraphQL adapters were written in, kept so that the published schema does not move (graphql-js
 * prints fields, and the types they reach, in the order they were defined). A module not named here
 * (a new one) comes after these, in MODULES order: adding a module needs no line here.
 */
export const SCHEMA_ORDER: SchemaOrder = {
  operations: ['applications', 'audit', 'roles', 'users', 'links', 'tokens'],
  subscriptions: ['tokens', 'links', 'users', 'applications', 'roles'],
};
