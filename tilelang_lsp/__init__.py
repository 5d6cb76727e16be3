"""tilelang-lsp: a language server for TileLang kernels.

Code map, from the protocol down:

- `__main__`  CLI (`--stdio` default, `--tcp PORT`, `--version`); starts the worker before importing pygls.
- `server`    the only module that knows lsprotocol types: thin handlers, capability checks, commands.
- `session`   open documents, edits coalesced while a pass runs, "give me results for the latest version".
- `documents` one analysis pass over a document: find kernels, per-function cache, worker failures
              turned into `timeout` / `crash` diagnostics.
- `render`    results -> hint labels, diagnostic ranges, hover markdown (editor-neutral).
- `actions`   compile-and-dump and benchmark jobs.
- `bindings` + `literals`  static discovery of kernel functions and their compile-time values (`ast` only).
- `config`    the `tilelang.*` settings.
- `worker`    the server's side of the child processes (time limits, kill + restart).
- `child`     the child process: the only place that imports `tilelang.analysis`.

Invariants: the server process never imports the compiler and never executes a module's
top-level code; user code only runs in a child that can be killed.
"""

__version__ = "0.1.0"
