// Bundles the extension (node, cjs, `vscode` external) and the graph view script (browser,
// iife, with the dagre layout library) into dist/. `--page` writes the same graph view
// script to fxls/graph_page/graph.js, the package data file that `fxls graph --format html`
// inlines (committed: the CLI never runs npm). `--tests` bundles test/*.test.ts into
// out-test/ with `vscode` aliased to test/vscode-stub.ts instead.
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
  await buildGraphView("dist/webview.js");
}

/** The graph view (src/graphview/main.ts) as one script; always minified, so that the
 * committed page bundle is the same bytes whoever builds it. */
export async function buildGraphView(outfile) {
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: ["src/graphview/main.ts"],
    outfile,
    bundle: true,
    platform: "browser",
    format: "iife",
    target: "es2020",
    minify: true,
    legalComments: "none",
    banner: { js: "/* fxls graph view (editors/vscode/src/graphview), with @dagrejs/dagre (MIT). Built by: cd editors/vscode && npm run build:page */" },
    logLevel,
  });
}

export const PAGE_BUNDLE = join(root, "..", "..", "fxls", "graph_page", "graph.js");

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
} else if (args.has("--page")) {
  await buildGraphView(process.env.FXLS_PAGE_BUNDLE || PAGE_BUNDLE);
} else {
  rmSync(join(root, "dist"), { recursive: true, force: true });
  await buildExtension();
}
