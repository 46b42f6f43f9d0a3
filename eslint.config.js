// ESLint (flat config): typescript-eslint's recommended rules, no import cycles, no generic folder
// importing a resource folder, no function over 120 lines in src/. (The folder-level rules, cycles
// between folders included, are checked by scripts/check-imports.mjs, which `npm run lint` runs.)
import js from '@eslint/js';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import globals from 'globals';
import tseslint from 'typescript-eslint';
// The resource folders (those src/modules.ts registers) and the generic ones.
import { GENERIC_FOLDERS, RESOURCE_FOLDERS } from './scripts/check-imports.mjs';

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
    files: ['src/**/*.ts'],
    rules: {
      // A function a reader holds in mind: a factory over ~100 lines is cut into the parts it builds.
      'max-lines-per-function': ['error', { max: 120, skipBlankLines: true, skipComments: true }],
      // Generic folders know resources only through the module interface (src/module/module.ts).
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: [
            {
              target: GENERIC_FOLDERS.map((folder) => `./src/${folder}`),
              from: [...RESOURCE_FOLDERS].map((folder) => `./src/${folder}`),
              message: 'a generic folder imports no resource folder: reach it through the module interface (src/module/module.ts)',
            },
          ],
        },
      ],
    },
  },
  {
    // Tests read answers as parsed JSON, whose shape is what they assert: `any` there is the point.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
