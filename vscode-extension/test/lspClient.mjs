// A minimal LSP client over vscode-jsonrpc (the library vscode-languageclient uses), for tests
// that run the real Python server: `$TILELANG_LSP_PYTHON -m tilelang_lsp --stdio`.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, cpSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from "vscode-jsonrpc/node";

const here = path.dirname(fileURLToPath(import.meta.url));
export const extensionRoot = path.resolve(here, "..");
export const repoRoot = path.resolve(extensionRoot, "..");
export const fixturesDir = path.join(here, "fixtures");

/** The interpreter that runs the server: $TILELANG_LSP_PYTHON, else the repo's .venv, else python3. */
export function serverPython() {
  if (process.env.TILELANG_LSP_PYTHON) return process.env.TILELANG_LSP_PYTHON;
  const venv = path.join(repoRoot, ".venv", "bin", "python");
  return existsSync(venv) ? venv : "python3";
}

/** A temporary workspace holding a copy of the fixtures (the server writes .tilelang/ into it). */
export function makeWorkspace() {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tilelang-ext-test-"));
  cpSync(fixturesDir, dir, { recursive: true });
  return {
    dir,
    uri: pathToFileURL(dir).href,
    fileUri: (name) => pathToFileURL(path.join(dir, name)).href,
    path: (name) => path.join(dir, name),
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Client capabilities modelled on what vscode-languageclient 11 sends (the parts the server checks). */
export const vscodeLikeCapabilities = {
  general: { positionEncodings: ["utf-16"] },
  window: { workDoneProgress: true, showDocument: { support: true }, showMessage: {} },
  workspace: {
    configuration: true,
    workspaceFolders: true,
    didChangeConfiguration: { dynamicRegistration: true },
    executeCommand: { dynamicRegistration: true },
    inlayHint: { refreshSupport: true },
  },
  textDocument: {
    synchronization: { dynamicRegistration: true, didSave: true },
    publishDiagnostics: { relatedInformation: true, versionSupport: true, codeDescriptionSupport: true },
    inlayHint: { dynamicRegistration: true, resolveSupport: { properties: [] } },
    codeAction: {
      dynamicRegistration: true,
      codeActionLiteralSupport: {
        codeActionKind: { valueSet: ["", "quickfix", "refactor", "source", "source.organizeImports"] },
      },
    },
    hover: { contentFormat: ["markdown", "plaintext"] },
  },
};

export class TestClient {
  constructor({ settings = {}, env = {} } = {}) {
    this.settings = { target: "sm_90a", ...settings };
    this.workspace = makeWorkspace();
    this.diagnostics = new Map(); // uri -> latest Diagnostic[]
    this.diagnosticWaiters = [];
    this.shownDocuments = [];
    this.messages = [];
    this.progress = new Map(); // token -> [value]
    this.registrations = [];
    this.stderr = "";
    const py = serverPython();
    this.proc = spawn(py, ["-m", "tilelang_lsp", "--stdio"], {
      cwd: this.workspace.dir,
      env: {
        ...process.env,
        PYTHONPATH: [repoRoot, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter),
        PYTHONUNBUFFERED: "1",
        ...env,
      },
      stdio: "pipe",
    });
    this.exited = new Promise((resolve) => this.proc.once("exit", (code, signal) => resolve({ code, signal })));
    this.proc.stderr.on("data", (d) => (this.stderr = (this.stderr + d).slice(-20000)));
    this.proc.once("error", (e) => (this.stderr += `\nspawn ${py}: ${e}`));
    const conn = createMessageConnection(new StreamMessageReader(this.proc.stdout), new StreamMessageWriter(this.proc.stdin));
    this.conn = conn;
    conn.onNotification("textDocument/publishDiagnostics", (p) => {
      this.diagnostics.set(p.uri, p.diagnostics);
      this.diagnosticWaiters = this.diagnosticWaiters.filter((w) => !w(p));
    });
    conn.onNotification("window/showMessage", (p) => this.messages.push(p));
    conn.onNotification("window/logMessage", () => {});
    conn.onNotification("$/progress", (p) => {
      if (!this.progress.has(p.token)) this.progress.set(p.token, []);
      this.progress.get(p.token).push(p.value);
    });
    conn.onRequest("window/workDoneProgress/create", () => null);
    conn.onRequest("client/registerCapability", (p) => {
      this.registrations.push(...p.registrations);
      return null;
    });
    conn.onRequest("client/unregisterCapability", () => null);
    conn.onRequest("workspace/configuration", (p) => p.items.map((it) => (it.section === "tilelang" ? this.settings : null)));
    conn.onRequest("workspace/inlayHint/refresh", () => null);
    conn.onRequest("workspace/diagnostic/refresh", () => null);
    conn.onRequest("window/showDocument", (p) => {
      this.shownDocuments.push(p);
      return { success: true };
    });
    conn.onRequest("window/showMessageRequest", () => null);
    conn.listen();
  }

  async initialize() {
    const result = await withTimeout(
      this.conn.sendRequest("initialize", {
        processId: process.pid,
        clientInfo: { name: "tilelang-vscode-tests", version: "0" },
        rootUri: this.workspace.uri,
        rootPath: this.workspace.dir,
        workspaceFolders: [{ uri: this.workspace.uri, name: "ws" }],
        capabilities: vscodeLikeCapabilities,
        initializationOptions: { tilelang: this.settings },
      }),
      30_000,
      () => `initialize timed out; server stderr:\n${this.stderr}`,
    );
    await this.conn.sendNotification("initialized", {});
    this.initializeResult = result;
    return result;
  }

  /** didOpen a fixture (from the temp workspace); returns its uri. */
  async open(name, text) {
    const uri = this.workspace.fileUri(name);
    const { readFileSync } = await import("node:fs");
    this.texts = this.texts ?? new Map();
    const content = text ?? readFileSync(this.workspace.path(name), "utf8");
    this.texts.set(uri, content);
    await this.conn.sendNotification("textDocument/didOpen", {
      textDocument: { uri, languageId: "python", version: 1, text: content },
    });
    return uri;
  }

  /** Resolve with the first publishDiagnostics for `uri` that satisfies `pred` (also one already received). */
  waitDiagnostics(uri, pred = () => true, ms = 60_000) {
    const have = this.diagnostics.get(uri);
    if (have && pred(have)) return Promise.resolve(have);
    return withTimeout(
      new Promise((resolve) => {
        this.diagnosticWaiters.push((p) => {
          if (p.uri === uri && pred(p.diagnostics)) {
            resolve(p.diagnostics);
            return true;
          }
          return false;
        });
      }),
      ms,
      () =>
        `no matching diagnostics for ${uri} within ${ms} ms; last: ${JSON.stringify(this.diagnostics.get(uri))}\nserver stderr:\n${this.stderr}`,
    );
  }

  request(method, params, ms = 60_000) {
    return withTimeout(this.conn.sendRequest(method, params), ms, () => `${method} timed out; server stderr:\n${this.stderr}`);
  }

  async shutdown() {
    try {
      await withTimeout(this.conn.sendRequest("shutdown"), 5000, () => "shutdown timed out");
      await this.conn.sendNotification("exit");
    } catch {
      // fall through to kill
    }
    const done = await Promise.race([this.exited, new Promise((r) => setTimeout(() => r(undefined), 5000))]);
    if (!done) this.proc.kill("SIGKILL");
    this.conn.dispose();
    this.workspace.dispose();
    return done;
  }
}

export function withTimeout(promise, ms, message) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(typeof message === "function" ? message() : message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Inlay hints grouped by line: Map<line, string> of the labels joined. */
export function hintsByLine(hints) {
  const by = new Map();
  for (const h of hints ?? []) {
    const label = typeof h.label === "string" ? h.label : h.label.map((p) => p.value).join("");
    by.set(h.position.line, [by.get(h.position.line), label].filter(Boolean).join(" | "));
  }
  return by;
}

export function lineOf(text, needle) {
  const i = text.split("\n").findIndex((l) => l.includes(needle));
  if (i < 0) throw new Error(`no line contains ${JSON.stringify(needle)}`);
  return i;
}
