import { test } from "node:test";
import assert from "node:assert/strict";
import { StatusInput, countSeverities, statusFor } from "../src/status";
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
