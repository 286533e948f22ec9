// The graph document (`fxls graph --format json`, `fxls.showGraph` with the format `json`) as
// a tree of module groups: every node sits in the group of its module path
// (`blocks.3.attn`), groups nest by path prefix, and each edge knows, once, the group where
// it is laid out (the lowest group holding both ends) and the two items of that group it
// joins. None of this depends on which groups are expanded. Shape bookkeeping is folded
// into the nodes that consume it unless asked for (bookkeeping.ts).

import { foldBookkeeping } from "./bookkeeping";

export interface Span {
  file: string;
  line: number;
  end_line: number;
  col: number;
  end_col: number;
}

export interface GraphNodeData {
  name: string;
  op: string;
  target: string;
  args: string;
  kwargs: string;
  users: string[];
  span: Span | null;
  shape: number[] | null;
  dtype: string | null;
  module_path: string | null;
  module_type: string | null;
  file?: string | null;
  line?: number | null;
  /** in an FX pass's before/after view: what the pass did to the node */
  mark?: "added" | "removed" | "rewired" | "swapped" | null;
  /** a call of a module the pass put in place of another: `Conv2d+BatchNorm2d → Conv2d` */
  swap?: string | null;
  /** for a node the pass changed (its span is the pass line): the model line it came from */
  origin?: Span | null;
}

export interface GraphProblem {
  code: string;
  severity: string;
  message: string;
  span: Span | null;
  /** names of the nodes the problem is located at */
  nodes: string[];
}

export interface GraphDocument {
  version?: number;
  name: string;
  status: string;
  verdict?: string;
  file?: string | null;
  nodes: GraphNodeData[];
  problems?: GraphProblem[];
  code?: string | null;
  /** every module path with its class where known (submodules traced through included) */
  groups?: { path: string; type?: string | null }[] | null;
  /** a graph torch made of the module instead of its FX graph: `export`, `compile` */
  target?: string | null;
  /** what that graph is ("exported program (ATen)", "dynamo's subgraphs") */
  title?: string | null;
}

export interface GNode {
  kind: "node";
  id: string;
  data: GraphNodeData;
  parent: Group;
  /** problems located at this node */
  problems: GraphProblem[];
  /** index in the document's node order */
  index: number;
  /** the groups around it, outermost first (set by buildModel) */
  chain: Group[];
  /** shape bookkeeping folded into this node (its consumer), in graph order */
  folded: GNode[];
  /** the node this one is folded into (then it is not laid out; see bookkeeping.ts) */
  foldedInto: GNode | null;
}

export interface Group {
  kind: "group";
  id: string;
  /** the module path ("" for the root) */
  path: string;
  /** the last part(s) of the path, relative to the parent group */
  label: string;
  type: string | null;
  parent: Group | null;
  children: Item[];
  /** nodes inside, at any depth */
  nodeCount: number;
  /** problems located at nodes inside, at any depth */
  problemCount: number;
  /** nodes inside, at any depth, that an FX pass added, removed or rewired */
  changeCount: number;
  expanded: boolean;
  depth: number;
}

export type Item = GNode | Group;

export interface GEdge {
  from: GNode;
  to: GNode;
  /** the lowest group holding both ends: the edge is laid out there */
  home: Group;
  /** the items of `home` holding each end (the ends themselves, or groups around them) */
  fromItem: Item;
  toItem: Item;
  /** an end is folded into its consumer: the edge is not drawn */
  folded: boolean;
}

export interface ModelOptions {
  /** show shape bookkeeping (`x.shape`, `getitem` of sizes, `_assert`...) as nodes of its
   * own; by default each is folded into the node that consumes it */
  showBookkeeping?: boolean;
}

export interface GraphModel {
  doc: GraphDocument;
  options: ModelOptions;
  root: Group;
  nodes: Map<string, GNode>;
  groups: Map<string, Group>;
  edges: GEdge[];
}

export function groupId(path: string): string {
  return `g:${path}`;
}

export function nodeId(name: string): string {
  return `n:${name}`;
}

function newGroup(path: string, parent: Group | null): Group {
  return {
    kind: "group",
    id: groupId(path),
    path,
    label: path,
    type: null,
    parent,
    children: [],
    nodeCount: 0,
    problemCount: 0,
    changeCount: 0,
    expanded: parent === null,
    depth: parent ? parent.depth + 1 : 0,
  };
}

/** The group path of a node: its module path, or "" (the root) for the root's own nodes. */
function pathOf(node: GraphNodeData): string {
  return node.module_path ?? "";
}

/** Builds the group tree of a document. Groups that would hold one node and nothing else,
 * or only the calls of a leaf module (`call_module` nodes), are dissolved into their
 * parent: a box around every Linear says nothing. Chains of groups with a single child group are kept (they name the
 * module tree as the code does). Shape bookkeeping is folded into its consumers unless
 * `options.showBookkeeping`: a folded node is in `nodes` (search finds it, the panel shows
 * it) but in no group's children, and its edges are `folded`. */
export function buildModel(doc: GraphDocument, options: ModelOptions = {}): GraphModel {
  const root = newGroup("", null);
  const groups = new Map<string, Group>([["", root]]);
  const ensure = (path: string): Group => {
    const found = groups.get(path);
    if (found) return found;
    const cut = path.lastIndexOf(".");
    const parent = ensure(cut < 0 ? "" : path.slice(0, cut));
    const group = newGroup(path, parent);
    groups.set(path, group);
    parent.children.push(group);
    return group;
  };
  const nodes = new Map<string, GNode>();
  const problemsAt = new Map<string, GraphProblem[]>();
  for (const problem of doc.problems ?? []) {
    for (const name of problem.nodes) {
      const list = problemsAt.get(name) ?? [];
      list.push(problem);
      problemsAt.set(name, list);
    }
  }
  const foldInto = options.showBookkeeping ? new Map<string, string>() : foldBookkeeping(doc.nodes, new Set(problemsAt.keys()));
  doc.nodes.forEach((data, index) => {
    const folded = foldInto.has(data.name);
    const group = folded ? root : ensure(pathOf(data));
    if (data.module_type && !group.type && group.path === data.module_path) group.type = data.module_type;
    const node: GNode = { kind: "node", id: nodeId(data.name), data, parent: group, problems: problemsAt.get(data.name) ?? [], index, chain: [], folded: [], foldedInto: null };
    if (!folded) group.children.push(node);
    nodes.set(data.name, node);
  });
  for (const [name, into] of foldInto) {
    const node = nodes.get(name)!;
    node.foldedInto = nodes.get(into)!;
    node.foldedInto.folded.push(node);
  }
  for (const known of doc.groups ?? []) {
    const group = groups.get(known.path);
    if (group && !group.type && known.type) group.type = known.type;
  }
  dissolveSingletons(root, groups);
  countInside(root);
  labelGroups(root);
  for (const node of nodes.values()) {
    // a folded node sits where its module's group is (or the nearest one kept around it)
    if (node.foldedInto) node.parent = nearestGroup(pathOf(node.data), groups);
    node.chain = ancestors(node);
  }
  const edges: GEdge[] = [];
  for (const from of nodes.values()) {
    for (const user of from.data.users) {
      const to = nodes.get(user);
      if (to) edges.push(edgeBetween(from, to));
    }
  }
  return { doc, options, root, nodes, groups, edges };
}

function nearestGroup(path: string, groups: Map<string, Group>): Group {
  for (let p = path; ; p = p.slice(0, Math.max(0, p.lastIndexOf(".")))) {
    const group = groups.get(p);
    if (group) return group;
    if (!p) return groups.get("")!;
  }
}

function dissolveSingletons(group: Group, groups: Map<string, Group>): void {
  for (const child of [...group.children]) if (child.kind === "group") dissolveSingletons(child, groups);
  if (!group.parent) return;
  // a leaf module's calls (one `call_module` node per call, its target the group's path)
  if (group.children.length === 0) {
    group.parent.children.splice(group.parent.children.indexOf(group), 1);
    groups.delete(group.path);
    return;
  }
  const leafCalls = group.children.every((c) => c.kind === "node" && c.data.op === "call_module" && c.data.target === group.path);
  if ((group.children.length === 1 && group.children[0].kind === "node") || leafCalls) {
    const siblings = group.parent.children;
    siblings.splice(siblings.indexOf(group), 1, ...group.children);
    for (const child of group.children) child.parent = group.parent;
    groups.delete(group.path);
  }
}

function countInside(group: Group): void {
  group.nodeCount = 0;
  group.problemCount = 0;
  group.changeCount = 0;
  for (const child of group.children) {
    if (child.kind === "group") {
      countInside(child);
      group.nodeCount += child.nodeCount;
      group.problemCount += child.problemCount;
      group.changeCount += child.changeCount;
    } else {
      group.nodeCount += 1;
      group.problemCount += child.problems.length;
      if (child.data.mark) group.changeCount += 1;
    }
  }
}

function labelGroups(group: Group): void {
  for (const child of group.children) {
    if (child.kind !== "group") continue;
    const prefix = group.path ? `${group.path}.` : "";
    child.label = child.path.startsWith(prefix) ? child.path.slice(prefix.length) : child.path;
    // `3` says little on its own: `blocks.3`
    if (/^\d+$/.test(child.label)) child.label = child.path.split(".").slice(-2).join(".");
    labelGroups(child);
  }
}

/** The groups around `item`, outermost (the root) first, `item` itself excluded. */
export function ancestors(item: Item): Group[] {
  const chain: Group[] = [];
  for (let g = item.parent; g; g = g.parent) chain.push(g);
  return chain.reverse();
}

function edgeBetween(from: GNode, to: GNode): GEdge {
  const a = [...from.chain, from] as Item[];
  const b = [...to.chain, to] as Item[];
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return { from, to, home: a[i - 1] as Group, fromItem: a[i], toItem: b[i], folded: !!(from.foldedInto || to.foldedInto) };
}

/** The item that shows `node` now: the outermost collapsed group around it, or itself (a
 * folded node: what shows its consumer). */
export function shownAs(node: GNode): Item {
  const shown = node.foldedInto ?? node;
  for (const group of shown.chain) if (!group.expanded) return group;
  return shown;
}

/** Expands every group around `item` (so that it is shown; a folded node: its consumer);
 * the groups it opened. */
export function reveal(item: Item): Group[] {
  const changed: Group[] = [];
  const shown = item.kind === "node" && item.foldedInto ? item.foldedInto : item;
  for (const group of ancestors(shown)) {
    if (!group.expanded) {
      group.expanded = true;
      changed.push(group);
    }
  }
  return changed;
}

/** Nodes whose name, op or target contains `query` (case-insensitive), in graph order; a
 * folded node is found too (`shownAs` and `reveal` lead to its consumer). */
export function search(model: GraphModel, query: string): GNode[] {
  const q = query.trim().toLowerCase();
  if (!q) return [];
  const found: GNode[] = [];
  for (const node of model.nodes.values()) {
    const { name, op, target } = node.data;
    if (name.toLowerCase().includes(q) || op.toLowerCase().includes(q) || target.toLowerCase().includes(q)) found.push(node);
  }
  return found;
}

function sameFile(a: string, b: string): boolean {
  if (a === b) return true;
  const norm = (p: string) => p.replace(/\\/g, "/").replace(/^file:\/\//, "");
  return norm(a) === norm(b);
}

/** Nodes created by source line `line` (1-based) of `file` (any file when null): by
 * their span, or (a node an FX pass changed) the model line they came from. */
export function nodesAtLine(model: GraphModel, file: string | null, line: number): GNode[] {
  const found: GNode[] = [];
  const at = (span: Span | null | undefined) => !!span && line >= span.line && line <= span.end_line && (!file || sameFile(span.file, file));
  for (const node of model.nodes.values()) {
    if (at(node.data.span) || at(node.data.origin)) found.push(node);
  }
  return found;
}

/** `[1, 197, 768]` as `1×197×768`. */
export function shapeText(data: GraphNodeData): string {
  if (!data.shape) return "";
  return data.shape.join("×");
}

export function fileName(path: string): string {
  const cut = Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\"));
  return cut >= 0 ? path.slice(cut + 1) : path;
}

/** `model.py:12` for a node with a source span. */
export function locationText(data: GraphNodeData): string {
  const span = data.span;
  return span ? `${fileName(span.file)}:${span.line}` : "";
}
