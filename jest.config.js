/** Jest runs the TypeScript sources through SWC (ESM, legacy decorators with metadata). */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: {
          parser: { syntax: 'typescript', decorators: true },
          transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: false },
          target: 'es2022',
        },
        module: { type: 'es6' },
        sourceMaps: 'inline',
      },
    ],
  },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  // The scale-out tests (real replicas, PgBouncer, haproxy, several processes: minutes, and root
  // for PostgreSQL's tools) run apart: npm run test:scale, which CI runs after npm test.
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/scale/'],
  testTimeout: 60_000,
  // Two test files at a time: each starts its own service on its own database, so files do not
  // share state; two because PGlite is CPU-bound and the machines this runs on have two cores.
  maxWorkers: 2,
  // Without durations from a run before (a fresh clone), the slowest files first.
  testSequencer: '<rootDir>/test/support/sequencer.js',
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
  // On the embedded database: one empty PGlite data directory per run, copied for each test service.
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
};
