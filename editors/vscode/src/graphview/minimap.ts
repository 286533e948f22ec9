// The overview beside the drawing: a column of its own at the right of the graph (it never
// covers a node), the whole scene scaled into it and the part in view outlined. A tall
// graph fills the column's width and scrolls in it with the view, instead of shrinking to
// a line; the column folds away to a thin strip with its button.
import { Transform, Size } from "./camera";
import { el } from "./dom";
import { Box, Scene } from "./layout";

/** The largest scale a tall graph is drawn at in the overview (a fifth of its size). */
const MAX_SCALE = 0.2;

interface Placement {
  scale: number;
  ox: number;
  oy: number;
}

export class Minimap {
  /** the column: the toggle above the canvas */
  readonly element: HTMLElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly toggle: HTMLButtonElement;
  private scene: Scene | null = null;
  private scale = 1;
  private size: Size | null = null;
  private placed: Placement = { scale: 1, ox: 0, oy: 0 };
  /** the placement at the start of a drag: the overview holds still under the pointer */
  private dragging: Placement | null = null;

  /** `moveTo` centres the view on a scene point; `resized` is told when the column folds
   * or opens (the drawing area changes width). */
  constructor(
    private readonly moveTo: (x: number, y: number) => void,
    private readonly resized: () => void,
    private readonly scrollBy: (dx: number, dy: number) => void,
  ) {
    this.element = el("div", { class: "fx-overview" });
    this.toggle = el("button", { class: "fx-overview-toggle", title: "Hide the overview" }, "▸");
    this.canvas = el("canvas", { class: "fx-overview-map", title: "overview: click or drag to move the view" });
    this.element.append(this.toggle, this.canvas);
    this.toggle.addEventListener("click", () => this.setOpen(this.element.classList.contains("folded")));
    this.canvas.addEventListener("pointerdown", (event) => {
      event.stopPropagation();
      this.dragging = { ...this.placed };
      this.canvas.setPointerCapture?.(event.pointerId);
      this.pointAt(event);
    });
    this.canvas.addEventListener("pointermove", (event) => this.dragging && this.pointAt(event));
    this.canvas.addEventListener("pointerup", () => (this.dragging = null));
    // the wheel scrolls the view along the graph, at the overview's scale
    this.canvas.addEventListener(
      "wheel",
      (event) => {
        event.preventDefault();
        this.scrollBy(event.deltaX / this.scale, event.deltaY / this.scale);
      },
      { passive: false },
    );
    window.addEventListener("resize", () => (this.size = null));
  }

  get open(): boolean {
    return !this.element.classList.contains("folded");
  }

  /** Opens or folds the column; `notify`: tell the view its drawing area changed. */
  setOpen(open: boolean, notify = true): void {
    if (open === this.open) return;
    this.element.classList.toggle("folded", !open);
    this.toggle.textContent = open ? "▸" : "◂";
    this.toggle.title = open ? "Hide the overview" : "Show the overview";
    this.size = null;
    if (notify) this.resized();
  }

  /** The canvas's size on the page, read once (and after a resize or fold). */
  private area(): Size {
    if (!this.size) {
      this.size = { width: Math.max(this.canvas.clientWidth, 1), height: Math.max(this.canvas.clientHeight, 1) };
      this.canvas.width = this.size.width;
      this.canvas.height = this.size.height;
      if (this.scene) this.setScene(this.scene);
    }
    return this.size;
  }

  /** The scene the overview shows from now on, and the scale it is drawn at. */
  setScene(scene: Scene): void {
    this.scene = scene;
    if (!this.open) return;
    const { width, height } = this.area();
    const sw = Math.max(scene.width, 1);
    const sh = Math.max(scene.height, 1);
    const fit = Math.min(width / sw, height / sh);
    // a tall graph: its width fills the column and the overview scrolls along its height
    const tall = sw * fit < width / 2 ? Math.min((0.9 * width) / sw, MAX_SCALE) : 0;
    this.scale = Math.max(fit, tall);
  }

  /** The overview with the part of the scene in `view` (the drawing area) outlined. */
  draw(t: Transform, view: Size): void {
    const scene = this.scene;
    if (!this.open || !scene) return;
    const { width, height } = this.area();
    const s = this.scale;
    const cw = scene.width * s;
    const ch = scene.height * s;
    // the view's centre, in scene coordinates: a scrolled overview follows it
    const cx = (view.width / 2 - t.tx) / t.k;
    const cy = (view.height / 2 - t.ty) / t.k;
    const along = (content: number, room: number, centre: number) =>
      content <= room ? (room - content) / 2 : Math.min(0, Math.max(room - content, room / 2 - centre * s));
    this.placed = this.dragging ?? { scale: s, ox: along(cw, width, cx), oy: along(ch, height, cy) };
    const { ox, oy } = this.placed;
    const ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    ctx.clearRect(0, 0, width, height);
    this.drawScene(ctx, scene, ox, oy, width, height);
    ctx.strokeStyle = "#1d4ed8";
    ctx.lineWidth = 1.5;
    ctx.fillStyle = "rgba(29,78,216,0.08)";
    // the part in view, cut to the canvas: all four sides show though the view is wider
    const x0 = Math.max(ox + (-t.tx / t.k) * s, 1);
    const y0 = Math.max(oy + (-t.ty / t.k) * s, 1);
    const x1 = Math.min(ox + ((view.width - t.tx) / t.k) * s, width - 1);
    const y1 = Math.min(oy + ((view.height - t.ty) / t.k) * s, height - 1);
    const w = Math.max(x1 - x0, 3);
    const h = Math.max(y1 - y0, 3);
    ctx.fillRect(x0, y0, w, h);
    ctx.strokeRect(x0, y0, w, h);
  }

  /** The scene's boxes that fall inside the canvas (a scrolled overview draws its window). */
  private drawScene(ctx: CanvasRenderingContext2D, scene: Scene, ox: number, oy: number, width: number, height: number): void {
    const s = this.scale;
    const rect = (b: Box) => {
      const x = ox + (b.x - b.width / 2) * s;
      const y = oy + (b.y - b.height / 2) * s;
      const w = Math.max(b.width * s, 1);
      const h = Math.max(b.height * s, 1);
      if (x + w >= 0 && y + h >= 0 && x <= width && y <= height) ctx.fillRect(x, y, w, h);
    };
    ctx.fillStyle = "rgba(100,116,139,0.14)";
    for (const { box } of scene.frames) rect(box);
    ctx.fillStyle = "#94a3b8";
    for (const { box } of scene.collapsed) rect(box);
    ctx.fillStyle = "#64748b";
    for (const { box } of scene.nodes) rect(box);
    for (const [mark, colour] of [["added", "#1a7f37"], ["removed", "#cf222e"], ["rewired", "#bf8700"]]) {
      ctx.fillStyle = colour;
      for (const { node, box } of scene.nodes) if (node.data.mark === mark) rect(box);
    }
    ctx.fillStyle = "#e51400";
    for (const { node, box } of scene.nodes) if (node.problems.length) rect(box);
    for (const { group, box } of scene.collapsed) if (group.problemCount) rect(box);
  }

  private pointAt(event: PointerEvent): void {
    const r = this.canvas.getBoundingClientRect();
    const { scale, ox, oy } = this.placed;
    this.moveTo((event.clientX - r.left - ox) / scale, (event.clientY - r.top - oy) / scale);
  }
}
