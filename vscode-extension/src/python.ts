/**
 * The interpreter selected in the Python extension (ms-python.python), when it is installed.
 *
 * Only the small part of its public API that we use is typed here: the
 * `environments` API (2023+) and, as a fallback, the older
 * `settings.getExecutionDetails`.
 */
import * as vscode from "vscode";

const PYTHON_EXTENSION_ID = "ms-python.python";

interface ResolvedEnvironment {
  executable: { uri?: vscode.Uri };
}

interface PythonApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { id: string; path: string };
    resolveEnvironment(env: { id: string; path: string } | string): Promise<ResolvedEnvironment | undefined>;
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
  };
  settings?: {
    getExecutionDetails?(resource?: vscode.Uri): { execCommand: string[] | undefined };
    onDidChangeExecutionDetails?: vscode.Event<unknown>;
  };
}

function timeout<T>(ms: number, value: T): Promise<T> {
  return new Promise((resolve) => setTimeout(() => resolve(value), ms));
}

async function api(): Promise<PythonApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonApi>(PYTHON_EXTENSION_ID);
  if (!ext) return undefined;
  try {
    if (!ext.isActive) {
      const activated = await Promise.race([ext.activate().then(() => true), timeout(15_000, false)]);
      if (!activated) return undefined;
    }
    return ext.exports;
  } catch {
    return undefined;
  }
}

/** The interpreter command (e.g. `["/home/me/.venv/bin/python"]`), or undefined. */
export async function selectedInterpreter(resource?: vscode.Uri): Promise<string[] | undefined> {
  const py = await api();
  if (!py) return undefined;
  try {
    if (py.environments) {
      const active = py.environments.getActiveEnvironmentPath(resource);
      const env = await py.environments.resolveEnvironment(active);
      const exe = env?.executable.uri?.fsPath;
      if (exe) return [exe];
    }
    const cmd = py.settings?.getExecutionDetails?.(resource).execCommand;
    if (cmd && cmd.length) return cmd;
  } catch {
    // An API mismatch is not fatal: fall back to python3.
  }
  return undefined;
}

/** Subscribe to interpreter changes in the Python extension (no-op when it is absent). */
export async function onInterpreterChanged(listener: () => void): Promise<vscode.Disposable | undefined> {
  const py = await api();
  const event = py?.environments?.onDidChangeActiveEnvironmentPath ?? py?.settings?.onDidChangeExecutionDetails;
  return event ? event(() => listener()) : undefined;
}
