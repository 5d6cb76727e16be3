/**
 * Owns the language client: finds the server, starts it over stdio, restarts it
 * a limited number of times, and explains failures in one notification.
 */
import * as cp from "node:child_process";
import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  type ResponseError,
  RevealOutputChannelOn,
  State,
  type CloseHandlerResult,
  type DynamicFeature,
  type ErrorHandlerResult,
  type LanguageClientOptions,
  type ShowDocumentParams,
  type ShowDocumentResult,
  type StaticFeature,
} from "vscode-languageclient/node";
import { OPTIONAL_SERVER_COMMANDS, LOWERING_TRACE_CONTEXT } from "./commands";
import { describeLaunch, explainFailure, RestartBudget, resolveLaunch, type ServerLaunch } from "./launch";
import { selectedInterpreter } from "./python";
import { isGeneratedPath } from "./results";

/**
 * The language client, with two adjustments:
 * - the extension registers the VS Code commands for the server's commands itself (so they exist
 *   and explain themselves even when the server is down, and fill in missing arguments), so the
 *   built-in workspace/executeCommand feature, which would register the same ids, is left out;
 * - failures are reported by the controller in one notification, so the library's own
 *   "couldn't start" pop-ups are logged to the output channel only.
 */
class TileLangClient extends LanguageClient {
  override registerFeature(feature: StaticFeature | DynamicFeature<unknown>): void {
    const method = (feature as { registrationType?: { method?: string } }).registrationType?.method;
    if (method === ExecuteCommandRequest.method) return;
    super.registerFeature(feature);
  }

  override error(message: string, data?: unknown, showNotification?: boolean | "force"): void {
    super.error(message, data, showNotification === "force" ? false : showNotification);
  }
}

export type ServerState = "stopped" | "starting" | "running" | "failed";

const STDERR_TAIL = 8192;

export class ServerController implements vscode.Disposable {
  readonly output: vscode.LogOutputChannel;
  private client: TileLangClient | undefined;
  private child: cp.ChildProcess | undefined;
  private stderrTail = "";
  private launch: ServerLaunch | undefined;
  private budget: RestartBudget;
  private initializedOnce = false;
  private failureShown = false;
  private gaveUp = false;
  private stopping = false;
  private starting: Promise<void> | undefined;
  private startAgain = false;
  private _state: ServerState = "stopped";
  private _commands = new Set<string>();
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  readonly onDidChangeState = this.stateEmitter.event;
  /** Set by the extension: opens a generated file beside the kernel; resolves true on success. */
  openGenerated: ((uri: vscode.Uri, takeFocus: boolean) => Promise<boolean>) | undefined;

  constructor() {
    this.output = vscode.window.createOutputChannel("TileLang LSP", { log: true });
    this.budget = new RestartBudget(this.maxRestarts());
  }

  get state(): ServerState {
    return this._state;
  }

  /** Commands the running server registered (executeCommandProvider.commands). */
  get serverCommands(): ReadonlySet<string> {
    return this._commands;
  }

  /** The command the server was last started with. */
  get currentLaunch(): ServerLaunch | undefined {
    return this.launch;
  }

  get launchDescription(): string | undefined {
    return this.launch ? describeLaunch(this.launch) : undefined;
  }

  private setState(s: ServerState): void {
    if (this._state === s) return;
    this._state = s;
    this.stateEmitter.fire(s);
  }

  private maxRestarts(): number {
    const n = vscode.workspace.getConfiguration("tilelang").get<number>("server.maxRestarts", 3);
    return Math.max(0, Math.min(20, Math.floor(n)));
  }

  /** Resolve the command that would start the server now (settings + Python extension). */
  async resolve(): Promise<ServerLaunch> {
    const cfg = vscode.workspace.getConfiguration("tilelang");
    const setting = cfg.get<unknown>("server.command");
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    const needPython = resolveLaunch({ setting }).source !== "setting";
    const pythonFromExtension = needPython ? await selectedInterpreter(folder) : undefined;
    return resolveLaunch({ setting, pythonFromExtension, platform: process.platform });
  }

  /**
   * Start (or restart) the server process. A call during a start makes that start run once more
   * when it ends (so a settings change made meanwhile is not lost).
   */
  start(): Promise<void> {
    if (this.starting) {
      this.startAgain = true;
      return this.starting;
    }
    this.starting = (async () => {
      do {
        this.startAgain = false;
        await this.doStart();
      } while (this.startAgain);
    })().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async doStart(): Promise<void> {
    await this.stop();
    this.failureShown = false;
    this.gaveUp = false;
    this.initializedOnce = false;
    this.budget = new RestartBudget(this.maxRestarts());
    const launch = await this.resolve();
    this.launch = launch;
    this.output.info(`Starting the TileLang language server: ${describeLaunch(launch)}`);
    this.setState("starting");
    const client = new TileLangClient("tilelang", "TileLang LSP", () => this.spawn(launch), this.clientOptions());
    this.client = client;
    client.onDidChangeState((e) => {
      if (this.client !== client) return;
      if (e.newState === State.Running) {
        this.initializedOnce = true;
        this.readCapabilities();
        this.setState("running");
      } else if (e.newState === State.Starting) {
        this.setState("starting");
      } else if (!this.stopping) {
        // (Stopped also shows up briefly while the library restarts the server after a crash.)
        const startFailed = e.newState === State.StartFailed;
        this.setState(startFailed || this.gaveUp ? "failed" : "stopped");
        // An automatic restart that could not start the process again (the first start and the
        // restart limit report for themselves).
        if (startFailed && this.initializedOnce && !this.failureShown) {
          void this.notify(explainFailure(launch, { exitCode: this.child?.exitCode, stderr: this.stderrTail }));
        }
      }
    });
    try {
      await client.start();
    } catch (err) {
      if (this.client !== client || this.stopping) return;
      this.setState("failed");
      await this.reportStartFailure(launch, err);
    }
  }

  private spawn(launch: ServerLaunch): Promise<cp.ChildProcess> {
    return new Promise((resolve, reject) => {
      this.stderrTail = "";
      const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
      const child = cp.spawn(launch.command, launch.args, {
        cwd,
        env: { ...process.env, PYTHONUNBUFFERED: "1", PYTHONIOENCODING: "utf-8" },
        stdio: "pipe",
      });
      child.once("error", (err) => {
        this.stderrTail += `\n${String(err)}`;
        reject(err);
      });
      child.once("spawn", () => {
        this.child = child;
        resolve(child);
      });
      child.stderr?.on("data", (d: Buffer) => {
        this.stderrTail = (this.stderrTail + d.toString("utf8")).slice(-STDERR_TAIL);
      });
      child.once("exit", (code, signal) => {
        if (!this.stopping) this.output.warn(`server process exited (code ${code}${signal ? `, signal ${signal}` : ""})`);
      });
    });
  }

  private clientOptions(): LanguageClientOptions {
    return {
      documentSelector: [{ scheme: "file", language: "python" }],
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      diagnosticCollectionName: "tilelang",
      initializationOptions: () => ({ tilelang: settingsSnapshot() }),
      initializationFailedHandler: () => false,
      errorHandler: {
        error: (_error, _message, count): ErrorHandlerResult =>
          (count ?? 0) <= 5
            ? { action: ErrorAction.Continue, handled: true }
            : { action: ErrorAction.Shutdown, handled: true },
        closed: (): CloseHandlerResult => this.onClosed(),
      },
      middleware: {
        // Generated files under .tilelang/ (e.g. the lowering trace, `<file>.<kernel>.trace.py`) are
        // Python-like but not user code: the server never sees them.
        didOpen: (doc, next) => (isGenerated(doc) ? Promise.resolve() : next(doc)),
        didChange: (e, next) => (isGenerated(e.document) ? Promise.resolve() : next(e)),
        didClose: (doc, next) => (isGenerated(doc) ? Promise.resolve() : next(doc)),
        provideInlayHints: (doc, range, token, next) => (isGenerated(doc) ? [] : next(doc, range, token)),
        provideCodeActions: (doc, range, ctx, token, next) => (isGenerated(doc) ? [] : next(doc, range, ctx, token)),
        provideHover: (doc, pos, token, next) => (isGenerated(doc) ? undefined : next(doc, pos, token)),
        window: {
          showDocument: async (
            params: ShowDocumentParams,
            token,
            next,
          ): Promise<ShowDocumentResult | ResponseError<void>> => {
            const uri = vscode.Uri.parse(params.uri);
            if (uri.scheme === "file" && isGeneratedPath(uri.fsPath) && this.openGenerated && !params.external) {
              const success = await this.openGenerated(uri, params.takeFocus !== false);
              return { success };
            }
            return next(params, token);
          },
        },
        workspace: {
          // In restricted mode nothing from the workspace may run: whatever the settings say,
          // the server is told tilelang.analysis.trust = "none" (docs/editors.md).
          configuration: async (params, token, next) => {
            const result = await next(params, token);
            if (vscode.workspace.isTrusted || !Array.isArray(result)) return result;
            return result.map((item, i) =>
              params.items[i]?.section === "tilelang" ? restrictTrust(item) : item,
            );
          },
        },
      },
    };
  }

  /** The server process went away. Restart a limited number of times, never during start-up. */
  private onClosed(): CloseHandlerResult {
    if (this.stopping) return { action: CloseAction.DoNotRestart, handled: true };
    if (!this.initializedOnce) {
      // Exited before or during initialize: start() rejects and reportStartFailure explains why.
      return { action: CloseAction.DoNotRestart, handled: true };
    }
    if (this.budget.tryRestart()) {
      this.output.warn(`The server exited; restarting (${this.budget.count} of ${this.maxRestarts()} within 3 minutes).`);
      return { action: CloseAction.Restart, handled: true };
    }
    this.gaveUp = true;
    const tail = this.stderrTail.trim().split(/\r?\n/).pop() ?? "";
    const msg =
      `TileLang: the language server exited ${this.budget.count + 1} times within 3 minutes and will not be restarted` +
      (tail ? ` (last error: ${tail.slice(0, 200)})` : "") +
      ". Fix the cause, then run TileLang: Restart server.";
    void this.notify(msg);
    return { action: CloseAction.DoNotRestart, handled: true, message: msg };
  }

  private async reportStartFailure(launch: ServerLaunch, err: unknown): Promise<void> {
    // Let stderr of an exiting process arrive before reading it.
    await waitForExit(this.child, 1500);
    const code = (err as NodeJS.ErrnoException | undefined)?.code;
    const msg = explainFailure(launch, {
      errorCode: typeof code === "string" ? code : undefined,
      exitCode: this.child?.exitCode,
      stderr: this.stderrTail,
    });
    this.output.error(msg);
    if (this.stderrTail.trim()) this.output.error(`server stderr:\n${this.stderrTail.trim()}`);
    void this.notify(msg); // not awaited: the start is over even while the notification is open
  }

  /** One notification per start attempt. */
  private async notify(message: string): Promise<void> {
    if (this.failureShown) return;
    this.failureShown = true;
    const settings = "Open Settings";
    const output = "Show Output";
    const restart = "Restart";
    const pick = await vscode.window.showErrorMessage(message, settings, output, restart);
    if (pick === settings) {
      await vscode.commands.executeCommand("workbench.action.openSettings", "tilelang.server");
    } else if (pick === output) {
      this.output.show(true);
    } else if (pick === restart) {
      await this.start();
    }
  }

  private readCapabilities(): void {
    const cmds = this.client?.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
    this._commands = new Set(cmds);
    void vscode.commands.executeCommand(
      "setContext",
      LOWERING_TRACE_CONTEXT,
      this._commands.has(OPTIONAL_SERVER_COMMANDS.showLoweringTrace),
    );
  }

  get isRunning(): boolean {
    return this.client?.state === State.Running;
  }

  /** Send workspace/executeCommand; rejects when the server is not running. */
  async executeCommand(command: string, args: unknown[], token?: vscode.CancellationToken): Promise<unknown> {
    if (this.starting) await this.starting;
    const client = this.client;
    if (!client || client.state !== State.Running) throw new ServerNotRunning(this._state);
    return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args }, token);
  }

  async stop(): Promise<void> {
    const client = this.client;
    const child = this.child;
    this.client = undefined;
    this.child = undefined;
    this._commands = new Set();
    void vscode.commands.executeCommand("setContext", LOWERING_TRACE_CONTEXT, false);
    if (!client) return;
    this.stopping = true;
    try {
      if (client.needsStop()) await client.stop(3000);
    } catch (e) {
      this.output.warn(`stopping the server: ${String(e)}`);
    } finally {
      if (child && child.exitCode === null && child.signalCode === null) {
        if (!(await waitForExit(child, 2000))) child.kill();
      }
      this.stopping = false;
      this.setState("stopped");
    }
  }

  dispose(): void {
    void this.stop();
    this.stateEmitter.dispose();
    this.output.dispose();
  }
}

export class ServerNotRunning extends Error {
  constructor(readonly state: ServerState) {
    super(`the TileLang language server is ${state === "failed" ? "not running (it failed to start)" : state}`);
  }
}

function isGenerated(doc: vscode.TextDocument): boolean {
  return doc.uri.scheme === "file" && isGeneratedPath(doc.uri.fsPath);
}

function waitForExit(child: cp.ChildProcess | undefined, ms: number): Promise<boolean> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** tilelang.analysis.trust, or "none" while the workspace is not trusted (restricted mode). */
export function effectiveTrust(): string {
  if (!vscode.workspace.isTrusted) return "none";
  return vscode.workspace.getConfiguration("tilelang").get<string>("analysis.trust", "kernels");
}

/** A `tilelang` configuration object with analysis.trust forced to "none". */
export function restrictTrust(item: unknown): unknown {
  const obj = item && typeof item === "object" ? (item as Record<string, unknown>) : {};
  const analysis = obj.analysis && typeof obj.analysis === "object" ? (obj.analysis as Record<string, unknown>) : {};
  return { ...obj, analysis: { ...analysis, trust: "none" } };
}

/** The `tilelang` settings as a plain object (what the server also gets from workspace/configuration). */
export function settingsSnapshot(): Record<string, unknown> {
  const cfg = vscode.workspace.getConfiguration("tilelang");
  return {
    target: cfg.get("target"),
    inlayHints: {
      buffers: cfg.get("inlayHints.buffers"),
      kernel: cfg.get("inlayHints.kernel"),
      ops: cfg.get("inlayHints.ops"),
    },
    analysis: { timeoutMs: cfg.get("analysis.timeoutMs"), trust: effectiveTrust() },
    benchmark: { warmup: cfg.get("benchmark.warmup"), rep: cfg.get("benchmark.rep") },
    python: cfg.get("python") || null,
  };
}
