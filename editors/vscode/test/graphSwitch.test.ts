import { test } from "node:test";
import assert from "node:assert/strict";
import { GraphSelection, graphsToPick, offeredGraphs, showGraphArguments } from "../src/graphSwitch";
import { graphHtml } from "../src/graphHtml";
import { targetFromArgs } from "../src/modules";

const URI = "file:///p/talky.py";
const EXPORT_DOC = { version: 1, name: "Talky", status: "traced", target: "export", title: "exported program (ATen)", nodes: [], problems: [] };

test("the switch offers the FX graph and the targets the server made a graph of, in a fixed order", () => {
  assert.deepEqual(offeredGraphs(["compile", "export"]), ["fx", "export", "compile"]);
  assert.deepEqual(offeredGraphs(["export"]), ["fx", "export"]);
  assert.deepEqual(offeredGraphs(["symbolic_trace", "onnx", 3]), ["fx"], "only export and compile have graphs of their own");
  assert.deepEqual(offeredGraphs(undefined), ["fx"], "an older server's answer offers nothing to switch to");
});

test("the palette asks between the FX graph and the graphs of the targets the file was analysed for", () => {
  assert.deepEqual(graphsToPick(["symbolic_trace"]), ["fx"], "nothing to ask");
  assert.deepEqual(graphsToPick(["compile"]), ["fx", "compile"]);
  assert.deepEqual(graphsToPick(["compile", "symbolic_trace", "export"]), ["fx", "export", "compile"]);
});

test("a module with only its FX graph gets no switch", () => {
  const graphs = new GraphSelection();
  graphs.answered({ graphs: [] });
  assert.equal(graphs.switch, undefined);
  graphs.answered({});
  assert.equal(graphs.switch, undefined);
});

test("the request sent names the target of the shown graph, none for the FX graph", () => {
  assert.deepEqual(showGraphArguments(URI, "Talky", "fx"), [URI, "Talky", "json"]);
  assert.deepEqual(showGraphArguments(URI, "Talky", "compile"), [URI, "Talky", "json", "compile"]);
  assert.deepEqual(new GraphSelection("export").request(URI, "Talky"), [URI, "Talky", "json", "export"]);
});

test("a click on an offered graph is the next request of the same panel; anything else is not", () => {
  const graphs = new GraphSelection();
  assert.deepEqual(graphs.request(URI, "Talky"), [URI, "Talky", "json"]);
  graphs.answered({ graphs: ["compile"] });
  assert.deepEqual(graphs.switch, {
    shown: "fx",
    choices: [{ graph: "fx", label: "FX graph" }, { graph: "compile", label: "compile graphs" }],
  });
  assert.equal(graphs.choose({ type: "chooseGraph", graph: "export" }), false, "export made no graph of it");
  assert.equal(graphs.choose({ type: "reveal", graph: "compile" }), false);
  assert.equal(graphs.choose({ type: "chooseGraph", graph: "fx" }), false, "already shown");
  assert.equal(graphs.choose(null), false);
  assert.equal(graphs.shown, "fx");
  assert.equal(graphs.choose({ type: "chooseGraph", graph: "compile" }), true);
  assert.deepEqual(graphs.request(URI, "Talky"), [URI, "Talky", "json", "compile"]);
  graphs.answered({ graphs: ["compile"] });
  assert.equal(graphs.switch?.shown, "compile");
  assert.equal(graphs.choose({ type: "chooseGraph", graph: "fx" }), true, "and back");
  assert.deepEqual(graphs.request(URI, "Talky"), [URI, "Talky", "json"]);
});

test("a target's graph that is gone falls back to the FX graph once", () => {
  const graphs = new GraphSelection("export");
  assert.equal(graphs.failed(), true);
  assert.deepEqual(graphs.request(URI, "Talky"), [URI, "Talky", "json"]);
  assert.equal(graphs.switch, undefined, "nothing offered until the server answers again");
  assert.equal(graphs.failed(), false, "an FX graph that fails is shown as the error it is");
});

test("the redraw: the page carries the target's document and the switch with it pressed", () => {
  const graphs = new GraphSelection("export");
  graphs.answered({ graphs: ["export", "compile"] });
  const html = graphHtml({
    nonce: "N0nce123",
    cspSource: "vscode-resource:",
    scriptUri: "vscode-resource:/dist/webview.js",
    view: { name: "Talky", status: "traced", graph: EXPORT_DOC, switch: graphs.switch },
  });
  assert.match(html, /<title>export graph: Talky<\/title>/);
  const data = /<script nonce="N0nce123" type="application\/json" id="fxls-graph-data">(.*?)<\/script>/s.exec(html);
  assert.deepEqual(JSON.parse(data![1]), EXPORT_DOC);
  const switchData = /<script nonce="N0nce123" type="application\/json" id="fxls-graph-switch">(.*?)<\/script>/s.exec(html);
  assert.deepEqual(JSON.parse(switchData![1]), {
    shown: "export",
    choices: [
      { graph: "fx", label: "FX graph" },
      { graph: "export", label: "export graph" },
      { graph: "compile", label: "compile graphs" },
    ],
  });
  const fx = graphHtml({ nonce: "N", cspSource: "c", scriptUri: "s", view: { name: "Talky", graph: EXPORT_DOC } });
  assert.doesNotMatch(fx, /fxls-graph-switch/);
  assert.match(fx, /<title>FX graph: Talky<\/title>/);
});

test("fxls.showGraph's fourth argument opens a target's graph", () => {
  assert.deepEqual(targetFromArgs([URI, "Talky", "json", "compile"]), { uri: URI, className: "Talky", target: "compile" });
  assert.deepEqual(targetFromArgs([URI, "Talky", "json", "onnx"]), { uri: URI, className: "Talky" });
  assert.deepEqual(targetFromArgs([URI, "neg", "pass", "export"]), { uri: URI, className: "neg", format: "pass" });
});
