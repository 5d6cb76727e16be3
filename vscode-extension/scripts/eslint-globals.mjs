// The Node.js globals the scripts and tests use (instead of depending on the `globals` package).
const node = Object.fromEntries(
  [
    "process", "console", "Buffer", "URL", "URLSearchParams", "setTimeout", "clearTimeout",
    "setInterval", "clearInterval", "setImmediate", "structuredClone", "fetch", "AbortController",
    "TextDecoder", "TextEncoder", "__dirname", "__filename", "require", "module",
  ].map((g) => [g, "readonly"]),
);
export default { node };
