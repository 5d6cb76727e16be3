#!/usr/bin/env node
// Build the .vsix exactly as a user would (`vsce package --no-dependencies`, offline) and check
// what is inside: manifest fields, activation, commands, settings, files, size, and that the
// bundled extension loads and exports activate/deactivate.
//   node scripts/check-vsix.mjs [--keep]     (--keep: leave tilelang-<version>.vsix in the extension folder)
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { builtinModules, createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { listZip, readZipEntry } from "./zip.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
const MAX_BYTES = 1024 * 1024;

// What the product must offer (the spec), checked against what was packaged.
const REQUIRED_COMMANDS = {
  "tilelang.showGeneratedSource": "Show generated source",
  "tilelang.benchmarkKernel": "Benchmark kernel",
  "tilelang.restartServer": "Restart server",
  "tilelang.showLoweringTrace": "Show lowering trace",
};
const REQUIRED_SETTINGS = {
  "tilelang.target": "sm_90a",
  "tilelang.inlayHints.buffers": true,
  "tilelang.inlayHints.kernel": true,
  "tilelang.inlayHints.ops": true,
  "tilelang.analysis.timeoutMs": 2000,
  "tilelang.benchmark.warmup": undefined,
  "tilelang.benchmark.rep": undefined,
  "tilelang.server.command": undefined,
  "tilelang.python": undefined,
};
const REQUIRED_TARGETS = ["sm_90a", "sm_80", "sm_86", "sm_89", "hip:gfx942", "metal", "c"];
const REQUIRED_FILES = [
  "extension/package.json",
  "extension/dist/extension.js",
  "extension/images/icon.png",
  "extension/readme.md",
  "extension/changelog.md",
  "extension/LICENSE.txt",
  "extension.vsixmanifest",
];

const failures = [];
const check = (ok, what) => {
  if (!ok) failures.push(what);
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
};

const t0 = Date.now();
const tmp = mkdtempSync(path.join(os.tmpdir(), "tilelang-vsix-"));
const vsixName = `${pkg.name}-${pkg.version}.vsix`;
const vsixPath = path.join(tmp, vsixName);
try {
  // vsce runs the vscode:prepublish script (the esbuild build) first.
  const vsce = path.join(root, "node_modules", "@vscode", "vsce", "vsce");
  execFileSync(process.execPath, [vsce, "package", "--no-dependencies", "--out", vsixPath], {
    cwd: root,
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, npm_config_offline: "true", CI: "1" },
  });
  const size = statSync(vsixPath).size;
  console.log(`packaged ${vsixName}: ${(size / 1024).toFixed(1)} KiB in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  check(size < MAX_BYTES, `size ${size} B < 1 MiB`);

  const zip = readFileSync(vsixPath);
  const entries = listZip(zip);
  const read = (name) => readZipEntry(zip, entries.get(name));
  for (const f of REQUIRED_FILES) check(entries.has(f), `contains ${f}`);
  const stray = [...entries.keys()].filter((n) =>
    /(^|\/)(node_modules|src|test|scripts|out|\.e2e)\/|\.ts$|\.map$|\.vsix$|tsconfig|eslint/.test(n),
  );
  check(stray.length === 0, `no sources, tests, node_modules or maps (${stray.join(", ") || "none"})`);

  // -- extension/package.json ------------------------------------------------------------------
  const m = JSON.parse(read("extension/package.json").toString("utf8"));
  check(m.name === "tilelang", `name is "tilelang" (${m.name})`);
  check(m.version === pkg.version && /^\d+\.\d+\.\d+$/.test(m.version), `version ${m.version}`);
  check(typeof m.publisher === "string" && m.publisher.length > 0, `publisher ${m.publisher}`);
  check(m.license === "Apache-2.0", `license ${m.license}`);
  check(m.engines?.vscode === "^1.91.0", `engines.vscode ${m.engines?.vscode}`);
  check(m.main === "./dist/extension.js", `main ${m.main}`);
  check(m.icon === "images/icon.png", `icon ${m.icon}`);
  check(Array.isArray(m.activationEvents) && m.activationEvents.includes("onLanguage:python"), "activationEvents has onLanguage:python");
  check(!m.activationEvents?.includes("*"), "no * activation");
  check(!m.dependencies || Object.keys(m.dependencies).every((d) => d === "vscode-languageclient"), "runtime deps: only the bundled languageclient");

  const cmds = new Map((m.contributes?.commands ?? []).map((c) => [c.command, c]));
  for (const [id, title] of Object.entries(REQUIRED_COMMANDS)) {
    const c = cmds.get(id);
    check(c && c.title === title && c.category === "TileLang", `command ${id}: "TileLang: ${title}"`);
  }
  check(
    cmds.get("tilelang.showLoweringTrace")?.enablement === "tilelang.loweringTraceAvailable",
    "Show lowering trace is enabled only when the server registers it",
  );
  const props = m.contributes?.configuration?.properties ?? {};
  for (const [key, def] of Object.entries(REQUIRED_SETTINGS)) {
    const p = props[key];
    check(p && (def === undefined || p.default === def) && (p.description || p.markdownDescription), `setting ${key}${def === undefined ? "" : ` = ${JSON.stringify(def)}`}, documented`);
  }
  check(JSON.stringify(props["tilelang.target"]?.enum) === JSON.stringify(REQUIRED_TARGETS), "tilelang.target enum");
  check(
    JSON.stringify(props["tilelang.server.command"]?.type) === JSON.stringify(["array", "string", "null"]),
    "tilelang.server.command accepts an array or a string",
  );

  // -- extension.vsixmanifest --------------------------------------------------------------------
  const xml = read("extension.vsixmanifest").toString("utf8");
  check(new RegExp(`<Identity[^>]*Id="tilelang"[^>]*Version="${pkg.version.replace(/\./g, "\\.")}"`).test(xml), "vsixmanifest identity and version");
  check(/Microsoft\.VisualStudio\.Services\.Icons\.Default" Path="extension\/images\/icon\.png"/.test(xml), "vsixmanifest icon asset");
  check(/Microsoft\.VisualStudio\.Code\.Engine" Value="\^1\.91\.0"/.test(xml), "vsixmanifest engine");

  // -- icon: a real 128x128 PNG ---------------------------------------------------------------------
  const icon = read("extension/images/icon.png");
  const isPng = icon.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  check(isPng && icon.readUInt32BE(16) === 128 && icon.readUInt32BE(20) === 128, "icon is a 128x128 PNG");

  // -- the bundle: self-contained, loads, exports activate/deactivate --------------------------------
  const js = read("extension/dist/extension.js").toString("utf8");
  const requires = new Set([...js.matchAll(/require\(["']([^"']+)["']\)/g)].map((x) => x[1]));
  const builtins = new Set([...builtinModules, ...builtinModules.map((b) => `node:${b}`)]);
  const external = [...requires].filter((r) => r !== "vscode" && !builtins.has(r));
  check(external.length === 0, `bundle requires only vscode and Node built-ins (${external.join(", ") || "ok"})`);
  const loaded = loadWithStubVscode(js, tmp);
  check(typeof loaded.activate === "function" && typeof loaded.deactivate === "function", "bundle loads and exports activate/deactivate");

  if (process.argv.includes("--keep")) {
    copyFileSync(vsixPath, path.join(root, vsixName));
    console.log(`kept ${path.join(root, vsixName)}`);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}

if (failures.length) {
  console.error(`\n${failures.length} check(s) failed:\n- ${failures.join("\n- ")}`);
  process.exit(1);
}
console.log(`\nvsix check passed in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

/** Load the bundle with a stand-in `vscode` module: any property is a constructible no-op. */
function loadWithStubVscode(source, dir) {
  const stub = () =>
    new Proxy(function () {}, {
      get: (_t, prop) => (prop === Symbol.toPrimitive ? () => "" : prop === "then" ? undefined : stub()),
      apply: () => stub(),
      construct: () => stub(),
    });
  const file = path.join(dir, "extension.js");
  writeFileSync(file, source);
  const req = createRequire(file);
  const Module = req("node:module");
  const original = Module._load;
  Module._load = function (request, ...rest) {
    return request === "vscode" ? stub() : original.call(this, request, ...rest);
  };
  try {
    return req(file);
  } catch (e) {
    console.error(e);
    return {};
  } finally {
    Module._load = original;
  }
}
