/**
 * Command identifiers shared by the extension, package.json and the tests.
 * Pure module: no `vscode` import, so `node --test` can load it.
 */

/** Commands the extension forwards to the server's workspace/executeCommand, arguments `[uri, functionName]`. */
export const SERVER_COMMANDS = {
  showGeneratedSource: "tilelang.showGeneratedSource",
  benchmarkKernel: "tilelang.benchmarkKernel",
  restartServer: "tilelang.restartServer",
  /** From the code action on a tile op; arguments `[uri, functionName, firstLine, lastLine]`. */
  copyTileOpSource: "tilelang.copyTileOpSource",
} as const;

/** Server commands the extension offers only when the server lists them in `executeCommandProvider.commands`. */
export const OPTIONAL_SERVER_COMMANDS = {
  showLoweringTrace: "tilelang.showLoweringTrace",
} as const;

/** Commands handled entirely in the extension. */
export const CLIENT_COMMANDS = {
  selectTarget: "tilelang.selectTarget",
  showOutput: "tilelang.showOutput",
} as const;

/** Context key set while the server registers `tilelang.showLoweringTrace`. */
export const LOWERING_TRACE_CONTEXT = "tilelang.loweringTraceAvailable";

/** Commands that act on one kernel function (code lenses, palette with a kernel picker). */
export const KERNEL_COMMANDS: readonly string[] = [
  SERVER_COMMANDS.showGeneratedSource,
  SERVER_COMMANDS.benchmarkKernel,
  OPTIONAL_SERVER_COMMANDS.showLoweringTrace,
];

/** Targets the server understands (`tilelang.target`), as in tilelang_lsp/config.py. */
export const TARGETS: readonly string[] = ["sm_90a", "sm_80", "sm_86", "sm_89", "hip:gfx942", "metal", "c"];

export const DEFAULT_TARGET = "sm_90a";
