// ESLint's flat config for the extension's and the viewer's JavaScript and
// the extension's unit tests. scripts/lint-js.sh installs the pinned ESLint
// (tools/eslint) outside the repository and runs it with NODE_PATH pointing
// there, which is why this file is CommonJS: require() follows NODE_PATH,
// import does not.
const js = require('@eslint/js');
const globals = require('globals');

// Files a page or Chrome loads as classic scripts, not modules (prompt.html
// loads prompt.js as a module: it imports shown.js).
const scripts = ['extension/content.js', 'extension/sandbox.js'];

module.exports = [
  { ignores: ['extension/pyodide/**'] },
  js.configs.recommended,
  {
    files: ['extension/**/*.js', 'internal/viewer/static/**/*.js'],
    languageOptions: {
      ecmaVersion: 2024,
      sourceType: 'module',
      globals: { ...globals.browser, ...globals.webextensions, ...globals.worker },
    },
    // `const { token: _, ...rest } = msg` is how a field is left out of
    // what is passed on: the named siblings of a rest are meant unused.
    rules: { 'no-unused-vars': ['error', { ignoreRestSiblings: true }] },
  },
  { files: scripts, languageOptions: { sourceType: 'script' } },
  {
    files: ['extension/test/**/*.mjs'],
    languageOptions: { ecmaVersion: 2024, sourceType: 'module', globals: { ...globals.node } },
  },
];
