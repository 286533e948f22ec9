// What the group panel says about a module (src/graphview/groupinfo.ts), without a browser.
import { test } from "node:test";
import assert from "node:assert/strict";
import { boundary, definedAt, groupList, opCounts, sameBadge, sameSiblings } from "../src/graphview/groupinfo";
import { GraphDocument, GraphNodeData, Group, buildModel } from "../src/graphview/model";

function node(name: string, op: string, target: string, users: string[], path: string | null, shape: number[] = [2, 8]): GraphNodeData {
  return { name, op, target, args: "()", kwargs: "{}", users, module_path: path, module_type: null, shape, dtype: "float32", span: null };
}

/** x -> blocks.i: fc (a leaf Linear) -> relu -> add(fc's input) for i in 0..n-1 -> head ->
 * output; `odd` changes one block's relu into a sigmoid. */
function stack(n: number, odd = -1): GraphDocument {
  const nodes = [node("x", "placeholder", "x", ["blocks_0_fc", "add_0"], null)];
  for (let i = 0; i < n; i++) {
    const next = i + 1 < n ? [`blocks_${i + 1}_fc`, `add_${i + 1}`] : ["head"];
    const act = i === odd ? "torch.sigmoid" : "torch.relu";
    nodes.push(
      node(`blocks_${i}_fc`, "call_module", `blocks.${i}.fc`, [`act_${i}`], `blocks.${i}.fc`),
      node(`act_${i}`, "call_function", act, [`add_${i}`], `blocks.${i}`),
      node(`add_${i}`, "call_function", "operator.add", next, `blocks.${i}`),
    );
  }
  nodes.push(node("head", "call_module", "head", ["output"], "head", [2, 4]), node("output", "output", "output", [], null, [2, 4]));
  const groups = [
    { path: "blocks", type: "torch.nn.modules.container.Sequential", defined: { file: "/torch/container.py", line: 59 } },
    ...Array.from({ length: n }, (_, i) => ({ path: `blocks.${i}`, type: "net.Block", defined: { file: "/p/net.py", line: 5 } })),
    { path: "head", type: "torch.nn.modules.linear.Linear", defined: null },
  ];
  return { name: "Net", status: "traced", nodes, groups };
}

function group(doc: GraphDocument, path: string): [ReturnType<typeof buildModel>, Group] {
  const model = buildModel(doc);
  return [model, model.groups.get(path)!];
}

test("a group's class is defined where the document says; a group without a place has none", () => {
  const [model, block] = group(stack(3), "blocks.1");
  assert.deepEqual(definedAt(model, block), { file: "/p/net.py", line: 5 });
  assert.deepEqual(definedAt(model, model.groups.get("blocks")!), { file: "/torch/container.py", line: 59 });
  const bare = buildModel({ ...stack(3), groups: null });
  assert.equal(definedAt(bare, bare.groups.get("blocks.1")!), null);
});

test("the values entering and leaving a group, each once, with their shapes", () => {
  const [model, block] = group(stack(3), "blocks.1");
  const { inputs, outputs } = boundary(model, block);
  // add_0 feeds both blocks.1's fc and its add: one input
  assert.deepEqual(inputs.map((v) => [v.node.data.name, v.shape]), [["add_0", "float32[2, 8]"]]);
  assert.deepEqual(outputs.map((v) => [v.node.data.name, v.shape]), [["add_1", "float32[2, 8]"]]);
  const whole = boundary(model, model.groups.get("blocks")!);
  assert.deepEqual(whole.inputs.map((v) => v.node.data.name), ["x"]);
  assert.deepEqual(whole.outputs.map((v) => v.node.data.name), ["add_2"]);
});

test("a group's nodes by op, the most frequent first", () => {
  const [model, blocks] = group(stack(3), "blocks");
  assert.equal(opCounts(model, blocks), "call_function 6, call_module 3");
});

test("identical siblings are the same as each other; one that differs is not", () => {
  const [model] = group(stack(12, 4), "blocks.0");
  const same = (path: string) => sameSiblings(model, model.groups.get(path)!).map((g) => g.path);
  assert.deepEqual(same("blocks.0"), ["blocks.1", "blocks.2", "blocks.3", "blocks.5", "blocks.6", "blocks.7", "blocks.8", "blocks.9", "blocks.10", "blocks.11"]);
  assert.deepEqual(same("blocks.4"), []);
  assert.equal(groupList(sameSiblings(model, model.groups.get("blocks.0")!)), "blocks.1-3, 5-11");
  assert.equal(groupList(sameSiblings(model, model.groups.get("blocks.5")!)), "blocks.0-3, 6-11");
});

test("a sibling whose shapes differ is not the same", () => {
  const doc = stack(3);
  doc.nodes.find((n) => n.name === "act_2")!.shape = [2, 9];
  const [model, block] = group(doc, "blocks.0");
  assert.deepEqual(sameSiblings(model, block).map((g) => g.path), ["blocks.1"]);
});

test("a sibling without shapes (a partial graph's, past where its inputs ran) is not different", () => {
  const doc = stack(3);
  for (const n of doc.nodes) if (n.module_path?.startsWith("blocks.2")) n.shape = null;
  const [model, block] = group(doc, "blocks.0");
  assert.deepEqual(sameSiblings(model, block).map((g) => g.path), ["blocks.1", "blocks.2"]);
});

test("paths that are not numbered siblings are listed whole", () => {
  const paths = (...names: string[]) => names.map((path) => ({ path }) as Group);
  assert.equal(groupList(paths("encoder.attn", "decoder.attn")), "decoder.attn, encoder.attn");
  assert.equal(groupList(paths("layer.10", "layer.2", "layer.3")), "layer.2-3, 10");
});

test("a closed group with identical siblings carries a badge counting them, the list in its tooltip", () => {
  const [model, block] = group(stack(12), "blocks.0");
  const badge = sameBadge(model, block, 120);
  assert.match(badge, /<title>same as blocks\.1-11<\/title>/);
  assert.match(badge, />×12<\/text>/);
  assert.equal(sameBadge(model, model.groups.get("blocks")!, 120), "");
});
