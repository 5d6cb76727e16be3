/**
 * Find TileLang kernel functions in Python source, without running Python.
 *
 * Used for code lenses and for "which kernel is under the cursor". It follows
 * the server's rules (tilelang_lsp/bindings.py) for what a kernel is: a
 * top-level function decorated with `@tilelang.jit` (also `@jit` imported from
 * tilelang, `@tilelang.autotune`), or with `@T.prim_func`, or a top-level
 * factory whose body holds an inner `@T.prim_func`. The server names kernels
 * by their top-level function, so nested functions are never returned.
 *
 * Pure module: no `vscode` import.
 */

export type KernelKind = "jit" | "prim_func" | "factory";

export interface KernelInfo {
  /** Function name, the second argument of the server commands. */
  name: string;
  kind: KernelKind;
  /** 0-based line of the first decorator (or of `def` when undecorated). */
  startLine: number;
  /** 0-based line of `def`. */
  defLine: number;
  /** 0-based column of the function name on `defLine`. */
  nameColumn: number;
  /** 0-based last line of the body (inclusive, trailing blank lines excluded). */
  endLine: number;
}

interface LineInfo {
  text: string;
  /** The line begins a new logical line (not inside a string, brackets or a backslash continuation). */
  logicalStart: boolean;
  /** Indentation width of the line. */
  indent: number;
  /** Blank or comment-only. */
  blank: boolean;
}

/** Split into physical lines and mark which ones begin a logical Python line. */
export function scanLines(text: string): LineInfo[] {
  const lines = text.split(/\r?\n/);
  const out: LineInfo[] = [];
  let quote = ""; // current string delimiter: ', ", ''' or """
  let depth = 0;
  let continuation = false;
  for (const line of lines) {
    const logicalStart = quote === "" && depth === 0 && !continuation;
    const stripped = line.trimStart();
    const indent = line.length - stripped.length;
    const blank = stripped === "" || (logicalStart && stripped.startsWith("#"));
    continuation = false;
    let i = 0;
    while (i < line.length) {
      const c = line[i];
      if (quote !== "") {
        if (c === "\\") {
          i += 2;
          continue;
        }
        if (line.startsWith(quote, i)) {
          i += quote.length;
          quote = "";
          continue;
        }
        i += 1;
        continue;
      }
      if (c === "#") break;
      if (c === '"' || c === "'") {
        const triple = line.startsWith(c.repeat(3), i);
        quote = triple ? c.repeat(3) : c;
        i += quote.length;
        continue;
      }
      if (c === "(" || c === "[" || c === "{") depth += 1;
      else if (c === ")" || c === "]" || c === "}") depth = Math.max(0, depth - 1);
      else if (c === "\\" && i === line.length - 1) continuation = true;
      i += 1;
    }
    // A one-quote string cannot span lines (unless the newline is escaped, which the
    // `\\` skip above already consumed); recover instead of swallowing the file.
    if (quote.length === 1 && !line.endsWith("\\")) quote = "";
    out.push({ text: line, logicalStart, indent, blank });
  }
  return out;
}

interface Aliases {
  tilelang: Set<string>; // names bound to the tilelang package
  language: Set<string>; // names bound to tilelang.language
  jit: Set<string>; // bare names bound to tilelang.jit / tilelang.autotune
  primFunc: Set<string>; // bare names bound to tilelang.language.prim_func
}

function collectAliases(lines: LineInfo[]): Aliases {
  const a: Aliases = {
    tilelang: new Set(["tilelang"]),
    language: new Set(["T"]),
    jit: new Set(),
    primFunc: new Set(),
  };
  const names = (list: string) =>
    list
      .replace(/[()]/g, "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean)
      .map((s) => {
        const m = /^([A-Za-z_]\w*)(?:\s+as\s+([A-Za-z_]\w*))?$/.exec(s);
        return m ? { name: m[1], bound: m[2] ?? m[1] } : undefined;
      })
      .filter((x): x is { name: string; bound: string } => x !== undefined);
  for (const l of lines) {
    if (!l.logicalStart) continue;
    const s = l.text.trim();
    let m = /^import\s+(.+)$/.exec(s);
    if (m) {
      for (const part of m[1].split(",")) {
        const im = /^\s*([\w.]+)(?:\s+as\s+(\w+))?\s*$/.exec(part);
        if (!im) continue;
        if (im[1] === "tilelang") a.tilelang.add(im[2] ?? "tilelang");
        else if (im[1] === "tilelang.language" && im[2]) a.language.add(im[2]);
      }
      continue;
    }
    m = /^from\s+([\w.]+)\s+import\s+(.+)$/.exec(s);
    if (!m || !m[1].startsWith("tilelang")) continue;
    for (const { name, bound } of names(m[2])) {
      if (m[1] === "tilelang.language") {
        if (name === "prim_func") a.primFunc.add(bound);
      } else if (name === "jit" || name === "autotune") {
        a.jit.add(bound);
      } else if (m[1] === "tilelang" && name === "language") {
        a.language.add(bound);
      }
    }
  }
  return a;
}

/** The dotted callee of a decorator line: `@tilelang.jit(out_idx=[-1])` -> `tilelang.jit`. */
function decoratorName(line: string): string | undefined {
  const m = /^\s*@\s*([A-Za-z_][\w.]*)/.exec(line);
  return m ? m[1].replace(/\s+/g, "") : undefined;
}

function classify(name: string, a: Aliases): KernelKind | undefined {
  const parts = name.split(".");
  if (parts.length === 1) {
    if (a.jit.has(name)) return "jit";
    if (a.primFunc.has(name)) return "prim_func";
    return undefined;
  }
  const last = parts[parts.length - 1];
  const owner = parts.slice(0, -1).join(".");
  if ((last === "jit" || last === "autotune") && a.tilelang.has(owner)) return "jit";
  if (last === "prim_func") {
    if (a.language.has(owner)) return "prim_func";
    if (parts.length === 3 && a.tilelang.has(parts[0]) && parts[1] === "language") return "prim_func";
  }
  return undefined;
}

const DEF_RE = /^(\s*)(?:async\s+)?def\s+([A-Za-z_]\w*)/;

/** All top-level kernel functions, in source order. */
export function findKernels(text: string): KernelInfo[] {
  const lines = scanLines(text);
  const aliases = collectAliases(lines);
  const out: KernelInfo[] = [];
  let decorators: { line: number; kind: KernelKind | undefined }[] = [];
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    if (!l.logicalStart || l.blank) continue;
    if (l.indent !== 0) continue;
    const t = l.text;
    if (t.startsWith("@")) {
      const name = decoratorName(t);
      decorators.push({ line: i, kind: name ? classify(name, aliases) : undefined });
      continue;
    }
    const def = DEF_RE.exec(t);
    if (!def) {
      decorators = [];
      continue;
    }
    const end = functionEnd(lines, i);
    let kind = decorators.map((d) => d.kind).find((k) => k !== undefined);
    if (kind === undefined && hasInnerPrimFunc(lines, i + 1, end, aliases)) kind = "factory";
    if (kind !== undefined) {
      out.push({
        name: def[2],
        kind,
        startLine: decorators.length ? decorators[0].line : i,
        defLine: i,
        nameColumn: t.indexOf(def[2], t.indexOf("def") + 3),
        endLine: end,
      });
    }
    decorators = [];
  }
  return out;
}

/** Last non-blank line of the top-level function whose `def` is on `defLine`. */
function functionEnd(lines: LineInfo[], defLine: number): number {
  let last = defLine;
  for (let j = defLine + 1; j < lines.length; j++) {
    const l = lines[j];
    if (l.logicalStart && !l.blank && l.indent === 0) break;
    if (!l.blank || !l.logicalStart) {
      if (l.text.trim() !== "") last = j;
    }
  }
  return last;
}

function hasInnerPrimFunc(lines: LineInfo[], from: number, to: number, a: Aliases): boolean {
  for (let j = from; j <= to; j++) {
    const l = lines[j];
    if (!l.logicalStart || l.blank) continue;
    const name = decoratorName(l.text);
    if (name && classify(name, a) === "prim_func") return true;
  }
  return false;
}

/** The kernel whose lines (decorators to end of body) contain `line` (0-based). */
export function kernelAt(kernels: readonly KernelInfo[], line: number): KernelInfo | undefined {
  return kernels.find((k) => k.startLine <= line && line <= k.endLine);
}
