import { test } from "node:test";
import assert from "node:assert/strict";
import { StatusInput, countSeverities, fromCache, statusFor, targetsOf } from "../src/status";
import { StatusBar } from "../src/statusBar";
import { StubStatusBarItem, ThemeColor } from "./vscode-stub";

const none = { error: 0, warning: 0, info: 0, hint: 0 };
const base: StatusInput = { client: "running", isPython: true, traced: true, counts: none, fileName: "model.py" };

test("diagnostics are counted by severity, fxls's only", () => {
  const counts = countSeverities([
    { severity: 0, source: "fxls" },
    { severity: 0, source: "fxls" },
    { severity: 1, source: "fxls" },
    { severity: 2, source: "fxls" },
    { severity: 3, source: "fxls" },
    { severity: 0, source: "Pylance" },
    { source: "fxls" },
  ]);
  assert.deepEqual(counts, { error: 3, warning: 1, info: 1, hint: 1 });
});

test("a traced file with problems", () => {
  const status = statusFor({ ...base, counts: { error: 1, warning: 1, info: 0, hint: 0 } });
  assert.equal(status.text, "$(error) fxls: 2 problems");
  assert.equal(status.tooltip, "1 error, 1 warning in model.py. Click to open the Problems view.");
  assert.equal(status.action, "showProblems");
  assert.equal(statusFor({ ...base, counts: { ...none, warning: 1 } }).text, "$(warning) fxls: 1 problem");
});

test("a clean file", () => {
  const status = statusFor(base);
  assert.equal(status.text, "$(check) fxls: clean");
  assert.equal(status.action, "showGraph");
  assert.equal(status.visible, true);
});

test("not traced yet, tracing, starting, stopped, failed", () => {
  assert.equal(statusFor({ ...base, traced: false }).text, "fxls: not traced");
  assert.equal(statusFor({ ...base, tracing: true }).text, "$(loading~spin) fxls: tracing");
  assert.equal(statusFor({ ...base, client: "starting" }).text, "$(loading~spin) fxls: starting");
  const stopped = statusFor({ ...base, client: "stopped" });
  assert.equal(stopped.text, "fxls: stopped");
  assert.equal(stopped.action, "showLogs");
  const failed = statusFor({ ...base, client: "failed", isPython: false });
  assert.equal(failed.visible, true, "a failed server shows whatever the file");
  assert.equal(failed.level, "error");
  assert.equal(failed.action, "restart");
});

test("the targets the server analysed the file for, and why", () => {
  const compile = { targets: ["compile"], because: "from the settings" };
  const status = statusFor({ ...base, counts: { ...none, warning: 1 }, targets: compile });
  assert.equal(status.text, "$(warning) fxls: 1 problem · compile");
  assert.equal(status.tooltip, "1 warning in model.py. Targets: compile (from the settings). Click to open the Problems view.");
  const both = statusFor({ ...base, targets: { targets: ["export", "compile"], because: "inferred (export: `torch.export.export` in train.py; compile: `torch.compile` in train.py)" } });
  assert.equal(both.text, "$(check) fxls: clean · export, compile");
  assert.match(both.tooltip, /Targets: export, compile \(inferred \(export: .* in train.py\)\)\./);
  // symbolic tracing alone (what fxls always checked): said in the tooltip only
  const usual = statusFor({ ...base, targets: { targets: ["symbolic_trace"], because: "the default: nothing in the project calls torch.export, torch.compile or torch.fx" } });
  assert.equal(usual.text, "$(check) fxls: clean");
  assert.match(usual.tooltip, /Targets: symbolic_trace \(the default: nothing/);
  // while tracing, the trace is what the item says
  assert.equal(statusFor({ ...base, tracing: true, targets: compile }).text, "$(loading~spin) fxls: tracing");
});

test("the targets are read from fxls/analysisDone's params", () => {
  assert.deepEqual(targetsOf({ uri: "file:///m.py", version: 2, targets: ["symbolic_trace", "compile"], targetsBecause: "from the settings; Net: compile (its pragma)" }),
    { targets: ["symbolic_trace", "compile"], because: "from the settings; Net: compile (its pragma)" });
  assert.deepEqual(targetsOf({ targets: ["export"], targetsBecause: null }), { targets: ["export"], because: undefined });
  assert.equal(targetsOf({ uri: "file:///m.py", version: 2 }), undefined, "an older server sends none");
  assert.equal(targetsOf({ targets: [] }), undefined);
  assert.equal(targetsOf({ targets: [3] }), undefined);
  assert.equal(targetsOf(undefined), undefined);
});

test("a report from the server's result cache says so until the fresh analysis replaces it", () => {
  const cached = statusFor({ ...base, counts: { ...none, warning: 1 }, cached: true });
  assert.equal(cached.text, "$(warning) fxls: 1 problem (cached)");
  assert.equal(cached.tooltip, "1 warning in model.py. From the result cache (the file, its imports, settings and environment are as when it was analysed); its analysis is running. Click to open the Problems view.");
  assert.equal(statusFor({ ...base, cached: true }).text, "$(check) fxls: clean (cached)");
  const compile = { targets: ["compile"], because: "from the settings" };
  assert.equal(statusFor({ ...base, cached: true, targets: compile }).text, "$(check) fxls: clean · compile (cached)");
  assert.equal(statusFor({ ...base, counts: { ...none, warning: 1 }, cached: false }).text, "$(warning) fxls: 1 problem");
  assert.equal(fromCache({ uri: "file:///m.py", version: 2, targets: ["symbolic_trace"], cached: true }), true);
  assert.equal(fromCache({ uri: "file:///m.py", version: 2, targets: ["symbolic_trace"] }), false, "a fresh report");
  assert.equal(fromCache({ cached: "yes" }), false);
  assert.equal(fromCache(undefined), false);
});

test("hidden for files that are not Python", () => {
  assert.equal(statusFor({ ...base, isPython: false }).visible, false);
});

test("the status bar item follows the status", () => {
  const bar = new StatusBar();
  const item = bar.item as unknown as StubStatusBarItem;
  assert.equal(item.id, "fxls.status");
  bar.update({ ...base, counts: { ...none, error: 2 } });
  assert.equal(item.text, "$(error) fxls: 2 problems");
  assert.equal(item.command, "workbench.actions.view.problems");
  assert.equal(item.visible, true);
  assert.equal(item.backgroundColor, undefined);
  bar.update({ ...base, client: "failed" });
  assert.equal(item.command, "fxls.restart");
  assert.deepEqual(item.backgroundColor, new ThemeColor("statusBarItem.errorBackground"));
  bar.update({ ...base, isPython: false });
  assert.equal(item.visible, false);
  bar.dispose();
  assert.equal(item.disposed, true);
});
