// Where each edge's shape label goes: beside its line, at the first place along it where
// the label covers no node, group, frame title or other label. An edge whose source's
// shape is already written beside another of its edges gets none; neither does one with
// no free place (the shape is in the node's tooltip and side panel). Greedy, in edge
// order, on a grid of buckets: linear in the scene's size.
import type { Box, Point } from "./layout";
import { EDGE_LABEL_PX, textWidth } from "./labels";

/** A rectangle by its corners. */
interface Rect {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

export interface LabelRequest {
  /** edges with the same key (a source and its shape) need one label between them */
  key: string;
  text: string;
  points: Point[];
}

const CELL = 192;
/** A label's glyphs above and below its baseline (11 px: ascent and descent). */
const ASCENT = EDGE_LABEL_PX * 0.95;
const DESCENT = EDGE_LABEL_PX * 0.3;
/** The gap between a label and its line, and around what it must not touch. */
const GAP = 4;
const MARGIN = 2;

class Buckets {
  private readonly cells = new Map<number, Rect[]>();

  add(r: Rect): void {
    this.each(r, (key) => {
      const list = this.cells.get(key);
      if (list) list.push(r);
      else this.cells.set(key, [r]);
      return false;
    });
  }

  hits(r: Rect): boolean {
    return this.each(r, (key) => {
      for (const o of this.cells.get(key) ?? []) if (r.x0 < o.x1 && o.x0 < r.x1 && r.y0 < o.y1 && o.y0 < r.y1) return true;
      return false;
    });
  }

  /** Calls `visit` with each cell `r` touches until it answers true; whether one did. */
  private each(r: Rect, visit: (key: number) => boolean): boolean {
    const j0 = Math.floor(r.y0 / CELL);
    const j1 = Math.floor(r.y1 / CELL);
    for (let i = Math.floor(r.x0 / CELL); i <= Math.floor(r.x1 / CELL); i++) {
      // scenes are far narrower than 2^20 cells: one number per cell
      for (let j = j0; j <= j1; j++) if (visit(i * 1_048_576 + j)) return true;
    }
    return false;
  }
}

export function rectOf(box: Box, margin = 0): Rect {
  return { x0: box.x - box.width / 2 - margin, y0: box.y - box.height / 2 - margin, x1: box.x + box.width / 2 + margin, y1: box.y + box.height / 2 + margin };
}

/** `points` without the bends that are none (dagre puts a point on every rank a line
 * crosses, straight or not). */
function corners(points: Point[]): Point[] {
  const kept: Point[] = [];
  for (const p of points) {
    const a = kept[kept.length - 2];
    const b = kept[kept.length - 1];
    if (a && b && Math.abs((b.x - a.x) * (p.y - b.y) - (b.y - a.y) * (p.x - b.x)) < 1) kept[kept.length - 1] = p;
    else kept.push(p);
  }
  return kept;
}

/** Places along a route to try, best first: the middle of each segment, then nearer its
 * ends; right of the line, then left. Each is the label's baseline start. */
function* candidates(route: Point[], width: number): Generator<Point> {
  const points = corners(route);
  for (const t of [0.5, 0.3, 0.7]) {
    for (let i = 0; i + 1 < points.length; i++) {
      const a = points[i];
      const b = points[i + 1];
      if (Math.hypot(b.x - a.x, b.y - a.y) < 2 * ASCENT) continue;
      const x = a.x + (b.x - a.x) * t;
      const y = a.y + (b.y - a.y) * t + (ASCENT - DESCENT) / 2;
      yield { x: x + GAP, y };
      yield { x: x - GAP - width, y };
    }
  }
}

/**
 * Each request's label position (the baseline's start), or null: `obstacles` are the
 * boxes labels must not cover (nodes, groups, frame titles), in scene coordinates.
 */
export function placeLabels(requests: LabelRequest[], obstacles: Box[]): (Point | null)[] {
  const taken = new Buckets();
  for (const box of obstacles) taken.add(rectOf(box, MARGIN));
  const labelled = new Set<string>();
  return requests.map(({ key, text, points }) => {
    if (!text || labelled.has(key)) return null;
    const width = textWidth(text, EDGE_LABEL_PX);
    for (const at of candidates(points, width)) {
      const rect = { x0: at.x, y0: at.y - ASCENT, x1: at.x + width, y1: at.y + DESCENT };
      if (taken.hits(rect)) continue;
      taken.add({ x0: rect.x0 - MARGIN, y0: rect.y0 - MARGIN, x1: rect.x1 + MARGIN, y1: rect.y1 + MARGIN });
      labelled.add(key);
      return at;
    }
    return null;
  });
}
