/** The status-bar item: server state, target (click to change), last benchmark result. */
import * as vscode from "vscode";
import { CLIENT_COMMANDS, DEFAULT_TARGET } from "./commands";
import type { ServerState } from "./server";

export interface BenchmarkShown {
  kernel: string;
  summary: string;
  device?: string;
  cpu: boolean;
  message?: string;
}

export class TileLangStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private serverState: ServerState = "stopped";
  private launch: string | undefined;
  private bench: BenchmarkShown | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor() {
    this.item = vscode.window.createStatusBarItem("tilelang.status", vscode.StatusBarAlignment.Right, 100);
    this.item.name = "TileLang";
    this.disposables.push(
      this.item,
      vscode.window.onDidChangeActiveTextEditor(() => this.updateVisibility()),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration("tilelang.target")) this.render();
      }),
    );
    this.render();
    this.updateVisibility();
  }

  setServerState(state: ServerState, launch?: string): void {
    this.serverState = state;
    this.launch = launch;
    this.render();
    this.updateVisibility();
  }

  setBenchmark(b: BenchmarkShown): void {
    this.bench = b;
    this.render();
  }

  get text(): string {
    return this.item.text;
  }

  private target(): string {
    return vscode.workspace.getConfiguration("tilelang").get<string>("target") || DEFAULT_TARGET;
  }

  private render(): void {
    const target = this.target();
    const icon = {
      stopped: "$(circle-slash)",
      starting: "$(sync~spin)",
      running: "$(chip)",
      failed: "$(error)",
    }[this.serverState];
    let text = `${icon} TileLang ${target}`;
    if (this.bench) text += ` · ${this.bench.kernel} ${this.bench.summary}${this.bench.cpu ? " (CPU)" : ""}`;
    this.item.text = text;
    this.item.backgroundColor =
      this.serverState === "failed" ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
    this.item.command = this.serverState === "failed" ? CLIENT_COMMANDS.showOutput : CLIENT_COMMANDS.selectTarget;

    const md = new vscode.MarkdownString(undefined, true);
    md.appendMarkdown(`**TileLang** — target \`${target}\` (click to change)\n\n`);
    md.appendMarkdown(`Language server: ${this.serverState}`);
    if (this.launch) md.appendMarkdown(`\n\n`).appendText(this.launch);
    if (this.serverState === "failed") md.appendMarkdown(`\n\nClick to see the server output.`);
    if (this.bench) {
      md.appendMarkdown(`\n\n---\n\nLast benchmark: **${this.bench.kernel}** ${this.bench.summary}`);
      if (this.bench.device) md.appendMarkdown(`\n\n`).appendText(`on ${this.bench.device}`);
    }
    this.item.tooltip = md;
  }

  private updateVisibility(): void {
    const doc = vscode.window.activeTextEditor?.document;
    const relevant =
      doc !== undefined && (doc.languageId === "python" || /[\\/]\.tilelang[\\/]/.test(doc.uri.fsPath));
    if (relevant || this.serverState === "failed") this.item.show();
    else this.item.hide();
  }

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
  }
}
