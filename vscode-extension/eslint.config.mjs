// ESLint flat config: typescript-eslint's recommended rules for src/, plain JS rules for scripts and tests.
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import globals from "./scripts/eslint-globals.mjs";

export default tseslint.config(
  { ignores: ["node_modules/", "dist/", "out/", ".e2e/", "**/*.vsix"] },
  js.configs.recommended,
  {
    files: ["src/**/*.ts"],
    extends: [...tseslint.configs.recommended],
    languageOptions: { parserOptions: { project: "./tsconfig.json", tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: false }],
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
      eqeqeq: ["error", "always"],
      curly: ["error", "multi-line"],
      "no-console": "error",
    },
  },
  {
    files: ["scripts/**/*.mjs", "test/**/*.mjs", "eslint.config.mjs"],
    languageOptions: { globals: globals.node, sourceType: "module", ecmaVersion: 2022 },
    rules: { "no-unused-vars": ["error", { argsIgnorePattern: "^_" }] },
  },
);
