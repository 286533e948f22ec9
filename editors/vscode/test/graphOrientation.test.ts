// The graph view's orientation (src/graphview): where Fit, Fit width and "bring into view"
// put the scene, and what a search query matches; without a browser.
import { test } from "node:test";
import assert from "node:assert/strict";
import { READABLE, bringIntoView, fitAll, fitWidth } from "../src/graphview/camera";
import { compileQuery } from "../src/graphview/nodesearch";

const VIEW = { width: 1000, height: 800 };
/** a box's rectangle on screen under a transform */
function onScreen(box: { x: number; y: number; width: number; height: number }, t: { k: number; tx: number; ty: number }) {
  return { left: (box.x - box.width / 2) * t.k + t.tx, top: (box.y - box.height / 2) * t.k + t.ty, right: (box.x + box.width / 2) * t.k + t.tx, bottom: (box.y + box.height / 2) * t.k + t.ty };
}

test("Fit puts the whole scene in the view, width and height; Fit width its width, from the top", () => {
  const tall = { width: 600, height: 300_000 };
  const all = fitAll(tall, VIEW);
  const whole = onScreen({ x: 300, y: 150_000, ...tall }, all);
  assert.ok(whole.top >= 0 && whole.bottom <= VIEW.height && whole.left >= 0 && whole.right <= VIEW.width);
  const across = fitWidth(tall, VIEW);
  assert.equal(across.k, 1.2, "not blown up beyond 1.2");
  assert.equal(across.ty, 20);
});

test("a box that fits at the present zoom is moved the least into view", () => {
  const t = { k: 1, tx: 0, ty: 0 };
  const box = { x: 500, y: 900, width: 200, height: 300 }; // below the view
  const moved = bringIntoView(box, t, VIEW);
  assert.equal(moved.k, 1);
  assert.equal(moved.tx, 0, "already inside across");
  assert.equal(onScreen(box, moved).bottom, VIEW.height - 20);
  const inside = { x: 500, y: 400, width: 100, height: 100 };
  assert.deepEqual(bringIntoView(inside, t, VIEW), t, "nothing moves for a box in view");
});

test("a box too tall for the view is zoomed out to fit while readable, else shown from its top", () => {
  const t = { k: 1, tx: 0, ty: 0 };
  const a = bringIntoView({ x: 500, y: 500, width: 300, height: 1000 }, t, VIEW);
  assert.ok(a.k < 1 && a.k >= READABLE);
  const whole = onScreen({ x: 500, y: 500, width: 300, height: 1000 }, a);
  assert.ok(whole.top >= 0 && whole.bottom <= VIEW.height);
  const tower = { x: 500, y: 5000, width: 300, height: 10_000 };
  const b = bringIntoView(tower, t, VIEW);
  assert.equal(b.k, 1, "a readable zoom is kept");
  assert.equal(onScreen(tower, b).top, 20, "its top at the view's top");
  const far = bringIntoView(tower, { k: 0.1, tx: 0, ty: 0 }, VIEW);
  assert.equal(far.k, READABLE, "zoomed in from an unreadable zoom");
});

test("a query is a case-insensitive substring, or a /regular expression/; a bad one is said", () => {
  const q = compileQuery("SoftMax");
  assert.ok(!("error" in q) && q.test("attn.softmax") && !q.regex);
  const r = compileQuery("/^matmul(_\\d+)?$/");
  assert.ok(!("error" in r) && r.regex && r.test("MATMUL_3") && !r.test("matmul_x"));
  const sensitive = compileQuery("/Linear/u");
  assert.ok(!("error" in sensitive) && !sensitive.test("linear"));
  const bad = compileQuery("/soft(max/");
  assert.ok("error" in bad && bad.error.startsWith("bad regular expression: "));
});
