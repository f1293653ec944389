// The linter runs in `npm test`. typescript-eslint's type-aware rules catch what a stream engine cannot afford to
// miss (a promise nobody awaits loses its error, a checkpoint write that fails silently), so they run on src/; the
// tests, benchmarks and tools get the rules that need no types (quicker on a 2-core machine).
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'playground/dist/**', 'bench/curves.html', '**/*.cpuprofile'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
    rules: {
      // `_name` marks a parameter a signature needs and the body does not use.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // `let running` read by a callback before the line that assigns it cannot be a const.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    files: ['src/**/*.ts'],
    extends: [...tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // An `async` method without `await` is how an implementation of a Promise-returning interface (a storage, a
      // sink) turns its throws into rejections.
      '@typescript-eslint/require-await': 'off',
      // A rejection passes on what was caught, whatever it is: wrapping it would hide the user's own error.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      // lmdb's put and remove return the promise of their commit; inside `transactionSync` (where weir calls them)
      // they are part of the transaction, which commits, or throws, before it returns.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: 'lmdb', name: ['put', 'remove'] }] },
      ],
    },
  },
);
