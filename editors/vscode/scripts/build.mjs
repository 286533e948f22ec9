// Bundles the extension (node, cjs, `vscode` external) and the graph webview script
// (browser, iife, with @viz-js/viz). `--tests` bundles test/*.test.ts into out-test/ with
// `vscode` aliased to test/vscode-stub.ts instead.
import * as esbuild from "esbuild";
import { readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = new Set(process.argv.slice(2));
const production = !args.has("--dev");
const logLevel = "warning";

async function buildExtension() {
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: ["src/extension.ts"],
    outfile: "dist/extension.js",
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node18",
    external: ["vscode"],
    minify: production,
    sourcemap: !production,
    logLevel,
  });
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: ["src/webview/graph.ts"],
    outfile: "dist/webview.js",
    bundle: true,
    platform: "browser",
    format: "iife",
    target: "es2020",
    minify: production,
    logLevel,
  });
}

async function buildTests() {
  rmSync(join(root, "out-test"), { recursive: true, force: true });
  const tests = readdirSync(join(root, "test"))
    .filter((name) => name.endsWith(".test.ts"))
    .map((name) => `test/${name}`);
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: tests,
    outdir: "out-test",
    outExtension: { ".js": ".test.cjs" },
    entryNames: "[name]",
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node18",
    alias: { vscode: "./test/vscode-stub.ts" },
    external: ["node:*"],
    sourcemap: "inline",
    logLevel,
  });
}

if (args.has("--tests")) {
  await buildTests();
} else {
  rmSync(join(root, "dist"), { recursive: true, force: true });
  await buildExtension();
}
