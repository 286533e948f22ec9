// Where the view looks: the zoom and pan that fit the whole graph, its width, or bring one
// box (an expanded group, a problem's nodes) into view. Pure arithmetic on scene
// coordinates (boxes by their centres, as layout.ts gives them) and the drawing area's size.
import { Box } from "./layout";

export interface Transform {
  k: number;
  tx: number;
  ty: number;
}

export interface Size {
  width: number;
  height: number;
}

/** Space kept between the graph and the drawing area's edges. */
const MARGIN = 20;

/** The zoom at which a node's name can still be read comfortably. */
export const READABLE = 0.6;

/** Zoom limits of the view. */
export const MIN_ZOOM = 0.002;
export const MAX_ZOOM = 4;

/** The largest zoom any fit picks: a small graph is not blown up. */
const FIT_MAX = 1.2;

function clamp(value: number, low: number, high: number): number {
  return Math.max(low, Math.min(high, value));
}

/** The whole scene inside the view, width and height, centred. */
export function fitAll(scene: Size, view: Size): Transform {
  const sw = Math.max(scene.width, 1);
  const sh = Math.max(scene.height, 1);
  const k = clamp(Math.min((view.width - 2 * MARGIN) / sw, (view.height - 2 * MARGIN) / sh), MIN_ZOOM, FIT_MAX);
  return { k, tx: (view.width - sw * k) / 2, ty: (view.height - sh * k) / 2 };
}

/** The scene's width across the view, its top at the top (a tall graph is read down). */
export function fitWidth(scene: Size, view: Size): Transform {
  const sw = Math.max(scene.width, 1);
  const sh = Math.max(scene.height, 1);
  const k = clamp((view.width - 2 * MARGIN) / sw, MIN_ZOOM, FIT_MAX);
  const ty = sh * k < view.height ? (view.height - sh * k) / 2 : MARGIN;
  return { k, tx: (view.width - sw * k) / 2, ty };
}

/** How a graph opens: whole when that still shows its boxes, else across the width from
 * the top (a tall model's first layers, large enough to read). */
export function openingView(scene: Size, view: Size): Transform {
  const all = fitAll(scene, view);
  if (all.k >= 0.35) return all;
  const across = fitWidth(scene, view);
  return across.k > all.k ? across : all;
}

/** The smallest move that brings `box` into view: whole if it fits at the present zoom,
 * else whole at a smaller zoom that is still readable, else its top at a readable zoom. */
export function bringIntoView(box: Box, t: Transform, view: Size): Transform {
  const fits = Math.min((view.width - 2 * MARGIN) / Math.max(box.width, 1), (view.height - 2 * MARGIN) / Math.max(box.height, 1));
  let k = t.k;
  if (fits < k) k = fits >= READABLE ? fits : Math.max(k, READABLE);
  let { tx, ty } = t;
  if (k !== t.k) {
    // keep the box's centre where it is on screen while zooming, then move it in
    tx = box.x * (t.k - k) + t.tx;
    ty = box.y * (t.k - k) + t.ty;
  }
  const left = (box.x - box.width / 2) * k + tx;
  const top = (box.y - box.height / 2) * k + ty;
  const width = box.width * k;
  const height = box.height * k;
  tx += shift(left, width, view.width);
  ty += height + 2 * MARGIN <= view.height ? shift(top, height, view.height) : MARGIN - top;
  return { k, tx, ty };
}

/** How far to move a span [start, start + length) of the screen so it lies inside
 * [MARGIN, size - MARGIN], its start first when it is too long. */
function shift(start: number, length: number, size: number): number {
  if (length + 2 * MARGIN > size) return MARGIN - start;
  if (start < MARGIN) return MARGIN - start;
  if (start + length > size - MARGIN) return size - MARGIN - (start + length);
  return 0;
}

/** The box around `boxes` (centre coordinates). */
export function union(boxes: Box[]): Box | null {
  if (!boxes.length) return null;
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (const b of boxes) {
    x0 = Math.min(x0, b.x - b.width / 2);
    y0 = Math.min(y0, b.y - b.height / 2);
    x1 = Math.max(x1, b.x + b.width / 2);
    y1 = Math.max(y1, b.y + b.height / 2);
  }
  return { x: (x0 + x1) / 2, y: (y0 + y1) / 2, width: x1 - x0, height: y1 - y0 };
}
