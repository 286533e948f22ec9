// The manifest declares what the brief and the server need.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULTS } from "../src/settings";

const manifest = JSON.parse(readFileSync(join(__dirname, "..", "package.json"), "utf8"));
const properties = manifest.contributes.configuration.properties;

test("activation, entry point and workspace trust", () => {
  assert.equal(manifest.name, "fxls");
  assert.equal(manifest.publisher, "fxls");
  assert.equal(manifest.engines.vscode, "^1.90.0");
  assert.equal(manifest.main, "./dist/extension.js");
  assert.deepEqual(manifest.activationEvents, ["onLanguage:python", "onNotebook:jupyter-notebook"]);
  assert.deepEqual(manifest.capabilities.untrustedWorkspaces, {
    supported: false,
    description: "fxls executes your model code to trace it",
  });
});

test("every setting is contributed with the server's defaults", () => {
  assert.deepEqual(Object.keys(properties).sort(), [
    "fxls.allowNetwork",
    "fxls.allowWrite",
    "fxls.diagnostics.ignore",
    "fxls.diagnostics.select",
    "fxls.inlayHints.shapes",
    "fxls.interpreter",
    "fxls.python",
    "fxls.targets",
    "fxls.trace.mode",
    "fxls.trace.onChange",
    "fxls.trace.onSave",
    "fxls.trace.timeout",
    "fxls.worker.learnLibraries",
  ]);
  assert.equal(properties["fxls.trace.onSave"].default, DEFAULTS.trace.onSave);
  assert.equal(properties["fxls.trace.onChange"].default, DEFAULTS.trace.onChange);
  assert.equal(properties["fxls.trace.timeout"].default, DEFAULTS.trace.timeout);
  assert.equal(properties["fxls.trace.mode"].default, "project");
  assert.equal(properties["fxls.inlayHints.shapes"].default, DEFAULTS.inlayHints.shapes);
  assert.equal(properties["fxls.worker.learnLibraries"].default, DEFAULTS.worker.learnLibraries);
  assert.deepEqual(properties["fxls.diagnostics.select"].default, []);
  assert.deepEqual(properties["fxls.diagnostics.ignore"].default, []);
  assert.equal(properties["fxls.python"].type, "string");
  assert.equal(properties["fxls.interpreter"].type, "string");
  assert.deepEqual(properties["fxls.targets"].default, []);
  assert.deepEqual(properties["fxls.targets"].items.enum, ["symbolic_trace", "export", "compile"]);
});

test("settings that widen the sandbox are the user's only: a repository's .vscode/settings.json cannot set them", () => {
  assert.equal(properties["fxls.allowWrite"].scope, "machine");
  assert.equal(properties["fxls.allowNetwork"].scope, "machine");
  assert.deepEqual(properties["fxls.allowWrite"].default, DEFAULTS.allowWrite);
  assert.equal(properties["fxls.allowNetwork"].default, DEFAULTS.allowNetwork);
});

test("the four commands are contributed (fxls.checkProject is the server's, registered by the client)", () => {
  assert.deepEqual(
    manifest.contributes.commands.map((c: { command: string }) => c.command).sort(),
    ["fxls.checkProject", "fxls.restart", "fxls.showGraph", "fxls.showLogs"],
  );
});
