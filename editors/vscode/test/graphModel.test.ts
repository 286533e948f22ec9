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

/** Whether the segment a-b passes through the inside of `box` (shrunk by 1 px). */
function crosses(a: { x: number; y: number }, b: { x: number; y: number }, box: { x: number; y: number; width: number; height: number }): boolean {
  const x0 = box.x - box.width / 2 + 1, x1 = box.x + box.width / 2 - 1, y0 = box.y - box.height / 2 + 1, y1 = box.y + box.height / 2 - 1;
  for (let t = 0; t <= 1; t += 0.02) {
    const x = a.x + (b.x - a.x) * t;
    const y = a.y + (b.y - a.y) * t;
    if (x > x0 && x < x1 && y > y0 && y < y1) return true;
  }
  return false;
}

test("edges into and out of expanded groups are routed through their ports, around the nodes inside", () => {
  // a residual block: x enters blocks.0 and is used by its first and its last node; the
  // straight line from the frame to `add` would cross `a` and `b`
  const doc: GraphDocument = {
    name: "Res",
    status: "traced",
    nodes: [
      node("x", "placeholder", "x", ["a", "add"], null),
      node("a", "call_function", "torch.relu", ["b"], "blocks.0", 1),
      node("b", "call_function", "torch.sin", ["c"], "blocks.0", 2),
      node("c", "call_function", "torch.cos", ["add"], "blocks.0", 3),
      node("add", "call_function", "operator.add", ["y"], "blocks.0", 4),
      node("y", "call_function", "torch.neg", ["output"], "blocks.1", 5),
      node("z", "call_function", "torch.exp", ["output"], "blocks.1", 6),
      node("output", "output", "output", [], null),
    ],
  };
  const model = buildModel(doc);
  for (const group of model.groups.values()) group.expanded = true;
  const scene = new Layouter(model).scene();
  const frame = scene.frames.find((f) => f.group.path === "blocks.0")!.box;
  const toAdd = scene.edges.find((e) => e.from.id === "n:x" && e.to.id === "n:add")!;
  assert.ok(toAdd.points.length > 3, `routed, not straight: ${JSON.stringify(toAdd.points)}`);
  // it enters the frame through its top border
  assert.ok(toAdd.points.some((p) => Math.abs(p.y - (frame.y - frame.height / 2)) < 0.5 && p.x >= frame.x - frame.width / 2 && p.x <= frame.x + frame.width / 2));
  for (const edge of scene.edges) {
    for (const { node, box } of scene.nodes) {
      if (node === edge.from || node === edge.to) continue;
      for (let i = 0; i + 1 < edge.points.length; i++) {
        assert.ok(!crosses(edge.points[i], edge.points[i + 1], box), `${edge.from.id} -> ${edge.to.id} crosses ${node.id}`);
      }
    }
  }
});

test("a pass's marks count in their groups; a node a pass changed is found by its model line too", () => {
  const doc: GraphDocument = {
    name: "Net, after",
    status: "traced",
    nodes: [
      { ...node("x", "placeholder", "x", ["a"], null), mark: null },
      { ...node("a", "call_function", "torch.relu", ["b"], "blocks.0", 20), mark: "added" },
      { ...node("b", "call_function", "torch.sin", ["output"], "blocks.0", 21), mark: "rewired", origin: { file: "/p/m.py", line: 3, end_line: 3, col: 0, end_col: 5 } },
      node("c", "call_function", "torch.cos", ["output"], "blocks.0", 4),
      node("output", "output", "output", [], null),
    ],
  };
  const model = buildModel(doc);
  assert.equal(model.groups.get("blocks.0")!.changeCount, 2);
  assert.deepEqual(nodesAtLine(model, "/p/m.py", 3).map((n) => n.data.name), ["b"]);
  assert.deepEqual(nodesAtLine(model, "/p/m.py", 20).map((n) => n.data.name), ["a"]);
});
