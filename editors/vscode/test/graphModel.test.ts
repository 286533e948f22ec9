// The graph view's model and layout (src/graphview), without a browser.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Layouter } from "../src/graphview/layout";
import { GraphDocument, GraphNodeData, buildModel, nodesAtLine, search, shownAs } from "../src/graphview/model";

function node(name: string, op: string, target: string, users: string[], path: string | null, line = 0): GraphNodeData {
  return {
    name, op, target, args: "()", kwargs: "{}", users, module_path: path, module_type: null, shape: [2, 8], dtype: "float32",
    span: line ? { file: "/p/m.py", line, end_line: line, col: 4, end_col: 20 } : null,
  };
}

// x -> blocks.0.fc (leaf Linear) -> blocks.0 relu -> blocks.1.fc -> blocks.1 add (twice the
// leaf drop) -> output
const DOC: GraphDocument = {
  name: "Net",
  status: "partial",
  nodes: [
    node("x", "placeholder", "x", ["blocks_0_fc"], null),
    node("blocks_0_fc", "call_module", "blocks.0.fc", ["relu"], "blocks.0.fc", 10),
    node("relu", "call_function", "torch.relu", ["blocks_1_fc"], "blocks.0", 11),
    node("blocks_1_fc", "call_module", "blocks.1.fc", ["drop", "add"], "blocks.1.fc", 10),
    node("drop", "call_module", "blocks.1.drop", ["drop_1"], "blocks.1.drop", 12),
    node("drop_1", "call_module", "blocks.1.drop", ["add"], "blocks.1.drop", 12),
    node("add", "call_function", "operator.add", ["output"], "blocks.1", 13),
    node("output", "output", "output", [], null),
  ],
  problems: [{ code: "FX001", severity: "error", message: "branch", span: null, nodes: ["relu"] }],
};

test("nodes are grouped by module path; a leaf module's calls are not a group", () => {
  const model = buildModel(DOC);
  assert.deepEqual([...model.groups.keys()].sort(), ["", "blocks", "blocks.0", "blocks.1"]);
  const blocks = model.groups.get("blocks")!;
  assert.equal(blocks.nodeCount, 6);
  assert.equal(blocks.problemCount, 1);
  assert.deepEqual(model.groups.get("blocks.1")!.children.map((c) => c.id), ["n:blocks_1_fc", "n:drop", "n:drop_1", "n:add"]);
  assert.equal(model.groups.get("blocks.0")!.label, "blocks.0");
  assert.deepEqual(model.nodes.get("relu")!.problems.map((p) => p.code), ["FX001"]);
});

test("an edge is laid out in the lowest group holding both ends", () => {
  const model = buildModel(DOC);
  const edge = model.edges.find((e) => e.from.data.name === "relu")!;
  assert.equal(edge.home.path, "blocks");
  assert.equal(edge.fromItem.id, "g:blocks.0");
  assert.equal(edge.toItem.id, "g:blocks.1");
  const inner = model.edges.find((e) => e.from.data.name === "drop")!;
  assert.equal(inner.home.path, "blocks.1");
  assert.equal(inner.fromItem.id, "n:drop");
});

test("collapsed groups show their nodes; expanding lays out only the groups on the path", () => {
  const model = buildModel(DOC);
  const layouter = new Layouter(model);
  let scene = layouter.scene();
  assert.deepEqual(scene.collapsed.map((c) => c.group.path), ["blocks"]);
  assert.deepEqual(scene.nodes.map((n) => n.node.data.name).sort(), ["output", "x"]);
  assert.equal(shownAs(model.nodes.get("add")!).id, "g:blocks");
  assert.equal(scene.edges.length, 2, "x -> blocks -> output");
  const blocks = model.groups.get("blocks")!;
  blocks.expanded = true;
  layouter.invalidate(blocks);
  scene = layouter.scene();
  assert.equal(layouter.lastLaidOut, 2, "blocks and the root");
  assert.deepEqual(scene.collapsed.map((c) => c.group.path).sort(), ["blocks.0", "blocks.1"]);
  for (const group of model.groups.values()) group.expanded = true;
  layouter.invalidateAll();
  scene = layouter.scene();
  assert.equal(scene.nodes.length, 8);
  const frame = scene.frames.find((f) => f.group.path === "blocks.1")!.box;
  for (const name of ["drop", "add"]) {
    const box = scene.boxes.get(`n:${name}`)!;
    assert.ok(Math.abs(box.x - frame.x) <= frame.width / 2 && Math.abs(box.y - frame.y) <= frame.height / 2, `${name} inside its group`);
  }
  for (const edge of scene.edges) assert.ok(edge.points.length >= 2);
  assert.ok(scene.edges.some((e) => e.label === "2×8"), "edges carry the source's shape");
});

test("search by name, op or target; nodes of a source line", () => {
  const model = buildModel(DOC);
  assert.deepEqual(search(model, "DROP").map((n) => n.data.name), ["drop", "drop_1"]);
  assert.deepEqual(search(model, "call_function").map((n) => n.data.name), ["relu", "add"]);
  assert.deepEqual(search(model, "torch.relu").map((n) => n.data.name), ["relu"]);
  assert.deepEqual(search(model, " "), []);
  assert.deepEqual(nodesAtLine(model, "/p/m.py", 10).map((n) => n.data.name), ["blocks_0_fc", "blocks_1_fc"]);
  assert.deepEqual(nodesAtLine(model, "/p/other.py", 10), []);
});
