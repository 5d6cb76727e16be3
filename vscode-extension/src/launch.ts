/**
 * How to start the server, and how to explain a failure to start it.
 * Pure module: no `vscode` import.
 */

export type LaunchSource = "setting" | "python-extension" | "default";

export interface ServerLaunch {
  command: string;
  /** Arguments including the trailing `--stdio`. */
  args: string[];
  source: LaunchSource;
  /** The interpreter command when the server runs as `<python> -m tilelang_lsp` (used for diagnosis). */
  python?: string[];
}

export const INSTALL_HINT = 'pip install "tilelang[lsp]"';
export const MODULE = "tilelang_lsp";

/** Split a command line into words, honouring single and double quotes and backslash escapes. */
export function splitCommandLine(line: string): string[] {
  const words: string[] = [];
  let cur = "";
  let inWord = false;
  let quote: '"' | "'" | "" = "";
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === quote) quote = "";
      else if (c === "\\" && quote === '"' && i + 1 < line.length && '"\\'.includes(line[i + 1])) cur += line[++i];
      else cur += c;
      continue;
    }
    if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (c === "\\" && i + 1 < line.length && process_platform() !== "win32") {
      cur += line[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(cur);
      cur = "";
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (inWord) words.push(cur);
  return words;
}

function process_platform(): string {
  return typeof process !== "undefined" ? process.platform : "linux";
}

/** `tilelang.server.command` as a list of words, or undefined when unset/empty. */
export function commandFromSetting(value: unknown): string[] | undefined {
  if (typeof value === "string") {
    const words = splitCommandLine(value.trim());
    return words.length ? words : undefined;
  }
  if (Array.isArray(value)) {
    const words = value.filter((w): w is string => typeof w === "string" && w !== "");
    return words.length ? words : undefined;
  }
  return undefined;
}

function withStdio(args: string[]): string[] {
  return args.includes("--stdio") ? args : [...args, "--stdio"];
}

/**
 * Pick the server command: the `tilelang.server.command` setting, else the Python
 * extension's interpreter running `-m tilelang_lsp`, else `python3 -m tilelang_lsp`.
 */
export function resolveLaunch(opts: {
  setting: unknown;
  pythonFromExtension?: string[] | undefined;
  platform?: string;
}): ServerLaunch {
  const fromSetting = commandFromSetting(opts.setting);
  if (fromSetting) {
    const [command, ...args] = fromSetting;
    const python = isPythonModuleLaunch(fromSetting);
    return { command, args: withStdio(args), source: "setting", python };
  }
  const ext = opts.pythonFromExtension?.filter((w) => w !== "");
  if (ext && ext.length) {
    const [command, ...args] = ext;
    return { command, args: [...args, "-m", MODULE, "--stdio"], source: "python-extension", python: ext };
  }
  const py = (opts.platform ?? process_platform()) === "win32" ? "python" : "python3";
  return { command: py, args: ["-m", MODULE, "--stdio"], source: "default", python: [py] };
}

/** For `python -m tilelang_lsp ...` the interpreter part (`["python"]`), else undefined. */
function isPythonModuleLaunch(words: string[]): string[] | undefined {
  const i = words.indexOf("-m");
  if (i > 0 && words[i + 1] === MODULE) return words.slice(0, i);
  return undefined;
}

export function sameLaunch(a: ServerLaunch | undefined, b: ServerLaunch | undefined): boolean {
  if (!a || !b) return false;
  return a.command === b.command && a.args.length === b.args.length && a.args.every((x, i) => x === b.args[i]);
}

export function describeLaunch(l: ServerLaunch): string {
  const where = {
    setting: "from the setting tilelang.server.command",
    "python-extension": "with the interpreter selected in the Python extension",
    default: `with ${l.command} from PATH`,
  }[l.source];
  return `${[l.command, ...l.args].map(quoteWord).join(" ")} (${where})`;
}

function quoteWord(w: string): string {
  return /^[\w@%+=:,./-]+$/.test(w) ? w : JSON.stringify(w);
}

export interface ProbeResult {
  /** spawn error code, e.g. ENOENT */
  errorCode?: string;
  exitCode?: number | null;
  stderr?: string;
}

/**
 * Turn what we know about a failed start into one sentence for the user, with the fix.
 * `probe` is the outcome of running the interpreter with `-c "import tilelang_lsp"` (when the
 * server is a Python module launch), or of the server command itself.
 */
export function explainFailure(l: ServerLaunch, probe: ProbeResult): string {
  const fixSetting = "or set tilelang.server.command to a command that starts tilelang-lsp";
  if (probe.errorCode === "ENOENT") {
    if (l.source === "setting") {
      return `TileLang: cannot start the language server: "${l.command}" was not found (tilelang.server.command). Fix the setting, or clear it to use Python.`;
    }
    return `TileLang: cannot start the language server: no Python interpreter "${l.command}" was found. Select an interpreter with tilelang installed, ${fixSetting}.`;
  }
  const err = lastMeaningfulLine(probe.stderr ?? "");
  const py = l.python ? l.python.join(" ") : l.command;
  if (/No module named '?(tilelang_lsp|pygls|lsprotocol|libcst)/.test(err)) {
    return `TileLang: the language server is not installed for ${py} (${err}). Install it with: ${py} -m ${INSTALL_HINT}, ${fixSetting}.`;
  }
  if (probe.errorCode) return `TileLang: cannot start the language server "${l.command}": ${probe.errorCode}. ${capital(fixSetting)}.`;
  const detail = err ? ` (${err})` : probe.exitCode !== undefined ? ` (exit code ${probe.exitCode})` : "";
  return `TileLang: the language server failed to start${detail}. Install it with ${INSTALL_HINT}, ${fixSetting}. Details: TileLang: Show server output.`;
}

function capital(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** The last non-empty line of a Python traceback is usually the error. */
export function lastMeaningfulLine(stderr: string): string {
  const lines = stderr
    .split(/\r?\n/)
    .map((s) => s.trim())
    .filter(Boolean);
  return lines.length ? lines[lines.length - 1].slice(0, 300) : "";
}

/** Sliding-window restart budget: at most `max` restarts within `windowMs`. */
export class RestartBudget {
  private times: number[] = [];
  constructor(
    private readonly max: number,
    private readonly windowMs = 3 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Record a crash; true when another restart is allowed. */
  tryRestart(): boolean {
    const t = this.now();
    this.times = this.times.filter((x) => t - x < this.windowMs);
    if (this.times.length >= this.max) return false;
    this.times.push(t);
    return true;
  }

  get count(): number {
    return this.times.length;
  }

  reset(): void {
    this.times = [];
  }
}
