// The graph view's legibility (src/graphview): shape bookkeeping folded into its consumer,
// names fitted to their boxes, edge labels that avoid each other; without a browser.
import { test } from "node:test";
import assert from "node:assert/strict";
import { placeLabels } from "../src/graphview/edgelabels";
import { GROUP_HEADER, Layouter, nodeSize, nodeSubtitle, nodeTitle, nodeTooltip } from "../src/graphview/layout";
import { GraphDocument, GraphNodeData, buildModel, reveal, search, shownAs } from "../src/graphview/model";

function node(name: string, op: string, target: string, args: string, users: string[], path: string | null, shape: number[] | null): GraphNodeData {
  return { name, op, target, args, kwargs: "{}", users, module_path: path, module_type: null, shape, dtype: shape ? "float32" : null, span: null };
}

// timm's attention: `B, N, C = x.shape` read for a reshape, a patch embedding's size check
// (`_assert(eq(x.shape[2], 224))`) that nothing consumes, and a size nobody reads
const DOC: GraphDocument = {
  name: "Vit",
  status: "traced",
  nodes: [
    node("x", "placeholder", "x", "()", ["getattr_1", "proj"], null, [1, 3, 8, 8]),
    node("getattr_1", "call_function", "builtins.getattr", "(%x, shape)", ["getitem", "getitem_1"], "embed", null),
    node("getitem", "call_function", "operator.getitem", "(%getattr_1, 0)", [], "embed", null),
    node("getitem_1", "call_function", "operator.getitem", "(%getattr_1, 2)", ["eq"], "embed", null),
    node("eq", "call_function", "operator.eq", "(%getitem_1, 224)", ["_assert"], "embed", null),
    node("_assert", "call_function", "torch._assert", "(%eq, 'height')", [], "embed", null),
    node("proj", "call_module", "embed.proj", "(%x,)", ["getattr_2", "qkv"], "embed.proj", [1, 4, 16]),
    node("getattr_2", "call_function", "builtins.getattr", "(%proj, shape)", ["getitem_2", "getitem_3"], "attn", null),
    node("getitem_2", "call_function", "operator.getitem", "(%getattr_2, 0)", ["reshape"], "attn", null),
    node("getitem_3", "call_function", "operator.getitem", "(%getattr_2, 1)", ["reshape"], "attn", null),
    node("qkv", "call_module", "attn.qkv", "(%proj,)", ["reshape"], "attn.qkv", [1, 4, 48]),
    node("reshape", "call_method", "reshape", "(%qkv, %getitem_2, %getitem_3, 3, 16)", ["zeros"], "attn", [1, 4, 3, 16]),
    // a tensor made from a size is not bookkeeping, though shapes are unknown here
    node("zeros", "call_function", "torch.zeros", "(%reshape,)", ["output"], "attn", null),
    node("output", "output", "output", "(%zeros,)", [], null, null),
  ],
};

const FOLDED = ["getattr_1", "getitem", "getitem_1", "eq", "_assert", "getattr_2", "getitem_2", "getitem_3"];

test("shape bookkeeping is folded into its consumer, or into what it measured when nothing consumes it", () => {
  const model = buildModel(DOC);
  const into = (name: string) => model.nodes.get(name)!.foldedInto?.data.name ?? null;
  assert.deepEqual(FOLDED.map(into), ["x", "x", "x", "x", "x", "reshape", "reshape", "reshape"]);
  assert.equal(into("zeros"), null);
  assert.deepEqual(model.nodes.get("reshape")!.folded.map((n) => n.data.name), ["getattr_2", "getitem_2", "getitem_3"]);
  // the folded nodes are in no group: `embed` held only its size check and the leaf's call
  assert.deepEqual([...model.groups.keys()].sort(), ["", "attn"]);
  const drawn = model.edges.filter((e) => !e.folded).map((e) => `${e.from.data.name}>${e.to.data.name}`);
  assert.deepEqual(drawn, ["x>proj", "proj>qkv", "qkv>reshape", "reshape>zeros", "zeros>output"]);
});

test("showBookkeeping shows every node as a node of its own", () => {
  const model = buildModel(DOC, { showBookkeeping: true });
  assert.ok([...model.nodes.values()].every((n) => !n.foldedInto && n.folded.length === 0));
  assert.equal(model.edges.filter((e) => e.folded).length, 0);
  const scene = new Layouter(expandAll(model)).scene();
  assert.equal(scene.nodes.length, DOC.nodes.length);
});

test("a problem's node is never folded", () => {
  const model = buildModel({ ...DOC, problems: [{ code: "FX001", severity: "error", message: "m", span: null, nodes: ["eq"] }] });
  assert.equal(model.nodes.get("eq")!.foldedInto, null);
  assert.equal(model.nodes.get("_assert")!.foldedInto, null, "it checks what is shown");
});

test("search finds a folded node and leads to its consumer", () => {
  const model = buildModel(DOC);
  const [found] = search(model, "getitem_3");
  assert.equal(found.data.name, "getitem_3");
  assert.equal(shownAs(found).id, "g:attn", "collapsed: the group around its consumer");
  assert.deepEqual(reveal(found).map((g) => g.path), ["attn"]);
  assert.equal(shownAs(found).id, "n:reshape");
  const layouter = new Layouter(model);
  const scene = layouter.scene();
  assert.equal(scene.nodes.length, DOC.nodes.length - FOLDED.length);
  assert.deepEqual(scene.boxes.get("n:getitem_3"), scene.boxes.get("n:reshape"), "centred on where it is folded");
});

function expandAll<T extends ReturnType<typeof buildModel>>(model: T): T {
  for (const group of model.groups.values()) group.expanded = true;
  return model;
}

test("a node's name is written relative to its group and cut in the middle to fit its box, whole in its tooltip", () => {
  const long = "bert_encoder_layer_0_attention_self_value_projection_with_a_long_tail_11";
  const doc: GraphDocument = {
    name: "Bert",
    status: "traced",
    nodes: [
      node("x", "placeholder", "x", "()", ["bert_encoder_layer_0_attention_self_value", long], null, [2, 16]),
      { ...node("bert_encoder_layer_0_attention_self_value", "call_module", "bert.encoder.layer.0.attention.self.value", "(%x,)", ["add"], "bert.encoder.layer.0.attention.self.value", [2, 16]), module_type: "torch.nn.modules.linear.Linear" },
      node(long, "call_function", "torch.ops.aten.addmm.default", "(%x,)", ["add"], "bert.encoder.layer.0.attention.self", [2, 16]),
      node("add", "call_function", "operator.add", "(%a, %b)", ["output"], "bert.encoder.layer.0.attention.self", [2, 16]),
      node("output", "output", "output", "(%add,)", [], null, null),
    ],
  };
  const model = buildModel(doc);
  const value = model.nodes.get("bert_encoder_layer_0_attention_self_value")!;
  assert.equal(nodeTitle(value), "value");
  assert.equal(nodeSubtitle(value), "Linear");
  assert.equal(nodeTooltip(value), "bert_encoder_layer_0_attention_self_value: call_module bert.encoder.layer.0.attention.self.value [2, 16]");
  const cut = model.nodes.get(long)!;
  assert.equal(nodeTitle(cut), "value_proje…ith_a_long_tail_11", "30 characters at 13 px in 264 px");
  assert.equal(nodeSubtitle(cut), "aten.addmm");
  assert.ok(nodeSize(cut).width <= 264);
  assert.equal(nodeTooltip(model.nodes.get("add")!), "add: call_function operator.add [2, 16]", "its shape, whose edge label may not be drawn");
  assert.equal(nodeTooltip(model.nodes.get("output")!), "", "nothing shortened, no shape: no tooltip");
});

test("one label per source and shape, none over a node", () => {
  const down = (x: number) => [{ x, y: 0 }, { x, y: 100 }];
  const places = placeLabels(
    [
      { key: "a|2×8", text: "2×8", points: down(0) },
      { key: "a|2×8", text: "2×8", points: down(40) },
      { key: "b|2×8", text: "2×8", points: down(200) },
    ],
    // a node right of the third edge's middle: its label goes left of the line
    [{ x: 240, y: 50, width: 60, height: 40 }],
  );
  assert.ok(places[0] && places[0].x > 0, "right of its line");
  assert.equal(places[1], null, "the same source's shape is written once");
  assert.ok(places[2] && places[2].x < 200, "left of its line, off the node");
});

test("export's symbolic sizes are bookkeeping too", () => {
  // `b = x.shape[0]` under a dynamic batch, as `fxls graph --target export` writes it
  const model = buildModel({
    name: "Net",
    status: "traced",
    nodes: [
      node("x", "placeholder", "x", "()", ["linear", "sym_size_int_1"], null, null),
      node("sym_size_int_1", "call_function", "aten.sym_size.int", "(%x, 0)", ["view", "reshape"], null, null),
      node("linear", "call_function", "aten.linear.default", "(%x, %w)", ["view"], null, [4, 8]),
      node("view", "call_function", "aten.view.default", "(%linear, [%sym_size_int_1, 2, 4])", ["reshape"], null, [4, 2, 4]),
      node("reshape", "call_function", "aten.reshape.default", "(%view, [%sym_size_int_1, -1])", ["output"], null, [4, 8]),
      node("output", "output", "output", "((%reshape,),)", [], null, null),
    ],
  });
  assert.equal(model.nodes.get("sym_size_int_1")!.foldedInto?.data.name, "view");
  assert.equal(nodeSubtitle(model.nodes.get("view")!), "aten.view · +1");
});

test("a Sequential's numbered child is named with the Sequential: `downsample_0`", () => {
  const model = buildModel({
    name: "Net",
    status: "traced",
    nodes: [
      node("x", "placeholder", "x", "()", ["layer_downsample_0"], null, [1, 8]),
      { ...node("layer_downsample_0", "call_module", "layer.downsample.0", "(%x,)", ["layer_downsample_1"], "layer.downsample.0", [1, 8]), module_type: "torch.nn.modules.conv.Conv2d" },
      { ...node("layer_downsample_1", "call_module", "layer.downsample.1", "(%a,)", ["output"], "layer.downsample.1", [1, 8]), module_type: "torch.nn.modules.batchnorm.BatchNorm2d" },
      node("output", "output", "output", "(%b,)", [], null, null),
    ],
  });
  assert.equal(model.nodes.get("layer_downsample_0")!.parent.path, "layer.downsample");
  assert.deepEqual(["layer_downsample_0", "layer_downsample_1"].map((n) => nodeTitle(model.nodes.get(n)!)), ["downsample_0", "downsample_1"]);
});

test("an edge crosses the frames it enters straight, never along their title bands", () => {
  // x -> enc.layer.0.attn.{q,k} (three frames deep) -> enc.layer.0.add -> output
  const model = buildModel({
    name: "Enc",
    status: "traced",
    nodes: [
      node("x", "placeholder", "x", "()", ["q", "k", "add"], null, [1, 8]),
      node("q", "call_function", "torch.relu", "(%x,)", ["mul"], "enc.layer.0.attn", [1, 8]),
      node("k", "call_function", "torch.tanh", "(%x,)", ["mul"], "enc.layer.0.attn", [1, 8]),
      node("mul", "call_function", "operator.mul", "(%q, %k)", ["add"], "enc.layer.0.attn", [1, 8]),
      node("add", "call_function", "operator.add", "(%mul, %x)", ["output"], "enc.layer.0", [1, 8]),
      node("output", "output", "output", "(%add,)", [], null, null),
    ],
  });
  const scene = new Layouter(expandAll(model)).scene();
  assert.deepEqual(scene.frames.map((f) => f.group.path), ["enc", "enc.layer", "enc.layer.0", "enc.layer.0.attn"]);
  for (const edge of scene.edges) {
    edge.points.slice(1).forEach((b, i) => {
      const a = edge.points[i];
      for (const { group, box } of scene.frames) {
        const top = box.y - box.height / 2;
        const inBand = (p: { y: number }) => p.y >= top - 0.5 && p.y <= top + GROUP_HEADER + 0.5;
        assert.ok(!(inBand(a) && inBand(b) && Math.abs(a.x - b.x) > 0.5), `${edge.from.id} -> ${edge.to.id} runs along ${group.path}'s title band`);
      }
    });
  }
});
