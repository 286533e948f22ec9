import { test } from "node:test";
import assert from "node:assert/strict";
import { classNames, enclosingClass, enclosingDefinition, targetFromArgs, withoutCommands } from "../src/modules";
import { CrashTracker } from "../src/crashes";

const source = `import torch
from torch import nn


class Gate(nn.Module):
    def forward(self, x):
        class Inner:
            pass
        return x


def helper():
    return 1

class Block(nn.Module):  # second
    pass
`;
const lines = source.split("\n");

test("the class enclosing the cursor is found by searching upward", () => {
  assert.equal(enclosingClass(lines, 0), undefined);
  assert.equal(enclosingClass(lines, 4), "Gate");
  assert.equal(enclosingClass(lines, 6), "Gate", "an indented class is not a module");
  assert.equal(enclosingClass(lines, 8), "Gate");
  assert.equal(enclosingClass(lines, 15), "Block");
  assert.equal(enclosingClass(lines, 1000), "Block");
});

test("top-level class names, in order", () => {
  assert.deepEqual(classNames(source), ["Gate", "Block"]);
  assert.deepEqual(classNames("x = 1\r\nclass A:\r\n  pass\r\n"), ["A"]);
  assert.deepEqual(classNames(""), []);
});

test("code lens arguments name the module", () => {
  assert.deepEqual(targetFromArgs(["file:///m.py", "Gate", "code"]), { uri: "file:///m.py", className: "Gate" });
  assert.deepEqual(targetFromArgs(["file:///m.py", "Gate"]), { uri: "file:///m.py", className: "Gate" });
  assert.equal(targetFromArgs([]), undefined);
  assert.equal(targetFromArgs([{ path: "/m.py" }, "Gate"]), undefined);
  assert.equal(targetFromArgs(["file:///m.py", ""]), undefined);
});

test("the extension keeps fxls.showGraph; the server's other commands stay", () => {
  assert.deepEqual(withoutCommands({ commands: ["fxls.showGraph", "fxls.restartWorker"] }, ["fxls.showGraph"]), {
    commands: ["fxls.restartWorker"],
  });
  const options = { commands: ["a"], workDoneProgress: true };
  assert.deepEqual(withoutCommands(options, ["b"]), options);
  assert.deepEqual(options.commands, ["a"], "the input is not changed");
});

test("a crashing server is restarted a few times, then left stopped", () => {
  let now = 0;
  const tracker = new CrashTracker(4, 180_000, () => now);
  for (let i = 0; i < 4; i++) {
    assert.equal(tracker.crashed(), true);
    now += 1000;
  }
  assert.equal(tracker.crashed(), false);
  assert.equal(tracker.recent, 5);
  // crashes older than the window are forgotten
  now += 200_000;
  assert.equal(tracker.recent, 0);
  assert.equal(tracker.crashed(), true);
  tracker.reset();
  assert.equal(tracker.recent, 0);
});

test("a pass's code lens targets its before/after view", () => {
  assert.deepEqual(targetFromArgs(["file:///p.py", "relu_to_gelu", "pass"]), {
    uri: "file:///p.py", className: "relu_to_gelu", format: "pass",
  });
});

test("the definition around the cursor: a class, a function or a global", () => {
  const lines = ["import torch", "class Net(nn.Module):", "    def forward(self, x):", "        return x", "",
    "def fuse(gm):", "    for n in gm.graph.nodes:", "        pass", "pm = PassManager([fuse])", "x == 1"];
  assert.equal(enclosingDefinition(lines, 0), undefined);
  assert.equal(enclosingDefinition(lines, 3), "Net");
  assert.equal(enclosingDefinition(lines, 6), "fuse");
  assert.equal(enclosingDefinition(lines, 9), "pm");
});
