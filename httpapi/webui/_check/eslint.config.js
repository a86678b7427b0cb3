// The web UI's lint rules: ESLint's recommended set and a few of style,
// for the UI's own modules (noVNC is vendored as it is).
import js from "@eslint/js";
import globals from "globals";

export default [
  // Run from the UI's directory (make lint-js): paths are relative to it.
  { ignores: ["static/novnc/**", "_check/node_modules/**"] },
  js.configs.recommended,
  {
    files: ["static/*.js", "_check/*.js"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module", globals: globals.browser },
    rules: {
      eqeqeq: "error",
      "no-var": "error",
      "prefer-const": "error",
      "no-unused-vars": ["error", { caughtErrors: "none" }],
    },
  },
];
