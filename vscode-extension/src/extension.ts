/**
 * TileLang for VS Code: a client for `tilelang-lsp`.
 *
 * The server does the work (inlay hints, diagnostics, code actions, compile,
 * benchmark). The extension starts it, contributes the commands with code
 * lenses and a kernel picker, opens generated source beside the kernel in the
 * right language mode, and shows the target and last benchmark in the status bar.
 */
import * as vscode from "vscode";
import { CLIENT_COMMANDS, OPTIONAL_SERVER_COMMANDS, SERVER_COMMANDS, TARGETS } from "./commands";
import { findKernels, kernelAt, type KernelInfo } from "./kernels";
import { sameLaunch } from "./launch";
import { onInterpreterChanged } from "./python";
import {
  asCommandResult,
  benchmarkSummary,
  isGeneratedPath,
  languageFor,
  ranOnCpu,
  resultPath,
  type CommandResult,
} from "./results";
import { ServerController, ServerNotRunning } from "./server";
import { TileLangStatusBar } from "./statusBar";

let controller: ServerController | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const server = new ServerController();
  controller = server;
  const status = new TileLangStatusBar();
  const lenses = new KernelCodeLensProvider(server);
  context.subscriptions.push(server, status, lenses);

  server.openGenerated = (uri, takeFocus) => openBeside(uri, takeFocus);
  server.onDidChangeState((s) => {
    status.setServerState(s, server.launchDescription);
    lenses.refresh();
  });
  // Start without holding up activation; commands wait for the start when they need the server.
  void server.start();

  const kernelCommand = (command: string, after?: (r: CommandResult, k: KernelRef) => Promise<void>) =>
    vscode.commands.registerCommand(command, async (uriArg?: unknown, nameArg?: unknown) => {
      const kernel = await resolveKernel(uriArg, nameArg);
      if (!kernel) return undefined;
      const result = await runServerCommand(server, command, [kernel.uri, kernel.name]);
      if (result && after) await after(result, kernel);
      return result;
    });

  context.subscriptions.push(
    kernelCommand(SERVER_COMMANDS.showGeneratedSource, async (r) => {
      // The server asks the client to show the file (window/showDocument), which the middleware
      // opens beside the kernel; if it could not, open the path it returned.
      const path = resultPath(r);
      if (path && r.shown !== true) await openBeside(vscode.Uri.file(path), true);
    }),
    kernelCommand(SERVER_COMMANDS.benchmarkKernel, async (r, k) => {
      const summary = benchmarkSummary(r);
      if (summary) {
        status.setBenchmark({
          kernel: k.name,
          summary,
          device: typeof r.device === "string" ? r.device : undefined,
          cpu: ranOnCpu(r),
          message: r.message,
        });
      }
    }),
    kernelCommand(OPTIONAL_SERVER_COMMANDS.showLoweringTrace, async (r) => {
      const path = resultPath(r);
      if (path && r.shown !== true) await openBeside(vscode.Uri.file(path), true);
    }),
    vscode.commands.registerCommand(SERVER_COMMANDS.copyTileOpSource, async (...args: unknown[]) => {
      if (args.length < 4) {
        void vscode.window.showInformationMessage("TileLang: use the code action on a tile op (T.copy, T.gemm, ...).");
        return undefined;
      }
      // quiet: the server returns the text instead of showing it; the clipboard gets it
      const r = await runServerCommand(server, SERVER_COMMANDS.copyTileOpSource, [...args.slice(0, 4), true]);
      if (r && typeof r.text === "string") {
        await vscode.env.clipboard.writeText(r.text);
        void vscode.window.showInformationMessage(`TileLang: copied ${String(r.lines)} line(s) of generated ${String(r.language)} source.`);
      }
      return r;
    }),
    vscode.commands.registerCommand(SERVER_COMMANDS.restartServer, () => restartServer(server)),
    vscode.commands.registerCommand(CLIENT_COMMANDS.selectTarget, () => selectTarget(context)),
    vscode.commands.registerCommand(CLIENT_COMMANDS.showOutput, () => server.output.show(true)),
    vscode.languages.registerCodeLensProvider({ scheme: "file", language: "python" }, lenses),
    // Trusting the workspace lifts the restricted-mode trust "none": restart with the setting.
    vscode.workspace.onDidGrantWorkspaceTrust(() => void server.start()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("tilelang.server.command")) void server.start();
      if (e.affectsConfiguration("tilelang.codeLens.enabled") || e.affectsConfiguration("tilelang.target")) {
        lenses.refresh();
      }
    }),
  );

  // A different interpreter selected in the Python extension: restart on it, unless the
  // setting tilelang.server.command decides.
  void onInterpreterChanged(async () => {
    const next = await server.resolve();
    if (next.source !== "setting" && !sameLaunch(next, server.currentLaunch)) void server.start();
  }).then((watch) => watch && context.subscriptions.push(watch));
}

export async function deactivate(): Promise<void> {
  await controller?.stop();
  controller = undefined;
}

interface KernelRef {
  uri: string;
  name: string;
}

/**
 * The kernel a command acts on: the arguments given by a code lens or code action
 * (`[uri, name]`), else the kernel under the cursor, else the only kernel in the file,
 * else one picked from a list.
 */
async function resolveKernel(uriArg: unknown, nameArg: unknown): Promise<KernelRef | undefined> {
  if (typeof nameArg === "string" && nameArg) {
    const uri = uriArg instanceof vscode.Uri ? uriArg.toString() : typeof uriArg === "string" ? uriArg : undefined;
    if (uri) return { uri, name: nameArg };
  }
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.languageId !== "python") {
    void vscode.window.showInformationMessage("TileLang: open a Python file with a @tilelang.jit or @T.prim_func kernel.");
    return undefined;
  }
  const doc = editor.document;
  if (isGeneratedPath(doc.uri.fsPath)) {
    void vscode.window.showInformationMessage("TileLang: this is a generated file; run the command from the kernel's source file.");
    return undefined;
  }
  const kernels = findKernels(doc.getText());
  const uri = doc.uri.toString();
  const here = kernelAt(kernels, editor.selection.active.line);
  if (here) return { uri, name: here.name };
  if (kernels.length === 1) return { uri, name: kernels[0].name };
  if (kernels.length === 0) {
    void vscode.window.showInformationMessage(
      `TileLang: no @tilelang.jit or @T.prim_func kernel in ${vscode.workspace.asRelativePath(doc.uri)}.`,
    );
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(
    kernels.map((k) => ({ label: k.name, description: `line ${k.defLine + 1} · ${k.kind}`, kernel: k })),
    { placeHolder: "Which kernel?" },
  );
  return pick ? { uri, name: pick.kernel.name } : undefined;
}

async function runServerCommand(
  server: ServerController,
  command: string,
  args: unknown[],
): Promise<CommandResult | undefined> {
  try {
    return asCommandResult(await server.executeCommand(command, args));
  } catch (e) {
    if (e instanceof ServerNotRunning) {
      const restart = "Restart server";
      const output = "Show Output";
      const pick = await vscode.window.showErrorMessage(`TileLang: ${e.message}.`, restart, output);
      if (pick === restart) await server.start();
      else if (pick === output) server.output.show(true);
      return undefined;
    }
    const msg = e instanceof Error ? e.message : String(e);
    if (/cancel/i.test(msg)) return undefined;
    void vscode.window.showErrorMessage(`TileLang: ${command} failed: ${msg}`);
    return undefined;
  }
}

/**
 * "Restart server": when the server runs, ask it to restart its analysis process (fresh
 * tilelang import, caches dropped); when it does not answer within 10 s, is not running,
 * or the command that would start it changed, restart the server process itself.
 */
async function restartServer(server: ServerController): Promise<void> {
  const next = await server.resolve();
  if (server.isRunning && sameLaunch(next, server.currentLaunch)) {
    const cts = new vscode.CancellationTokenSource();
    const timer = setTimeout(() => cts.cancel(), 10_000);
    try {
      await server.executeCommand(SERVER_COMMANDS.restartServer, [], cts.token);
      return;
    } catch (e) {
      server.output.warn(`tilelang.restartServer did not complete (${String(e)}); restarting the process`);
    } finally {
      clearTimeout(timer);
      cts.dispose();
    }
  }
  await server.start();
}

/** Open a generated file beside the kernel, in the language mode its extension implies. */
async function openBeside(uri: vscode.Uri, takeFocus: boolean): Promise<boolean> {
  try {
    let doc = await vscode.workspace.openTextDocument(uri);
    const lang = languageFor(uri.fsPath, await vscode.languages.getLanguages());
    if (lang && doc.languageId !== lang) doc = await vscode.languages.setTextDocumentLanguage(doc, lang);
    const visible = vscode.window.visibleTextEditors.find((e) => e.document.uri.toString() === uri.toString());
    await vscode.window.showTextDocument(doc, {
      viewColumn: visible?.viewColumn ?? vscode.ViewColumn.Beside,
      preserveFocus: !takeFocus,
      preview: false,
    });
    return true;
  } catch (e) {
    void vscode.window.showErrorMessage(`TileLang: cannot open ${uri.fsPath}: ${String(e)}`);
    return false;
  }
}

async function selectTarget(context: vscode.ExtensionContext): Promise<void> {
  const cfg = vscode.workspace.getConfiguration("tilelang");
  const current = cfg.get<string>("target");
  const prop = context.extension.packageJSON?.contributes?.configuration?.properties?.["tilelang.target"];
  const descriptions: string[] = Array.isArray(prop?.enumDescriptions) ? prop.enumDescriptions : [];
  const items = TARGETS.map((t, i) => ({
    label: t,
    description: t === current ? "current" : undefined,
    detail: descriptions[i],
  }));
  const pick = await vscode.window.showQuickPick(items, { placeHolder: `TileLang target (now ${current})` });
  if (!pick || pick.label === current) return;
  const where = vscode.workspace.workspaceFolders?.length
    ? vscode.ConfigurationTarget.Workspace
    : vscode.ConfigurationTarget.Global;
  await cfg.update("target", pick.label, where);
}

/** "Show generated source | Benchmark kernel" above each kernel function. */
class KernelCodeLensProvider implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;

  constructor(private readonly server: ServerController) {}

  refresh(): void {
    this.changed.fire();
  }

  provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    const cfg = vscode.workspace.getConfiguration("tilelang");
    if (!cfg.get<boolean>("codeLens.enabled", true) || isGeneratedPath(doc.uri.fsPath)) return [];
    const target = cfg.get<string>("target") || "sm_90a";
    const uri = doc.uri.toString();
    const out: vscode.CodeLens[] = [];
    const trace = this.server.serverCommands.has(OPTIONAL_SERVER_COMMANDS.showLoweringTrace);
    for (const k of findKernels(doc.getText())) {
      const range = lensRange(doc, k);
      const args = [uri, k.name];
      out.push(
        new vscode.CodeLens(range, {
          title: `$(file-code) Show generated source (${target})`,
          command: SERVER_COMMANDS.showGeneratedSource,
          arguments: args,
          tooltip: `Compile ${k.name} for ${target} and open the generated source beside this file`,
        }),
        new vscode.CodeLens(range, {
          title: "$(dashboard) Benchmark",
          command: SERVER_COMMANDS.benchmarkKernel,
          arguments: args,
          tooltip: `Compile ${k.name} and time it (latency, TFLOP/s or GB/s)`,
        }),
      );
      if (trace) {
        out.push(
          new vscode.CodeLens(range, {
            title: "$(list-tree) Lowering trace",
            command: OPTIONAL_SERVER_COMMANDS.showLoweringTrace,
            arguments: args,
            tooltip: `Show the IR of ${k.name} after each compiler pass`,
          }),
        );
      }
    }
    return out;
  }

  dispose(): void {
    this.changed.dispose();
  }
}

function lensRange(doc: vscode.TextDocument, k: KernelInfo): vscode.Range {
  const line = Math.min(k.startLine, doc.lineCount - 1);
  return new vscode.Range(line, 0, line, 0);
}
