import { test } from "node:test";
import assert from "node:assert/strict";
import {
  DEFAULTS,
  configChangeAction,
  didChangeConfigurationParams,
  initializationOptions,
  serverSettings,
} from "../src/settings";

const reader = (values: Record<string, unknown>) => (key: string) => values[key];

test("defaults when nothing is set", () => {
  const settings = serverSettings(reader({}));
  assert.deepEqual(settings, DEFAULTS);
  assert.equal("python" in settings, false);
  assert.deepEqual(DEFAULTS, {
    trace: { onSave: true, onChange: false, timeout: 30 },
    diagnostics: { select: [], ignore: [] },
    inlayHints: { shapes: true },
    worker: { learnLibraries: true },
    allowWrite: [],
    allowNetwork: false,
  });
});

test("every setting maps to the server's nested form", () => {
  const settings = serverSettings(
    reader({
      "trace.onSave": false,
      "trace.onChange": true,
      "trace.timeout": 2.5,
      python: "/opt/py/bin/python",
      "diagnostics.select": ["FX0"],
      "diagnostics.ignore": ["FX013", " FX010 "],
      "inlayHints.shapes": false,
      "worker.learnLibraries": false,
      allowWrite: ["${workspaceFolder}/../cache", " /data/out "],
      allowNetwork: true,
    }),
    (p) => p.replace("${workspaceFolder}", "/ws"),
  );
  assert.deepEqual(initializationOptions(settings), {
    fxls: {
      trace: { onSave: false, onChange: true, timeout: 2.5 },
      python: "/opt/py/bin/python",
      diagnostics: { select: ["FX0"], ignore: ["FX013", "FX010"] },
      inlayHints: { shapes: false },
      worker: { learnLibraries: false },
      allowWrite: ["/ws/../cache", "/data/out"],
      allowNetwork: true,
    },
  });
  assert.deepEqual(didChangeConfigurationParams(settings), { settings: initializationOptions(settings) });
});

test("wrong types and values fall back to defaults", () => {
  const settings = serverSettings(
    reader({
      "trace.onSave": "yes",
      "trace.timeout": -1,
      python: "   ",
      "diagnostics.select": "FX001",
      "diagnostics.ignore": ["FX013", 7, null, ""],
      "inlayHints.shapes": 1,
    }),
  );
  assert.equal(settings.trace.onSave, true);
  assert.equal(settings.trace.timeout, 30);
  assert.equal(settings.python, undefined);
  assert.deepEqual(settings.diagnostics, { select: [], ignore: ["FX013"] });
  assert.equal(settings.inlayHints.shapes, true);
  assert.equal(serverSettings(reader({ "trace.timeout": Number.NaN })).trace.timeout, 30);
  assert.equal(serverSettings(reader({ "trace.mode": "train" })).trace.mode, "train");
  assert.equal("mode" in serverSettings(reader({ "trace.mode": "project" })).trace, false);
});

test("fxls.python is expanded by the given resolver", () => {
  const settings = serverSettings(reader({ python: "${workspaceFolder}/.venv/bin/python" }), (p) =>
    p.replace("${workspaceFolder}", "/ws"),
  );
  assert.equal(settings.python, "/ws/.venv/bin/python");
});

test("an interpreter change restarts the server; other fxls settings are pushed", () => {
  const affects = (...changed: string[]) => (section: string) =>
    changed.some((key) => key === section || key.startsWith(`${section}.`));
  assert.equal(configChangeAction(affects("fxls.interpreter")), "restart");
  assert.equal(configChangeAction(affects("fxls.trace.timeout")), "push");
  assert.equal(configChangeAction(affects("fxls.python")), "push");
  assert.equal(configChangeAction(affects("fxls.interpreter", "fxls.trace.onSave")), "restart");
  assert.equal(configChangeAction(affects("python.defaultInterpreterPath")), "none");
});

test("targets are sent when set, and left to the project when empty", () => {
  assert.deepEqual(serverSettings(reader({ targets: ["export", " compile "] })).targets, ["export", "compile"]);
  assert.equal("targets" in serverSettings(reader({ targets: [] })), false);
});
