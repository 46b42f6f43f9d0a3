import { rm } from 'node:fs/promises';

/** Jest's globalTeardown: removes the PGlite template directory globalSetup made. */
export default async function globalTeardown(): Promise<void> {
  const dir = process.env.UTS_TEST_PGLITE_TEMPLATE;
  if (dir && process.env.UTS_TEST_PGLITE_TEMPLATE_OWNED) await rm(dir, { recursive: true, force: true });
}
