// The DOT that `fxls graph --format dot` writes renders with the Graphviz the webview bundles.
import { test } from "node:test";
import assert from "node:assert/strict";
import { instance } from "@viz-js/viz";

const DOT = `digraph "GatedResidual" {
  rankdir=TB;
  node [fontname="monospace", fontsize=10];
  "x" [label="x\\nplaceholder: x", shape=ellipse, style=filled, fillcolor="#e8f4fd"];
  "proj" [label="proj\\ncall_module: proj", shape=box, style="filled", fillcolor="#ede7f6"];
  "gt" [label="gt\\ncall_function: operator.gt", shape=box];
  "output" [label="output\\noutput: output", shape=ellipse, style=filled, fillcolor="#e8f5e9"];
  "x" -> "proj";
  "x" -> "gt";
  "proj" -> "output";
}`;

test("fxls's DOT renders to SVG with viz.js", async () => {
  const viz = await instance();
  const result = viz.render(DOT, { format: "svg" });
  assert.equal(result.status, "success", JSON.stringify(result.errors));
  assert.match(result.output ?? "", /<svg[\s\S]*call_module: proj[\s\S]*<\/svg>/);
});

test("monospace labels are laid out with Courier metrics so they fit their boxes", async () => {
  const { prepareDot } = await import("../src/dot");
  const dot = prepareDot(DOT);
  assert.match(dot, /fontname="Courier"/);
  assert.doesNotMatch(dot, /monospace/);
  assert.equal(prepareDot('node [fontname=monospace];'), 'node [fontname="Courier"];');
  const viz = await instance();
  const svg = viz.render(
    'digraph { node [fontname="Courier", fontsize=10]; a [label="call_function: operator.add", shape=box]; }',
    { format: "svg" },
  ).output ?? "";
  // 27 characters at 0.6 em of 10 pt: the box must be at least 162 pt wide
  const points = /<polygon fill="none" stroke="black" points="([^"]+)"/.exec(svg)?.[1] ?? "";
  const xs = points.split(" ").map((pair) => Number(pair.split(",")[0]));
  assert.ok(Math.max(...xs) - Math.min(...xs) >= 162, `box width ${Math.max(...xs) - Math.min(...xs)}`);
});
