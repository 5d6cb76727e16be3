// Unit tests for the vscode-free modules (built to out/pure by `node scripts/build.mjs --pure`)
// and for the consistency of package.json with them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..");
const require = createRequire(import.meta.url);
const { findKernels, kernelAt } = require(path.join(root, "out/pure/kernels.js"));
const launch = require(path.join(root, "out/pure/launch.js"));
const results = require(path.join(root, "out/pure/results.js"));
const commands = require(path.join(root, "out/pure/commands.js"));
const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
const fixture = (name) => readFileSync(path.join(here, "fixtures", name), "utf8");

test("kernels: every decorator style, top-level only", () => {
  const text = fixture("styles.py");
  const ks = findKernels(text);
  assert.deepEqual(
    ks.map((k) => [k.name, k.kind]),
    [
      ["lazy_factory", "jit"],
      ["eager", "jit"],
      ["bare_prim", "prim_func"],
      ["factory_without_decorator", "factory"],
      ["tuned", "jit"],
    ],
  );
  const lines = text.split("\n");
  for (const k of ks) {
    assert.match(lines[k.defLine], new RegExp(`def ${k.name}\\(`));
    assert.equal(lines[k.defLine].slice(k.nameColumn, k.nameColumn + k.name.length), k.name);
    assert.match(lines[k.startLine], k.kind === "factory" ? /^def / : /^@/);
  }
  const tuned = ks.find((k) => k.name === "tuned");
  assert.match(lines[tuned.startLine], /^@tl\.autotune/, "range starts at the first decorator");
  const lazy = ks.find((k) => k.name === "lazy_factory");
  assert.match(lines[lazy.endLine], /return main/, "body ends at its last line, not at a blank line");
  // the docstring's fake decorator and def do not end `eager` early
  const eager = ks.find((k) => k.name === "eager");
  assert.match(lines[eager.endLine], /return A/);
});

test("kernels: the quickstart and the cursor lookup", () => {
  const text = fixture("quickstart.py");
  const ks = findKernels(text);
  assert.deepEqual(
    ks.map((k) => k.name),
    ["matmul"],
  );
  const lines = text.split("\n");
  const inBody = lines.findIndex((l) => l.includes("T.gemm(A_shared"));
  assert.equal(kernelAt(ks, inBody)?.name, "matmul");
  const mainLine = lines.findIndex((l) => l.startsWith("def main"));
  assert.equal(kernelAt(ks, mainLine), undefined);
  assert.equal(kernelAt(ks, 0), undefined);
});

test("kernels: tolerant of broken and empty input", () => {
  assert.deepEqual(findKernels(""), []);
  const broken = 'import tilelang\n@tilelang.jit\ndef k(:\n    s = """never closed\n@tilelang.jit\ndef later():\n';
  const ks = findKernels(broken);
  assert.deepEqual(
    ks.map((k) => k.name),
    ["k"],
  );
  assert.equal(findKernels("x = 'unterminated\n@tilelang.jit\ndef ok():\n    pass\n")[0]?.name, "ok");
});

test("launch: setting wins, then the Python extension, then python3", () => {
  const s = launch.resolveLaunch({ setting: "/opt/venv/bin/tilelang-lsp", pythonFromExtension: ["/usr/bin/python3.12"] });
  assert.equal(s.command, "/opt/venv/bin/tilelang-lsp");
  assert.deepEqual(s.args, ["--stdio"]);
  assert.equal(s.source, "setting");

  const arr = launch.resolveLaunch({ setting: ["/my py/python", "-m", "tilelang_lsp", "--stdio"] });
  assert.equal(arr.command, "/my py/python");
  assert.deepEqual(arr.args, ["-m", "tilelang_lsp", "--stdio"], "--stdio is not appended twice");
  assert.deepEqual(arr.python, ["/my py/python"]);

  const quoted = launch.resolveLaunch({ setting: `"/my py/python" -m tilelang_lsp --log-level 'DEBUG'` });
  assert.deepEqual([quoted.command, ...quoted.args], ["/my py/python", "-m", "tilelang_lsp", "--log-level", "DEBUG", "--stdio"]);

  const ext = launch.resolveLaunch({ setting: null, pythonFromExtension: ["/home/u/.venv/bin/python"] });
  assert.deepEqual([ext.command, ...ext.args], ["/home/u/.venv/bin/python", "-m", "tilelang_lsp", "--stdio"]);
  assert.equal(ext.source, "python-extension");

  const conda = launch.resolveLaunch({ setting: [], pythonFromExtension: ["conda", "run", "-n", "tl", "python"] });
  assert.deepEqual([conda.command, ...conda.args], ["conda", "run", "-n", "tl", "python", "-m", "tilelang_lsp", "--stdio"]);

  for (const setting of [undefined, null, "", "   ", [], [""], 42]) {
    const d = launch.resolveLaunch({ setting, platform: "linux" });
    assert.deepEqual([d.command, ...d.args], ["python3", "-m", "tilelang_lsp", "--stdio"], String(setting));
    assert.equal(d.source, "default");
  }
  assert.equal(launch.resolveLaunch({ setting: null, platform: "win32" }).command, "python");
  assert.ok(launch.sameLaunch(ext, launch.resolveLaunch({ setting: "", pythonFromExtension: ["/home/u/.venv/bin/python"] })));
  assert.ok(!launch.sameLaunch(ext, s));
});

test("launch: failures are explained with the fix", () => {
  const d = launch.resolveLaunch({ setting: null, platform: "linux" });
  const missing = launch.explainFailure(d, { exitCode: 1, stderr: "/usr/bin/python3: No module named tilelang_lsp\n" });
  assert.match(missing, /not installed for python3/);
  assert.match(missing, /pip install "tilelang\[lsp\]"/);
  assert.match(missing, /tilelang\.server\.command/);

  const pygls = launch.explainFailure(d, {
    exitCode: 1,
    stderr: 'Traceback (most recent call last):\n  File "x"\nModuleNotFoundError: No module named \'pygls\'\n',
  });
  assert.match(pygls, /No module named 'pygls'/);
  assert.match(pygls, /python3 -m pip install "tilelang\[lsp\]"/);

  const noPython = launch.explainFailure(d, { errorCode: "ENOENT" });
  assert.match(noPython, /no Python interpreter "python3"/);
  const custom = launch.resolveLaunch({ setting: "/nope/tilelang-lsp" });
  assert.match(launch.explainFailure(custom, { errorCode: "ENOENT" }), /"\/nope\/tilelang-lsp" was not found \(tilelang\.server\.command\)/);
  assert.match(launch.explainFailure(custom, { exitCode: 2, stderr: "" }), /exit code 2/);
});

test("launch: the restart budget stops a crash loop", () => {
  let now = 0;
  const b = new launch.RestartBudget(3, 180_000, () => now);
  assert.ok(b.tryRestart());
  assert.ok(b.tryRestart());
  assert.ok(b.tryRestart());
  assert.ok(!b.tryRestart(), "the fourth crash within 3 minutes is not restarted");
  now += 181_000;
  assert.ok(b.tryRestart(), "old crashes age out of the window");
  assert.ok(!new launch.RestartBudget(0).tryRestart(), "maxRestarts 0 never restarts");
});

test("results: language modes for generated files", () => {
  const vscodeLangs = ["plaintext", "c", "cpp", "cuda-cpp", "python"];
  assert.equal(results.languageFor("/w/.tilelang/dump/quickstart.matmul.cu", vscodeLangs), "cuda-cpp");
  assert.equal(results.languageFor("/w/.tilelang/dump/quickstart.matmul.c", vscodeLangs), "c");
  assert.equal(results.languageFor("/w/.tilelang/dump/quickstart.matmul.hip", vscodeLangs), "cpp");
  assert.equal(results.languageFor("/w/.tilelang/dump/quickstart.matmul.metal", vscodeLangs), "cpp");
  assert.equal(results.languageFor("/w/.tilelang/dump/q.matmul.metal", [...vscodeLangs, "metal"]), "metal");
  assert.equal(results.languageFor("/w/x.cu", ["plaintext", "cpp"]), "cpp", "no CUDA support installed");
  assert.equal(results.languageFor("/w/x.unknown", vscodeLangs), undefined);
  assert.ok(results.isGeneratedPath("/w/.tilelang/dump/a.k.cu"));
  assert.ok(results.isGeneratedPath("C:\\w\\.tilelang\\dump\\a.k.cu"));
  assert.ok(!results.isGeneratedPath("/w/tilelang/dump/a.k.cu"));
});

test("results: command results and benchmark summaries", () => {
  assert.equal(results.resultPath({ path: "/w/.tilelang/dump/a.k.cu" }), "/w/.tilelang/dump/a.k.cu");
  assert.equal(results.resultPath({ uri: "file:///w/.tilelang/dump/a%20b.k.cu" }), "/w/.tilelang/dump/a b.k.cu");
  assert.equal(results.resultPath({ error: "boom" }), undefined);
  assert.deepEqual(results.asCommandResult(null), {});
  assert.equal(results.benchmarkSummary({ latency_ms: 0.12345, tflops: 612.3 }), "0.123 ms · 612.3 TFLOP/s");
  assert.equal(results.benchmarkSummary({ latency_ms: 1.5, tflops: null, gbps: 2950.04 }), "1.500 ms · 2950.0 GB/s");
  assert.equal(results.benchmarkSummary({ latency_ms: 2, tflops: 3.14159 }), "2.000 ms · 3.14 TFLOP/s");
  assert.equal(results.benchmarkSummary({ message: "x" }), undefined);
  assert.ok(results.ranOnCpu({ device: "CPU (c backend; no GPU on this machine)" }));
  assert.ok(!results.ranOnCpu({ device: "NVIDIA H200" }));
});

test("package.json: commands, menus, settings and activation agree with the code", () => {
  assert.equal(pkg.main, "./dist/extension.js");
  assert.equal(pkg.engines.vscode, "^1.91.0");
  assert.equal(pkg.devDependencies["@types/vscode"], "1.91.0", "@types/vscode must not be newer than engines.vscode");
  assert.ok(pkg.activationEvents.includes("onLanguage:python"));
  const contributed = pkg.contributes.commands.map((c) => c.command).sort();
  const known = [
    ...Object.values(commands.SERVER_COMMANDS),
    ...Object.values(commands.OPTIONAL_SERVER_COMMANDS),
    ...Object.values(commands.CLIENT_COMMANDS),
  ].sort();
  assert.deepEqual(contributed, known, "every contributed command is implemented, and vice versa");
  for (const c of pkg.contributes.commands) {
    assert.equal(c.category, "TileLang", c.command);
    assert.ok(c.title && !c.title.startsWith("TileLang"), `${c.command}: the category supplies the prefix`);
  }
  const trace = pkg.contributes.commands.find((c) => c.command === commands.OPTIONAL_SERVER_COMMANDS.showLoweringTrace);
  assert.equal(trace.enablement, commands.LOWERING_TRACE_CONTEXT, "lowering trace is enabled only when the server has it");
  for (const m of pkg.contributes.menus.commandPalette) assert.ok(contributed.includes(m.command), m.command);

  const props = pkg.contributes.configuration.properties;
  assert.deepEqual(props["tilelang.target"].enum, [...commands.TARGETS]);
  assert.equal(props["tilelang.target"].default, commands.DEFAULT_TARGET);
  assert.equal(props["tilelang.target"].enumDescriptions.length, commands.TARGETS.length);
  for (const k of ["buffers", "kernel", "ops"]) assert.equal(props[`tilelang.inlayHints.${k}`].default, true, k);
  assert.equal(props["tilelang.analysis.timeoutMs"].default, 2000);
  for (const key of [
    "tilelang.benchmark.warmup",
    "tilelang.benchmark.rep",
    "tilelang.server.command",
    "tilelang.python",
    "tilelang.trace.server",
  ])
    assert.ok(props[key], key);
  for (const [key, p] of Object.entries(props)) {
    assert.ok(key.startsWith("tilelang."), key);
    assert.ok(p.markdownDescription || p.description, `${key} is documented`);
  }
});

test("package.json: the server's target list matches", () => {
  // tilelang_lsp/config.py is the server's source of truth; compare when it is present.
  const config = path.resolve(root, "..", "tilelang_lsp", "config.py");
  let text;
  try {
    text = readFileSync(config, "utf8");
  } catch {
    return;
  }
  const m = /TARGETS\s*=\s*\(([^)]*)\)/.exec(text);
  assert.ok(m, "TARGETS in tilelang_lsp/config.py");
  const serverTargets = [...m[1].matchAll(/"([^"]+)"/g)].map((x) => x[1]).sort();
  assert.deepEqual([...commands.TARGETS].sort(), serverTargets);
});

test("package.json: restricted mode is supported with trust none, and the trust setting is the server's", () => {
  const untrusted = pkg.capabilities.untrustedWorkspaces;
  assert.equal(untrusted.supported, "limited");
  for (const key of ["tilelang.server.command", "tilelang.python", "tilelang.analysis.trust"]) {
    assert.ok(untrusted.restrictedConfigurations.includes(key), key);
  }
  const trust = pkg.contributes.configuration.properties["tilelang.analysis.trust"];
  assert.deepEqual(trust.enum, ["kernels", "workspace", "none"]); // tilelang_lsp/config.py TRUST
  assert.equal(trust.default, "kernels");
  const src = readFileSync(path.join(root, "src", "server.ts"), "utf8");
  assert.match(src, /isTrusted\) return "none"/); // initializationOptions
  assert.match(src, /configuration: async \(params, token, next\)/); // workspace/configuration answers
});
