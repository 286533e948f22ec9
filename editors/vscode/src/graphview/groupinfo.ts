// What the group panel says about a module beyond its class: where the class is defined
// (the document's `groups[].defined`), the shapes crossing its boundary, its nodes by op,
// and the siblings whose structure is the same as its own (`same as blocks.1-11`, as
// Model Explorer marks identical layers). Pure functions of the model; the sibling
// signatures are computed once per model.
import { GNode, GraphModel, GraphNodeData, Group } from "./model";

/** Where a module's class is defined. */
export interface ClassPlace {
  file: string;
  line: number;
}

/** One end of a group's boundary: the node whose value crosses it. */
export interface BoundaryValue {
  node: GNode;
  /** `float32[1, 197, 768]`, or `?` without a shape */
  shape: string;
}

interface GroupEntry {
  path: string;
  defined?: ClassPlace | null;
}

/** Where `group`'s class is defined, when the document says. */
export function definedAt(model: GraphModel, group: Group): ClassPlace | null {
  const entries = (model.doc.groups ?? []) as GroupEntry[];
  const entry = entries.find((g) => g.path === group.path);
  const place = entry?.defined;
  return place && typeof place.file === "string" && typeof place.line === "number" ? place : null;
}

export function valueShape(data: GraphNodeData): string {
  if (!data.shape) return "?";
  return `${data.dtype ? data.dtype.replace("torch.", "") : ""}[${data.shape.join(", ")}]`;
}

function inside(node: GNode, group: Group): boolean {
  return node.chain.includes(group);
}

/** The values entering `group` (each outside node feeding a node inside, once) and leaving
 * it (each inside node used outside, once), in graph order. Shape bookkeeping folded into
 * its consumer is left out: it is sizes, not the module's data. */
export function boundary(model: GraphModel, group: Group): { inputs: BoundaryValue[]; outputs: BoundaryValue[] } {
  const inputs = new Set<GNode>();
  const outputs = new Set<GNode>();
  for (const edge of model.edges) {
    if (edge.folded) continue;
    const fromIn = inside(edge.from, group);
    const toIn = inside(edge.to, group);
    if (!fromIn && toIn) inputs.add(edge.from);
    if (fromIn && !toIn) outputs.add(edge.from);
  }
  const values = (nodes: Set<GNode>) => [...nodes].sort((a, b) => a.index - b.index).map((node) => ({ node, shape: valueShape(node.data) }));
  return { inputs: values(inputs), outputs: values(outputs) };
}

/** `call_function 7, call_module 4`: the group's nodes (those laid out, as its node count)
 * by op, the most frequent first. */
export function opCounts(model: GraphModel, group: Group): string {
  const counts = new Map<string, number>();
  for (const node of model.nodes.values()) {
    if (!node.foldedInto && inside(node, group)) counts.set(node.data.op, (counts.get(node.data.op) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1]).map(([op, count]) => `${op} ${count}`).join(", ");
}

const sameCache = new WeakMap<GraphModel, Map<Group, Map<Group, Group[]>>>();

/** The siblings of `group` (groups of the same parent) with the same structure: the same
 * class and, in graph order, the same ops and targets, module paths and targets taken
 * relative to the group, the same edges between its nodes and the same nodes used outside
 * it, and the same shapes where both know them (a partial graph's shapes stop where its
 * example inputs could not run further: a later block without them is not different).
 * Computed once per parent, when one of its children is first drawn closed or selected. */
export function sameSiblings(model: GraphModel, group: Group): Group[] {
  const parent = group.parent;
  if (!parent) return [];
  let byParent = sameCache.get(model);
  if (!byParent) {
    byParent = new Map();
    sameCache.set(model, byParent);
  }
  let same = byParent.get(parent);
  if (!same) {
    same = identicalChildren(model, parent);
    byParent.set(parent, same);
  }
  return same.get(group) ?? [];
}

function identicalChildren(model: GraphModel, parent: Group): Map<Group, Group[]> {
  const members = new Map<Group, GNode[]>();
  for (const child of parent.children) if (child.kind === "group") members.set(child, []);
  if (members.size < 2) return new Map();
  // a node inside a child has the parent, then that child, in its chain (outermost first)
  for (const node of model.nodes.values()) {
    if (node.chain[parent.depth] !== parent) continue;
    const child = node.chain[parent.depth + 1];
    if (child) members.get(child)?.push(node);
  }
  // the structure's text only for children whose class and size another child shares
  const sizes = new Map<string, number>();
  const size = (group: Group) => `${group.type}|${members.get(group)!.length}`;
  for (const group of members.keys()) sizes.set(size(group), (sizes.get(size(group)) ?? 0) + 1);
  const byStructure = new Map<string, Group[]>();
  for (const [group, nodes] of members) {
    if (sizes.get(size(group))! < 2) continue;
    const key = structure(group, nodes);
    const list = byStructure.get(key);
    if (list) list.push(group);
    else byStructure.set(key, [group]);
  }
  const same = new Map<Group, Group[]>();
  for (const groups of byStructure.values()) {
    if (groups.length < 2) continue;
    const shapes = new Map(groups.map((g) => [g, members.get(g)!.map((n) => (n.data.shape ? `${n.data.dtype}[${n.data.shape.join(",")}]` : null))]));
    for (const group of groups) {
      const own = shapes.get(group)!;
      const alike = groups.filter((g) => g !== group && shapes.get(g)!.every((shape, i) => shape === null || own[i] === null || shape === own[i]));
      if (alike.length) same.set(group, alike);
    }
  }
  return same;
}

function structure(group: Group, nodes: GNode[]): string {
  // one string built by appending: this runs over every node of a 5,000-node model's
  // top-level modules before its first drawing
  const prefix = `${group.path}.`;
  const relative = (text: string) => (text.startsWith(prefix) ? text.slice(prefix.length) : text === group.path ? "." : text);
  const place = new Map<string, number>();
  nodes.forEach((node, i) => place.set(node.data.name, i));
  let text = group.type ?? "";
  for (const { data } of nodes) {
    const target = data.op === "call_module" || data.op === "get_attr" ? relative(data.target) : data.target;
    text += `\n${data.op}|${target}|${data.module_path ? relative(data.module_path) : ""}|`;
    // users outside only as "used outside": how many outside depends on what follows
    // the group (the last block of a stack feeds one norm, the others two calls each)
    let outside = false;
    for (const user of data.users) {
      const index = place.get(user);
      if (index === undefined) outside = true;
      else text += `${index},`;
    }
    if (outside) text += "^";
  }
  return text;
}

/** `blocks.1-11` (siblings numbered under one parent, runs joined), else their paths. */
export function groupList(groups: Group[]): string {
  const paths = groups.map((g) => g.path).sort(comparePaths);
  const cut = paths[0]?.lastIndexOf(".") ?? -1;
  const parent = cut >= 0 ? paths[0].slice(0, cut + 1) : "";
  const numbers = paths.map((p) => (p.startsWith(parent) ? p.slice(parent.length) : ""));
  if (!numbers.every((n) => /^\d+$/.test(n))) return paths.join(", ");
  const runs: string[] = [];
  let start = Number(numbers[0]);
  let end = start;
  for (const n of [...numbers.slice(1).map(Number), NaN]) {
    if (n === end + 1) {
      end = n;
      continue;
    }
    runs.push(start === end ? String(start) : `${start}-${end}`);
    start = end = n;
  }
  return `${parent}${runs.join(", ")}`;
}

/** Paths in order, numbered parts as numbers (`blocks.2` before `blocks.10`); one collator
 * (`localeCompare` with options makes one per call). */
const comparePaths = new Intl.Collator("en", { numeric: true }).compare;

/** The small mark a closed group's box carries when siblings are the same as it: how many
 * are (it included), the list in its tooltip; "" for none. SVG, drawn on the box's top
 * border at its right, left of the problem badge; styled by class (style.ts: VS Code's
 * webview allows no style attributes). */
export function sameBadge(model: GraphModel, group: Group, width: number): string {
  const others = sameSiblings(model, group);
  if (!others.length) return "";
  const text = `×${others.length + 1}`;
  const w = 10 + 7 * text.length;
  const x = width - 14 - w;
  const tip = `same as ${groupList(others)}`.replace(/&/g, "&amp;").replace(/</g, "&lt;");
  return (
    `<g class="same-badge"><title>${tip}</title>` +
    `<rect x="${x}" y="-9" width="${w}" height="15" rx="7.5"/>` +
    `<text x="${x + w / 2}" y="2.5" text-anchor="middle">${text}</text></g>`
  );
}
