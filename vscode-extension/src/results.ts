/**
 * Interpreting server command results: where the generated source is, which
 * language mode it gets, and how a benchmark result reads in the status bar.
 * Pure module: no `vscode` import.
 */

/** Language ids to try, best first, for a generated file's extension. */
const LANGUAGES: Record<string, string[]> = {
  cu: ["cuda-cpp", "cpp"],
  cuh: ["cuda-cpp", "cpp"],
  hip: ["cpp"],
  c: ["c"],
  h: ["c", "cpp"],
  cc: ["cpp"],
  cpp: ["cpp"],
  metal: ["metal", "cpp"],
  ptx: ["ptx", "plaintext"],
  py: ["python"],
  txt: ["plaintext"],
};

export function extensionOf(path: string): string {
  const base = path.split(/[\\/]/).pop() ?? "";
  const dot = base.lastIndexOf(".");
  return dot >= 0 ? base.slice(dot + 1).toLowerCase() : "";
}

/** The language mode for a generated file, choosing among the languages VS Code knows. */
export function languageFor(path: string, available: readonly string[]): string | undefined {
  const wanted = LANGUAGES[extensionOf(path)];
  if (!wanted) return undefined;
  return wanted.find((id) => available.includes(id)) ?? (available.includes("plaintext") ? "plaintext" : undefined);
}

/** True for files the server writes under `<workspace>/.tilelang/` (dumps, traces). */
export function isGeneratedPath(path: string): boolean {
  return /[\\/]\.tilelang[\\/]/.test(path);
}

export interface CommandResult {
  error?: string;
  path?: string;
  uri?: string;
  shown?: boolean;
  message?: string;
  latency_ms?: number;
  tflops?: number | null;
  gbps?: number | null;
  device?: string;
  [key: string]: unknown;
}

export function asCommandResult(value: unknown): CommandResult {
  return value !== null && typeof value === "object" ? (value as CommandResult) : {};
}

/** The file a command produced: `path`, else a `file:` `uri`. */
export function resultPath(r: CommandResult): string | undefined {
  if (typeof r.path === "string" && r.path) return r.path;
  if (typeof r.uri === "string" && r.uri.startsWith("file:")) {
    try {
      return decodeURIComponent(new URL(r.uri).pathname);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

function num(x: unknown): number | undefined {
  return typeof x === "number" && Number.isFinite(x) ? x : undefined;
}

/** `0.123 ms · 45.6 TFLOP/s` (or GB/s), from a benchmark result; undefined when it has no latency. */
export function benchmarkSummary(r: CommandResult): string | undefined {
  const ms = num(r.latency_ms);
  if (ms === undefined) return undefined;
  const parts = [`${ms < 0.01 ? ms.toPrecision(2) : ms.toFixed(3)} ms`];
  const tf = num(r.tflops);
  const gb = num(r.gbps);
  if (tf !== undefined) parts.push(`${tf.toFixed(tf < 10 ? 2 : 1)} TFLOP/s`);
  else if (gb !== undefined) parts.push(`${gb.toFixed(1)} GB/s`);
  return parts.join(" · ");
}

/** Whether the benchmark ran on the CPU backend (no GPU), from the device string. */
export function ranOnCpu(r: CommandResult): boolean {
  return typeof r.device === "string" && /\bcpu\b|c backend/i.test(r.device);
}
