// ESLint (flat config): typescript-eslint's recommended rules, and no import cycles.
import js from '@eslint/js';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // test/support/openapi-types.ts: written by openapi-typescript (npm run openapi).
  { ignores: ['dist/', 'node_modules/', 'data/', 'coverage/', 'test/support/openapi-types.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  { languageOptions: { globals: globals.node } },
  {
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    settings: { 'import-x/resolver-next': [createTypeScriptImportResolver()] },
    rules: {
      'import-x/no-cycle': 'error',
      // A variable a closure reads before its one assignment (a signal handler set up before the start) stays `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      // A name starting with _ is unused on purpose (a parameter a signature requires, a field left out of a rest).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
    },
  },
  {
    // Tests read answers as parsed JSON, whose shape is what they assert: `any` there is the point.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
