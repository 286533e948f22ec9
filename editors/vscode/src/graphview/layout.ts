// Layered layout of the shown graph with dagre, one expanded group at a time.
//
// Each expanded group is laid out on its own: its direct children (nodes, collapsed groups
// as boxes, expanded groups as boxes of their own layout's size) and the edges whose home
// it is, lifted to those children. A group's layout depends only on what is inside it, so
// it is cached, and expanding or collapsing a group lays out that group and its ancestors
// again, never the rest: the cost of a click is the size of the groups on its path, not of
// the model (Model Explorer lays out its groups the same way).
import { graphlib, layout as dagreLayout } from "@dagrejs/dagre";
import { DETAIL_PX, NODE_MAX_WIDTH, NODE_MIN_WIDTH, NODE_TEXT_PAD, TITLE_PX, frameTitle, groupDetail, groupTitle, nodeSubtitle, nodeTitle, textWidth } from "./labels";
import { GEdge, GNode, GraphModel, Group, Item, ancestors, shapeText, shownAs } from "./model";
import { placeLabels } from "./edgelabels";

// what the view draws on the boxes (fitted to them): labels.ts
export { frameTitle, groupTitle, nodeSubtitle, nodeTitle, nodeTooltip } from "./labels";

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
  /** "fromItemId|toItemId" -> route points (relative); the group's ports are `@in` and
   * `@out`: edges from outside enter at `@in` (on the frame's top border) and are routed
   * from there to the child that holds their end, edges to outside leave through `@out` */
  routes: Map<string, Point[]>;
}

/** The ports of an expanded group, in its routes' keys. */
export const IN_PORT = "@in";
export const OUT_PORT = "@out";

export const NODE_HEIGHT = 38;
export const GROUP_HEIGHT = 46;
export const GROUP_PAD = 14;
export const GROUP_HEADER = 26;

function clamp(value: number, low: number, high: number): number {
  return Math.max(low, Math.min(high, value));
}

export function nodeSize(node: GNode): { width: number; height: number } {
  const text = Math.max(textWidth(nodeTitle(node), TITLE_PX), textWidth(nodeSubtitle(node), DETAIL_PX));
  // widths in steps of 24 px: repeated blocks whose node names differ by a digit or two
  // keep the same layout shape (see Layouter.layoutOf)
  return { width: clamp(Math.ceil((text + NODE_TEXT_PAD) / 24) * 24, NODE_MIN_WIDTH, NODE_MAX_WIDTH), height: NODE_HEIGHT };
}

export function collapsedSize(group: Group): { width: number; height: number } {
  // the title is drawn from 10 px in: `▸ title`
  const text = Math.max(textWidth(`▸ ${groupTitle(group)}`, TITLE_PX), textWidth(groupDetail(group), DETAIL_PX));
  return { width: Math.max(text + 24, 110), height: GROUP_HEIGHT };
}

/** The width an open group's frame needs for its title (drawn from 8 px in). */
function frameTitleWidth(group: Group): number {
  return textWidth(frameTitle(group), TITLE_PX) + 24;
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
  /** where the label is drawn (its baseline's start), null where it would cover something
   * (edgelabels.ts) */
  labelAt: Point | null;
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
  // the group's ports, when only its first child has inputs from outside and only its last
  // child outputs to outside (a Sequential of blocks), are straight above and below them
  const last = sizes.length - 1;
  const portIn = pairs.has("in|0");
  const portOut = pairs.has(`${last}|out`);
  if (pairs.size !== sizes.length - 1 + (portIn ? 1 : 0) + (portOut ? 1 : 0)) return null;
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
  const height = Math.max(0, y - RANKSEP);
  if (portIn) routes.set("in|0", [{ x: width / 2, y: -GROUP_HEADER }, { x: width / 2, y: 0 }]);
  if (portOut) routes.set(`${last}|out`, [{ x: width / 2, y: height }, { x: width / 2, y: height + GROUP_PAD }]);
  return { width, height, boxes, routes };
}

const PORT = 6;

/** Lays out children `0..n-1` with dagre; `pairs` may join them to the ports `in` and
 * `out` (edges crossing the group's frame). The ports are held above and below every child
 * (edges of weight 0 from `in` to each child without a predecessor, from each child without
 * a successor to `out`), so that dagre routes every crossing edge from the frame's top
 * border down to its child, around the other children, instead of a straight line through
 * them. The shape is the children's bounding box; port routes end on the frame's border
 * (`GROUP_HEADER` above the content, `GROUP_PAD` below it). */
function dagreShape(sizes: { width: number; height: number }[], pairs: Set<string>): Shape {
  const g = new graphlib.Graph({ directed: true, multigraph: false, compound: false });
  g.setGraph({ rankdir: "TB", nodesep: NODESEP, ranksep: RANKSEP, edgesep: 10, marginx: 0, marginy: 0 });
  g.setDefaultEdgeLabel(() => ({}));
  sizes.forEach((z, i) => g.setNode(String(i), { width: z.width, height: z.height }));
  const hasIn = new Set<string>();
  const hasOut = new Set<string>();
  let ports = false;
  for (const pair of pairs) {
    const [a, b] = pair.split("|");
    if (a === "in" || b === "out") ports = true;
    if (a !== "in" && b !== "out") {
      hasIn.add(b);
      hasOut.add(a);
    }
    g.setEdge(a, b, {});
  }
  if (ports) {
    g.setNode("in", { width: PORT, height: PORT });
    g.setNode("out", { width: PORT, height: PORT });
    sizes.forEach((_, i) => {
      const id = String(i);
      if (!hasIn.has(id) && !g.hasEdge("in", id)) g.setEdge("in", id, { weight: 0 });
      if (!hasOut.has(id) && !g.hasEdge(id, "out")) g.setEdge(id, "out", { weight: 0 });
    });
  }
  dagreLayout(g);
  const boxes = sizes.map((_, i) => {
    const n = g.node(String(i)) as unknown as Box;
    return { x: n.x, y: n.y, width: n.width, height: n.height };
  });
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (const b of boxes) {
    x0 = Math.min(x0, b.x - b.width / 2);
    x1 = Math.max(x1, b.x + b.width / 2);
    y0 = Math.min(y0, b.y - b.height / 2);
    y1 = Math.max(y1, b.y + b.height / 2);
  }
  if (!boxes.length) x0 = x1 = y0 = y1 = 0;
  const height = y1 - y0;
  const width = x1 - x0;
  const move = (p: Point): Point => ({ x: Math.max(0, Math.min(width, p.x - x0)), y: Math.max(-GROUP_HEADER, Math.min(height + GROUP_PAD, p.y - y0)) });
  for (const b of boxes) {
    b.x -= x0;
    b.y -= y0;
  }
  const routes = new Map<string, Point[]>();
  for (const pair of pairs) {
    const [a, b] = pair.split("|");
    const points = ((g.edge(a, b) as { points?: Point[] } | undefined)?.points ?? []).map(move);
    // from the port's point on the border (dagre starts and ends at the port's box)
    if (a === "in" && points.length) points.unshift({ x: move(g.node("in") as unknown as Point).x, y: -GROUP_HEADER });
    if (b === "out" && points.length) points.push({ x: move(g.node("out") as unknown as Point).x, y: height + GROUP_PAD });
    routes.set(pair, points);
  }
  return { width, height, boxes, routes };
}

export class Layouter {
  private readonly cache = new Map<Group, GroupLayout>();
  /** layouts by the shape of what they lay out (children sizes, edges by child index) */
  private readonly shapes = new Map<string, Shape>();
  /** edges by home group */
  private readonly homeEdges = new Map<Group, GEdge[]>();
  /** per group: its children that hold the end of an edge from outside it (`in`) or the
   * start of an edge to outside it (`out`) */
  private readonly ports = new Map<Group, { in: Set<Item>; out: Set<Item> }>();
  /** milliseconds spent in dagre during the last `scene()` */
  lastLayoutMs = 0;
  /** groups laid out during the last `scene()` */
  lastLaidOut = 0;

  constructor(private readonly model: GraphModel) {
    for (const edge of model.edges) {
      if (edge.folded) continue;
      const list = this.homeEdges.get(edge.home) ?? [];
      list.push(edge);
      this.homeEdges.set(edge.home, list);
      this.notePorts(edge.from, edge.home, "out");
      this.notePorts(edge.to, edge.home, "in");
    }
  }

  private notePorts(node: GNode, home: Group, side: "in" | "out"): void {
    const chain: Item[] = [...node.chain, node];
    for (let j = chain.indexOf(home) + 1; j + 1 < chain.length; j++) {
      const group = chain[j] as Group;
      let ports = this.ports.get(group);
      if (!ports) this.ports.set(group, (ports = { in: new Set(), out: new Set() }));
      ports[side].add(chain[j + 1]);
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
    return { width: Math.max(inner.width + 2 * GROUP_PAD, frameTitleWidth(item)), height: inner.height + GROUP_HEADER + GROUP_PAD };
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
    const ports = group.parent ? this.ports.get(group) : undefined;
    for (const child of ports?.in ?? []) pairs.add(`in|${index.get(child.id)}`);
    for (const child of ports?.out ?? []) pairs.add(`${index.get(child.id)}|out`);
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
    const idOf = (end: string) => (end === "in" ? IN_PORT : end === "out" ? OUT_PORT : children[Number(end)].id);
    for (const [pair, points] of shape.routes) {
      const [a, b] = pair.split("|");
      routes.set(`${idOf(a)}|${idOf(b)}`, points);
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
    // a folded node is found where its consumer is drawn (search, the editor's cursor)
    for (const { node, box } of scene.nodes) for (const folded of node.folded) scene.boxes.set(folded.id, box);
    scene.edges = this.sceneEdges(scene, origins);
    return scene;
  }

  /** The route of `from` -> `to` in `group`'s layout, in absolute coordinates. */
  private route(group: Group, from: string, to: string, origins: Map<Group, Point>): Point[] | null {
    const origin = origins.get(group);
    const points = this.cache.get(group)?.routes.get(`${from}|${to}`);
    if (!origin || !points || points.length === 0) return null;
    return points.map((p) => ({ x: p.x + origin.x, y: p.y + origin.y }));
  }

  /** An edge's points: out of the expanded groups around its start through their `@out`
   * ports, along its route in its home group, into the expanded groups around its end
   * through their `@in` ports; each part routed by dagre in its own group. Null when a part
   * is missing (then the caller draws it straight). */
  private edgePoints(edge: GEdge, from: Item, to: Item, origins: Map<Group, Point>): Point[] | null {
    const parts: Point[][] = [];
    const source: Item[] = [...edge.from.chain, edge.from];
    const target: Item[] = [...edge.to.chain, edge.to];
    const home = source.indexOf(edge.home);
    for (let j = source.indexOf(from) - 1; j > home; j--) {
      const part = this.route(source[j] as Group, source[j + 1].id, OUT_PORT, origins);
      if (!part) return null;
      parts.push(part);
    }
    const middle = this.route(edge.home, edge.fromItem.id, edge.toItem.id, origins);
    if (!middle) return null;
    parts.push(middle);
    const last = target.indexOf(to);
    for (let j = home + 1; j < last; j++) {
      const part = this.route(target[j] as Group, IN_PORT, target[j + 1].id, origins);
      if (!part) return null;
      parts.push(part);
    }
    return joinAtFrames(parts, parts.indexOf(middle));
  }

  private sceneEdges(scene: Scene, origins: Map<Group, Point>): SceneEdge[] {
    const byPair = new Map<string, Omit<SceneEdge, "labelAt"> & { labels: Set<string> }>();
    for (const edge of this.model.edges) {
      if (edge.folded) continue;
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
      let points = this.edgePoints(edge, from, to, origins);
      if (!points) {
        const fromBox = scene.boxes.get(from.id)!;
        const toBox = scene.boxes.get(to.id)!;
        points = [
          { x: fromBox.x, y: fromBox.y + fromBox.height / 2 },
          { x: toBox.x, y: toBox.y - toBox.height / 2 },
        ];
      }
      byPair.set(key, { from, to, points, label, labels: new Set([label]) });
    }
    const edges = [...byPair.values()].map(({ from, to, points, labels }) => ({
      from,
      to,
      points,
      label: labels.size === 1 ? [...labels][0] : "",
      labelAt: null as Point | null,
    }));
    const places = placeLabels(
      edges.map((e) => ({ key: `${e.from.id}|${e.label}`, text: e.label, points: e.points })),
      labelObstacles(scene),
    );
    edges.forEach((edge, i) => (edge.labelAt = places[i]));
    return edges;
  }
}

/**
 * One line from an edge's parts: `parts[m]` is its route in its home group, the parts
 * before it leave groups (each ends at its group's `@out` port, on the frame's bottom
 * border), the parts after it enter groups (each starts at the `@in` port, on the top
 * border). At each frame the edge crosses it straight: the part inside keeps only its
 * points in the group's content, and the part outside meets the frame's border right
 * above (or below) the first (last) of them, instead of running along the title band to
 * wherever dagre put the port. Innermost frames first, so that an edge crossing nested
 * frames at once drops through all of them in one line.
 */
function joinAtFrames(parts: Point[][], m: number): Point[] {
  const out = parts.map((part) => [...part]);
  for (let j = out.length - 1; j > m; j--) {
    const border = out[j][0].y;
    const inside = out[j].findIndex((p) => p.y >= border + GROUP_HEADER - 0.5);
    const outer = out[j - 1];
    if (inside < 0 || outer.length < 2) continue;
    out[j] = out[j].slice(inside);
    outer[outer.length - 1] = { x: out[j][0].x, y: border };
  }
  for (let i = 0; i < m; i++) {
    const border = out[i][out[i].length - 1].y;
    let inside = -1;
    out[i].forEach((p, k) => (p.y <= border - GROUP_PAD + 0.5 ? (inside = k) : undefined));
    const outer = out[i + 1];
    if (inside < 0 || outer.length < 2) continue;
    out[i] = out[i].slice(0, inside + 1);
    outer[0] = { x: out[i][inside].x, y: border };
  }
  return out.flat();
}

/** What an edge label must not cover: nodes (with their problem badge, on the top right
 * corner), closed groups, open groups' titles and borders. */
function labelObstacles(scene: Scene): Box[] {
  const boxes: Box[] = [];
  const BADGE = 9;
  for (const { node, box } of scene.nodes) {
    boxes.push(node.problems.length ? { x: box.x + BADGE / 2, y: box.y - BADGE / 2, width: box.width + BADGE, height: box.height + BADGE } : box);
  }
  for (const { box } of scene.collapsed) boxes.push(box);
  const LINE = 2;
  for (const { group, box } of scene.frames) {
    const width = frameTitleWidth(group);
    const left = box.x - box.width / 2;
    const top = box.y - box.height / 2;
    boxes.push({ x: left + width / 2, y: top + GROUP_HEADER / 2, width, height: GROUP_HEADER });
    // its border: a label across it reads as belonging to neither side
    boxes.push({ x: left, y: box.y, width: LINE, height: box.height }, { x: left + box.width, y: box.y, width: LINE, height: box.height });
    boxes.push({ x: box.x, y: top, width: box.width, height: LINE }, { x: box.x, y: top + box.height, width: box.width, height: LINE });
  }
  return boxes;
}

/** Whether `item` is inside `group` (at any depth). */
export function isInside(item: Item, group: Group): boolean {
  return ancestors(item).includes(group);
}
