#!/usr/bin/env node
// Bundle the extension with esbuild.
//   node scripts/build.mjs          dist/extension.js, minified (what the .vsix ships)
//   node scripts/build.mjs --dev    dist/extension.js with a source map, not minified
//   node scripts/build.mjs --pure   out/pure/*.js: the vscode-free modules, for `node --test`
import * as esbuild from "esbuild";
import { fileURLToPath } from "node:url";
import path from "node:path";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const args = new Set(process.argv.slice(2));
const t0 = Date.now();

if (args.has("--pure")) {
  // Each pure module is bundled on its own; bundling fails if one of them imports `vscode`
  // (it is not marked external here), which keeps them testable outside VS Code.
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: ["src/commands.ts", "src/kernels.ts", "src/launch.ts", "src/results.ts"],
    outdir: "out/pure",
    bundle: true,
    format: "cjs",
    platform: "node",
    target: "node20",
    logLevel: "warning",
  });
  console.log(`built out/pure in ${Date.now() - t0} ms`);
} else {
  const dev = args.has("--dev");
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: ["src/extension.ts"],
    outfile: "dist/extension.js",
    bundle: true,
    external: ["vscode"],
    format: "cjs",
    platform: "node",
    target: "node18",
    minify: !dev,
    sourcemap: dev,
    metafile: true,
    logLevel: "warning",
  });
  const bytes = result.metafile.outputs["dist/extension.js"].bytes;
  console.log(`built dist/extension.js (${(bytes / 1024).toFixed(0)} KiB${dev ? ", dev" : ""}) in ${Date.now() - t0} ms`);
}
