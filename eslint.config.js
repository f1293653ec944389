// The linter runs in `npm test`. typescript-eslint's type-aware rules catch what a stream engine cannot afford to
// miss (a promise nobody awaits loses its error, a checkpoint write that fails silently), so they run on src/.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'playground/dist/**', 'bench/results.json', '**/*.cpuprofile'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['src/**/*.ts'],
    extends: [...tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
  },
);
