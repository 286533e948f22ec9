// Layered layout of the shown graph with dagre, one expanded group at a time.
//
// Each expanded group is laid out on its own: its direct children (nodes, collapsed groups
// as boxes, expanded groups as boxes of their own layout's size) and the edges whose home
// it is, lifted to those children. A group's layout depends only on what is inside it, so
// it is cached, and expanding or collapsing a group lays out that group and its ancestors
// again, never the rest: the cost of a click is the size of the groups on its path, not of
// the model (Model Explorer lays out its groups the same way).
import { graphlib, layout as dagreLayout } from "@dagrejs/dagre";
import { GEdge, GNode, GraphModel, Group, Item, ancestors, shapeText, shownAs } from "./model";

export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface Point {
  x: number;
  y: number;
}

interface GroupLayout {
  width: number;
  height: number;
  /** child item id -> box, centre coordinates relative to the group's content origin */
  boxes: Map<string, Box>;
  /** "fromItemId|toItemId" -> route points (relative) */
  routes: Map<string, Point[]>;
}

export const NODE_HEIGHT = 38;
export const GROUP_HEIGHT = 46;
export const GROUP_PAD = 14;
export const GROUP_HEADER = 26;
const CHAR = 6.8;

function clamp(value: number, low: number, high: number): number {
  return Math.max(low, Math.min(high, value));
}

export function nodeTitle(node: GNode): string {
  return node.data.name;
}

/** The second line of a node's box: its target, shortened. */
export function nodeSubtitle(node: GNode): string {
  const { op, target } = node.data;
  let text = op === "placeholder" || op === "output" ? op : target;
  text = text.replace(/^<built-in (function|method) (\w+)[^>]*>$/, "$2").replace(/^torch\._C\._nn\./, "");
  return text.length > 34 ? `${text.slice(0, 33)}…` : text;
}

export function groupTitle(group: Group): string {
  return group.type ? `${group.label} : ${group.type}` : group.label;
}

export function nodeSize(node: GNode): { width: number; height: number } {
  const chars = Math.max(nodeTitle(node).length, nodeSubtitle(node).length);
  // widths in steps of 24 px: repeated blocks whose node names differ by a digit or two
  // keep the same layout shape (see Layouter.layoutOf)
  return { width: clamp(Math.ceil((chars * CHAR + 22) / 24) * 24, 80, 264), height: NODE_HEIGHT };
}

export function collapsedSize(group: Group): { width: number; height: number } {
  const chars = Math.max(groupTitle(group).length + 3, 14);
  return { width: clamp(chars * CHAR + 26, 110, 320), height: GROUP_HEIGHT };
}

export interface Scene {
  width: number;
  height: number;
  /** shown nodes, absolute boxes */
  nodes: { node: GNode; box: Box }[];
  /** collapsed groups, absolute boxes */
  collapsed: { group: Group; box: Box }[];
  /** expanded groups (not the root), absolute frames, outermost first */
  frames: { group: Group; box: Box }[];
  edges: SceneEdge[];
  /** item id -> absolute box of everything shown (nodes, collapsed and expanded groups) */
  boxes: Map<string, Box>;
}

export interface SceneEdge {
  from: Item;
  to: Item;
  points: Point[];
  /** the source node's shape when every lifted edge carries the same one */
  label: string;
}

/** A layout by child index: what `Layouter` shares between groups of the same shape. */
interface Shape {
  width: number;
  height: number;
  boxes: Box[];
  /** "i|j" (child indices) -> route points */
  routes: Map<string, Point[]>;
}

const NODESEP = 22;
const RANKSEP = 34;

/** Children joined in one chain (each edge from a child to the next one, in order): a
 * column, no layout library needed. Null for anything else. */
function chainLayout(sizes: { width: number; height: number }[], pairs: Set<string>): Shape | null {
  if (pairs.size !== sizes.length - 1) return null;
  for (let i = 0; i + 1 < sizes.length; i++) if (!pairs.has(`${i}|${i + 1}`)) return null;
  const width = Math.max(...sizes.map((z) => z.width));
  const boxes: Box[] = [];
  let y = 0;
  for (const z of sizes) {
    boxes.push({ x: width / 2, y: y + z.height / 2, width: z.width, height: z.height });
    y += z.height + RANKSEP;
  }
  const routes = new Map<string, Point[]>();
  for (let i = 0; i + 1 < boxes.length; i++) {
    const a = boxes[i];
    const b = boxes[i + 1];
    routes.set(`${i}|${i + 1}`, [
      { x: a.x, y: a.y + a.height / 2 },
      { x: b.x, y: b.y - b.height / 2 },
    ]);
  }
  return { width, height: Math.max(0, y - RANKSEP), boxes, routes };
}

function dagreShape(sizes: { width: number; height: number }[], pairs: Set<string>): Shape {
  const g = new graphlib.Graph({ directed: true, multigraph: false, compound: false });
  g.setGraph({ rankdir: "TB", nodesep: NODESEP, ranksep: RANKSEP, edgesep: 10, marginx: 0, marginy: 0 });
  g.setDefaultEdgeLabel(() => ({}));
  sizes.forEach((z, i) => g.setNode(String(i), { width: z.width, height: z.height }));
  for (const pair of pairs) {
    const [a, b] = pair.split("|");
    g.setEdge(a, b, {});
  }
  dagreLayout(g);
  const boxes = sizes.map((_, i) => {
    const n = g.node(String(i)) as unknown as Box;
    return { x: n.x, y: n.y, width: n.width, height: n.height };
  });
  const routes = new Map<string, Point[]>();
  for (const e of g.edges()) routes.set(`${e.v}|${e.w}`, (g.edge(e) as { points: Point[] }).points ?? []);
  const label = g.graph() as { width?: number; height?: number };
  return { width: label.width ?? 0, height: label.height ?? 0, boxes, routes };
}

export class Layouter {
  private readonly cache = new Map<Group, GroupLayout>();
  /** layouts by the shape of what they lay out (children sizes, edges by child index) */
  private readonly shapes = new Map<string, Shape>();
  /** edges by home group */
  private readonly homeEdges = new Map<Group, GEdge[]>();
  /** milliseconds spent in dagre during the last `scene()` */
  lastLayoutMs = 0;
  /** groups laid out during the last `scene()` */
  lastLaidOut = 0;

  constructor(private readonly model: GraphModel) {
    for (const edge of model.edges) {
      const list = this.homeEdges.get(edge.home) ?? [];
      list.push(edge);
      this.homeEdges.set(edge.home, list);
    }
  }

  /** Forget the layouts of `group` and the groups around it (its size may change). */
  invalidate(group: Group): void {
    for (let g: Group | null = group; g; g = g.parent) this.cache.delete(g);
  }

  invalidateAll(): void {
    this.cache.clear();
  }

  private itemSize(item: Item): { width: number; height: number } {
    if (item.kind === "node") return nodeSize(item);
    if (!item.expanded) return collapsedSize(item);
    const inner = this.layoutOf(item);
    const titleWidth = groupTitle(item).length * CHAR + 60;
    return { width: Math.max(inner.width + 2 * GROUP_PAD, titleWidth), height: inner.height + GROUP_HEADER + GROUP_PAD };
  }

  private layoutOf(group: Group): GroupLayout {
    const cached = this.cache.get(group);
    if (cached) return cached;
    const children = group.children;
    const sizes = children.map((child) => this.itemSize(child));
    const index = new Map(children.map((child, i) => [child.id, i]));
    const pairs = new Set<string>();
    for (const edge of this.homeEdges.get(group) ?? []) {
      if (edge.fromItem !== edge.toItem) pairs.add(`${index.get(edge.fromItem.id)}|${index.get(edge.toItem.id)}`);
    }
    // Repeated blocks (a model's 12 or 100 identical layers) have the same children sizes
    // and edges: they share one layout.
    const signature = `${sizes.map((z) => `${Math.round(z.width)}x${Math.round(z.height)}`).join(",")};${[...pairs].join(",")}`;
    let shape = this.shapes.get(signature);
    if (!shape) {
      const started = performance.now();
      shape = chainLayout(sizes, pairs) ?? dagreShape(sizes, pairs);
      this.lastLayoutMs += performance.now() - started;
      this.lastLaidOut += 1;
      this.shapes.set(signature, shape);
    }
    const boxes = new Map<string, Box>();
    children.forEach((child, i) => boxes.set(child.id, shape.boxes[i]));
    const routes = new Map<string, Point[]>();
    for (const [pair, points] of shape.routes) {
      const [a, b] = pair.split("|").map(Number);
      routes.set(`${children[a].id}|${children[b].id}`, points);
    }
    const result: GroupLayout = { width: shape.width, height: shape.height, boxes, routes };
    this.cache.set(group, result);
    return result;
  }

  /** Everything shown now, in absolute coordinates. */
  scene(): Scene {
    this.lastLayoutMs = 0;
    this.lastLaidOut = 0;
    const root = this.model.root;
    const rootLayout = this.layoutOf(root);
    const scene: Scene = { width: rootLayout.width, height: rootLayout.height, nodes: [], collapsed: [], frames: [], edges: [], boxes: new Map() };
    const origins = new Map<Group, Point>([[root, { x: 0, y: 0 }]]);
    const place = (group: Group, origin: Point) => {
      const layout = this.layoutOf(group);
      for (const child of group.children) {
        const rel = layout.boxes.get(child.id)!;
        const box = { x: rel.x + origin.x, y: rel.y + origin.y, width: rel.width, height: rel.height };
        scene.boxes.set(child.id, box);
        if (child.kind === "node") {
          scene.nodes.push({ node: child, box });
        } else if (!child.expanded) {
          scene.collapsed.push({ group: child, box });
        } else {
          scene.frames.push({ group: child, box });
          const inner = this.layoutOf(child);
          const innerOrigin = {
            x: box.x - inner.width / 2,
            y: box.y - box.height / 2 + GROUP_HEADER,
          };
          origins.set(child, innerOrigin);
          place(child, innerOrigin);
        }
      }
    };
    place(root, origins.get(root)!);
    scene.edges = this.sceneEdges(scene, origins);
    return scene;
  }

  private sceneEdges(scene: Scene, origins: Map<Group, Point>): SceneEdge[] {
    const byPair = new Map<string, SceneEdge & { labels: Set<string> }>();
    for (const edge of this.model.edges) {
      const from = shownAs(edge.from);
      const to = shownAs(edge.to);
      if (from === to) continue;
      const key = `${from.id}|${to.id}`;
      const label = shapeText(edge.from.data);
      const known = byPair.get(key);
      if (known) {
        known.labels.add(label);
        continue;
      }
      const origin = origins.get(edge.home);
      const layout = this.cache.get(edge.home);
      if (!origin || !layout) continue;
      const route = (layout.routes.get(`${edge.fromItem.id}|${edge.toItem.id}`) ?? []).map((p) => ({ x: p.x + origin.x, y: p.y + origin.y }));
      const points: Point[] = [];
      const fromBox = scene.boxes.get(from.id)!;
      const toBox = scene.boxes.get(to.id)!;
      if (from !== edge.fromItem || route.length === 0) points.push({ x: fromBox.x, y: fromBox.y + fromBox.height / 2 });
      points.push(...route);
      if (to !== edge.toItem || route.length === 0) points.push({ x: toBox.x, y: toBox.y - toBox.height / 2 });
      byPair.set(key, { from, to, points, label, labels: new Set([label]) });
    }
    return [...byPair.values()].map(({ from, to, points, labels }) => ({
      from,
      to,
      points,
      label: labels.size === 1 ? [...labels][0] : "",
    }));
  }
}

/** Whether `item` is inside `group` (at any depth). */
export function isInside(item: Item, group: Group): boolean {
  return ancestors(item).includes(group);
}
