// The interactive graph view: an SVG of the shown scene (layout.ts) with zoom and pan, an
// overview (minimap.ts), search (nodesearch.ts), a side panel for the selection with its
// source lines (sourcelines.ts), problems marked and counted (banner.ts), and the link to
// the source both ways (a `Host` reveals a node's line; `highlightLine` marks a line's nodes).
import { isMarked, problemBanner, problemPlace, problemText } from "./banner";
import { MAX_ZOOM, MIN_ZOOM, Transform, bringIntoView, fitAll, fitWidth, openingView, union } from "./camera";
import { el, esc, fmt } from "./dom";
import { sameBadge } from "./groupinfo";
import { Box, Layouter, Scene, SceneEdge, frameTitle, groupTitle, nodeSubtitle, nodeTitle, nodeTooltip } from "./layout";
import { Minimap } from "./minimap";
import {
  GNode,
  GraphDocument,
  GraphModel,
  GraphProblem,
  Group,
  Item,
  Span,
  ancestors,
  buildModel,
  fileName,
  nodesAtLine,
  reveal,
  shownAs,
} from "./model";
import { findNodes, resultsList } from "./nodesearch";
import { PanelContext, codePanel, groupPanel, nodePanel, summaryPanel } from "./sidepanel";
import { Sources, documentCells, documentSources, lineLabel } from "./sourcelines";

export { esc };

/** What the view keeps across a reload of its page (VS Code re-renders the panel after
 * every trace): the open groups, the zoom and pan, the selected node. */
export interface ViewState {
  expanded: string[];
  transform: { k: number; tx: number; ty: number };
  selected: string | null;
  /** the shape ops shown (the toolbar's toggle) */
  showBookkeeping?: boolean;
  /** the overview column open */
  overview?: boolean;
}

/** Where the view sends a request to show a source line, and (a pane of a split view, see
 * passview.ts) what the user did that the other pane follows. */
export interface Host {
  reveal(span: Span): void;
  /** the view's state changed (optional: the standalone page keeps nothing) */
  saveState?(state: ViewState): void;
  /** the user selected a node, a group or nothing */
  selected?(view: GraphView, item: Item | null): void;
  /** the user expanded or collapsed a group */
  toggled?(view: GraphView, path: string, expanded: boolean): void;
  /** the overview was folded or opened (a split view: the other pane follows, see
   * `setOverview`, so that both drawing areas keep one width) */
  overview?(view: GraphView, open: boolean): void;
  /** the zoom or pan changed (a split view keeps its panes' equal) */
  transformed?(view: GraphView): void;
  /** the side panel when nothing is selected (a split view: the pass's summary) */
  summary?(): Node[];
  /** the module's other graphs (VS Code: its FX graph, export's, compile's): a switch */
  graphs?: GraphSwitch;
}

/** The graphs of a module a page can switch between (the extension's graphSwitch.ts);
 * `choose` asks for another one, which replaces this page. */
export interface GraphSwitch {
  shown: string;
  choices: { graph: string; label: string }[];
  choose(graph: string): void;
}

/** A view that is one pane of a split view: a small toolbar of its own, no banner, and a
 * side panel shared with the other pane (written while this pane is the active one). */
export interface PaneOptions {
  title: string;
  panel: HTMLElement;
}

/** Below this zoom the graph is drawn as bare boxes (no text can be read). */
const OVERVIEW = 0.22;

/** A drawing area narrower than this (pixels) opens without the overview column. */
const NARROW = 480;

/** Models up to this many nodes open fully expanded. */
const SMALL_MODEL = 60;

let views = 0;

/** What shows `item` now: itself, or the outermost closed group around it (a folded node:
 * what shows its consumer). */
function shownItem(item: Item): Item {
  return item.kind === "node" ? shownAs(item) : ancestors(item).find((g) => !g.expanded) ?? item;
}


export interface Timing {
  /** milliseconds of the last scene change: layout + SVG + minimap */
  lastRenderMs: number;
  lastLayoutMs: number;
  groupsLaidOut: number;
  shownNodes: number;
  shownGroups: number;
}

export class GraphView {
  /** rebuilt (same document) when the shape ops are shown or folded */
  model: GraphModel;
  private layouter: Layouter;
  private scene!: Scene;
  private readonly svg: SVGSVGElement;
  private readonly viewport: SVGGElement;
  private readonly graphBox: HTMLElement;
  /** the part of the graph box the SVG fills (the overview has a column of its own) */
  private readonly drawArea: HTMLElement;
  private readonly panel: HTMLElement;
  private readonly minimap: Minimap;
  private readonly sources: Sources | null;
  private readonly searchInput: HTMLInputElement;
  private readonly searchCount: HTMLElement;
  private readonly sourceLocation: HTMLElement;
  private elements = new Map<string, Element>();
  private viewSize: { width: number; height: number } | null = null;
  private k = 1;
  private tx = 20;
  private ty = 20;
  private selected: Item | null = null;
  private matches: GNode[] = [];
  private matchIndex = -1;
  /** the nodes of the problem last clicked, marked with the selection */
  private picked: GNode[] = [];
  /** the edges drawn now, in the order of their `path.edge` elements */
  private drawnEdges: SceneEdge[] = [];
  private edgeElements: Element[] = [];
  private focusedEdges: Element[] = [];
  /** the groups holding a problem attached to a group (see holdsProblem) */
  private problemGroups: Set<Group> | null = null;
  /** the graph's first fit has not happened yet */
  private opening = true;
  private cursorNodes: GNode[] = [];
  /** the node of the other pane's selection (a split view) */
  private counterpart: GNode | null = null;
  /** the id of this view's arrow head (two panes share a page) */
  private readonly arrow = `arrow${++views}`;
  /** a pane: whether the shared side panel is this pane's */
  active = false;
  readonly timing: Timing = { lastRenderMs: 0, lastLayoutMs: 0, groupsLaidOut: 0, shownNodes: 0, shownGroups: 0 };

  constructor(
    root: HTMLElement,
    doc: GraphDocument,
    private readonly host: Host,
    saved?: ViewState | null,
    private readonly pane?: PaneOptions,
  ) {
    this.model = buildModel(doc, { showBookkeeping: saved?.showBookkeeping === true });
    this.layouter = new Layouter(this.model);
    this.sources = documentSources(doc);
    this.initialExpansion();
    root.textContent = "";
    const app = el("div", { class: pane ? "fx-app fx-pane-app" : "fx-app" });
    const toolbar = el("div", { class: "fx-toolbar" });
    // a pane's ids are its class names: two panes share the page
    const id = (name: string): Record<string, string> => (pane ? {} : { id: name });
    if (pane) {
      toolbar.append(el("h2", { class: "fx-pane-title" }, pane.title));
      toolbar.append(el("span", { class: "fx-muted fx-count" }, `${this.model.nodes.size} nodes`));
    } else {
      toolbar.append(el("h1", {}, doc.name));
      if (host.graphs) toolbar.append(this.graphSwitch(host.graphs));
      else if (doc.title) toolbar.append(el("span", { class: "fx-muted", id: "fx-graph-title" }, doc.title));
      if (doc.status) toolbar.append(el("span", { class: `status status-${doc.status.replace(/[^a-z]/g, "")}`, id: "fx-status" }, doc.status));
      toolbar.append(el("span", { class: "fx-muted", id: "fx-count" }, `${this.model.nodes.size} nodes, ${this.model.groups.size - 1} modules`));
      if (doc.file) toolbar.append(el("span", { class: "file", title: doc.file }, fileName(doc.file)));
    }
    this.searchInput = el("input", { ...id("fx-search"), class: "fx-search", type: "search", placeholder: pane ? "Search" : "Search name, op, target, /re/  ( / )", title: "A name, op or target contains the text (any case); /…/ is a regular expression", "aria-label": "Search nodes" });
    this.searchCount = el("span", { ...id("fx-search-count"), class: "fx-muted fx-search-count" });
    const button = (name: string, label: string, title: string, action: () => void) => {
      const b = el("button", { ...id(name), class: name, title }, label);
      b.addEventListener("click", action);
      return b;
    };
    toolbar.append(
      this.searchInput,
      this.searchCount,
      button("fx-prev", "↑", "Previous match (Shift+Enter)", () => this.nextMatch(-1)),
      button("fx-next", "↓", "Next match (Enter)", () => this.nextMatch(1)),
      button("fx-expand-all", pane ? "Expand" : "Expand all", "Expand every module", () => this.expandAll()),
      button("fx-collapse-all", pane ? "Collapse" : "Collapse all", "Collapse to the top-level modules", () => this.collapseAll()),
      ...(pane ? [] : [this.bookkeepingToggle(button)]),
      button("fx-fit", "Fit", "Fit the whole graph in the window (width and height)", () => this.fit()),
      button("fx-fit-width", pane ? "↔" : "Fit width", "Fit the graph's width to the window, from its top", () => this.fitWidth()),
      ...(pane ? [] : [button("fx-zoom-in", "+", "Zoom in", () => this.zoomBy(1.25)), button("fx-zoom-out", "−", "Zoom out", () => this.zoomBy(0.8))]),
      el("span", { class: "fx-spacer" }),
    );
    this.sourceLocation = el("span", { id: "fx-source-location", title: "source of the selected node" });
    if (!pane) toolbar.append(this.sourceLocation);
    app.append(toolbar);
    const banner = pane ? null : problemBanner(doc, this.model, (problem) => this.problemLink(problem), () => this.showProblems());
    if (banner) app.append(banner);
    const main = el("div", { class: "fx-main" });
    this.graphBox = el("div", { ...id("graph"), class: "fx-graph", role: "img", "aria-label": `FX graph of ${doc.name}` });
    this.svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    this.svg.innerHTML =
      `<defs><marker id="${this.arrow}" class="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker></defs><g class="viewport"></g>`;
    this.svg.querySelector("defs")!.insertAdjacentHTML(
      "beforeend",
      ["in", "out"].map((end) => `<marker id="${this.arrow}-${end}" class="arrow arrow-${end}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker>`).join(""),
    );
    this.viewport = this.svg.querySelector("g.viewport")!;
    this.drawArea = el("div", { class: "fx-draw" });
    this.drawArea.append(this.svg);
    this.minimap = new Minimap(
      (x, y) => this.lookAt(x, y),
      () => {
        this.resized();
        this.host.overview?.(this, this.minimap.open);
      },
      (dx, dy) => this.look({ k: this.k, tx: this.tx - dx * this.k, ty: this.ty - dy * this.k }),
    );
    // a pane opens without it: two panes keep equal drawing areas (their zoom is synced)
    if (pane) this.minimap.setOpen(false, false);
    this.graphBox.append(this.drawArea, this.minimap.element);
    this.panel = pane ? pane.panel : el("aside", { class: "fx-panel", id: "fx-panel" });
    main.append(this.graphBox);
    if (!pane) main.append(this.panel);
    app.append(main);
    root.append(app);
    this.wire();
    if (saved && this.restore(saved)) {
      this.opening = false;
      this.render();
    } else {
      this.render({ fit: true });
    }
    this.showPanel();
    this.graphBox.dataset.rendered = "true";
  }

  /** "shape ops": shows the shape bookkeeping (`x.shape`, `getitem` of sizes, `_assert`)
   * as nodes of its own, or folds it into its consumers again (the default). */
  private bookkeepingToggle(button: (name: string, label: string, title: string, action: () => void) => HTMLElement): HTMLElement {
    const toggle = button("fx-bookkeeping", "shape ops", "Show the shape bookkeeping (x.shape, sizes, asserts) as nodes; folded into their consumers when off", () => {
      const show = !this.model.options.showBookkeeping;
      this.rebuild(show);
      toggle.classList.toggle("on", show);
      toggle.setAttribute("aria-pressed", String(show));
    });
    const shown = !!this.model.options.showBookkeeping;
    toggle.classList.toggle("on", shown);
    toggle.setAttribute("aria-pressed", String(shown));
    return toggle;
  }

  /** The model again with the shape bookkeeping shown or folded, drawn with the same groups
   * open, the same selection, search and zoom. */
  rebuild(showBookkeeping: boolean): void {
    const open = new Set([...this.model.groups.values()].filter((g) => g.expanded).map((g) => g.path));
    const selected = this.selected;
    this.model = buildModel(this.model.doc, { showBookkeeping });
    this.problemGroups = null;
    this.layouter = new Layouter(this.model);
    for (const group of this.model.groups.values()) group.expanded = !group.parent || open.has(group.path);
    const again = (item: Item | null): Item | null =>
      !item ? null : item.kind === "node" ? this.model.nodes.get(item.data.name) ?? null : this.model.groups.get(item.path) ?? null;
    this.selected = again(selected);
    this.picked = [];
    this.cursorNodes = this.cursorNodes.map((n) => this.model.nodes.get(n.data.name)).filter((n): n is GNode => !!n);
    this.counterpart = this.counterpart ? this.model.nodes.get(this.counterpart.data.name) ?? null : null;
    this.matches = findNodes(this.model, this.searchInput.value).nodes;
    this.matchIndex = -1;
    this.render();
    this.showPanel();
    this.scheduleSave();
  }

  /** One pressed button per graph of the module; a click on another asks for it. */
  private graphSwitch(graphs: GraphSwitch): HTMLElement {
    const group = el("div", { class: "fx-graph-switch", id: "fx-graph-switch", role: "group", "aria-label": "Graph to show" });
    for (const { graph, label } of graphs.choices) {
      const shown = graph === graphs.shown;
      const b = el("button", { class: shown ? "on" : "", "data-graph": graph, "aria-pressed": String(shown) }, label);
      if (!shown) b.addEventListener("click", () => graphs.choose(graph));
      group.append(b);
    }
    return group;
  }

  /** Re-opens the groups of a saved state that still exist, its zoom and selection. */
  private restore(saved: ViewState): boolean {
    if (!Array.isArray(saved.expanded) || !saved.transform) return false;
    for (const group of this.model.groups.values()) group.expanded = !group.parent;
    for (const path of saved.expanded) {
      const group = this.model.groups.get(path);
      if (group) group.expanded = true;
    }
    ({ k: this.k, tx: this.tx, ty: this.ty } = saved.transform);
    this.selected = (saved.selected && this.model.nodes.get(saved.selected)) || null;
    if (typeof saved.overview === "boolean") this.minimap.setOpen(saved.overview, false);
    return true;
  }

  private saveState(): void {
    if (!this.host.saveState) return;
    const expanded = [...this.model.groups.values()].filter((g) => g.parent && g.expanded).map((g) => g.path);
    const selected = this.selected?.kind === "node" ? this.selected.data.name : null;
    this.host.saveState({ expanded, transform: { k: this.k, tx: this.tx, ty: this.ty }, selected, showBookkeeping: !!this.model.options.showBookkeeping, overview: this.minimap.open });
  }

  /** Small models open expanded; others at their top-level modules: the root's, or those
   * of the one module that wraps everything (a `Vit` holding `self.vit`). */
  private initialExpansion(): void {
    const all = this.model.nodes.size <= SMALL_MODEL;
    for (const g of this.model.groups.values()) g.expanded = all || !g.parent;
    let group = this.model.root;
    for (;;) {
      const inner = group.children.filter((c): c is Group => c.kind === "group");
      if (inner.length !== 1) break;
      group = inner[0];
      group.expanded = true;
    }
  }

  // -- problems ---------------------------------------------------------------------------

  private problemLink(problem: GraphProblem): HTMLElement {
    const marked = isMarked(this.model, problem);
    const link = el("a", { class: marked ? "fx-problem-link" : "fx-problem-link unmarked", title: marked ? "show it on the graph" : "not on the graph: show its line" }, problemText(problem));
    link.addEventListener("click", () => this.focusProblem(problem));
    return link;
  }

  /** Selects the nodes (or the group) a problem is at and brings them into view; its line
   * is revealed (the standalone page shows it). */
  focusProblem(problem: GraphProblem): void {
    const { nodes, group } = problemPlace(this.model, problem);
    const items: Item[] = nodes.length ? nodes : group ? [group] : [];
    if (items.length) {
      const opened = items.flatMap((item) => reveal(item));
      for (const g of opened) this.layouter.invalidate(g);
      if (opened.length) this.render();
      this.select(items[0]);
      this.picked = nodes;
      this.applyMarks();
      const box = union(items.map((item) => this.scene.boxes.get(shownItem(item).id)).filter((b): b is Box => !!b));
      if (box) this.look(bringIntoView(box, this.transform, this.size()));
    }
    const span = problem.span ?? nodes[0]?.data.span;
    if (span) this.host.reveal(span);
  }

  /** The side panel's list of every problem (nothing selected). */
  private showProblems(): void {
    this.select(null);
    this.panel.querySelector("#fx-problems")?.scrollIntoView();
  }

  // -- rendering --------------------------------------------------------------------------

  /** Lays out what is shown and redraws it. `keep`: an item to hold still on screen. */
  render(opts: { fit?: boolean; keep?: Item } = {}): void {
    const started = performance.now();
    const before = opts.keep ? this.screenBox(opts.keep) : null;
    this.scene = this.layouter.scene();
    if (opts.fit && this.opening) {
      this.opening = false;
      // a graph that is whole and readable without it needs no overview, and a narrow
      // window (VS Code's panel beside the editor) keeps its width for the drawing
      if (this.size().width < NARROW || fitAll(this.scene, this.size()).k >= 1) {
        this.minimap.setOpen(false, false);
        this.viewSize = null;
      }
    }
    if (opts.fit) this.place(openingView(this.scene, this.size()));
    else if (opts.keep && before) {
      const after = this.scene.boxes.get(opts.keep.id);
      if (after) {
        this.tx = before.x - (after.x - after.width / 2) * this.k;
        this.ty = before.y - (after.y - after.height / 2) * this.k;
      }
    }
    this.drawn = null;
    this.minimap.setScene(this.scene);
    this.applyTransform();
    this.timing.lastRenderMs = performance.now() - started;
    this.timing.lastLayoutMs = this.layouter.lastLayoutMs;
    this.timing.groupsLaidOut = this.layouter.lastLaidOut;
    this.timing.shownNodes = this.scene.nodes.length;
    this.timing.shownGroups = this.scene.collapsed.length;
    this.graphBox.dataset.shownNodes = String(this.scene.nodes.length);
    this.graphBox.dataset.shownGroups = String(this.scene.collapsed.length);
  }

  /** The part of the scene drawn now, and how: zoomed far out, every item as a bare box;
   * closer, only what is within a screen of the view, with its text (5,000 nodes of SVG
   * text cost seconds to parse and lay out, and cannot be read at that zoom anyway). */
  private drawn: { overview: boolean; region: Box } | null = null;

  private visibleRegion(margin: number): Box {
    const { width, height } = this.size();
    const w = width / this.k;
    const h = height / this.k;
    return { x: -this.tx / this.k + w / 2, y: -this.ty / this.k + h / 2, width: w * (1 + 2 * margin), height: h * (1 + 2 * margin) };
  }

  private needsRedraw(): boolean {
    const overview = this.k < OVERVIEW;
    if (!this.drawn || this.drawn.overview !== overview) return true;
    if (overview) return false;
    const view = this.visibleRegion(0);
    const r = this.drawn.region;
    return view.x - view.width / 2 < r.x - r.width / 2 || view.x + view.width / 2 > r.x + r.width / 2 ||
      view.y - view.height / 2 < r.y - r.height / 2 || view.y + view.height / 2 > r.y + r.height / 2;
  }

  private screenBox(item: Item): { x: number; y: number } | null {
    const box = this.scene?.boxes.get(item.id);
    if (!box) return null;
    return { x: (box.x - box.width / 2) * this.k + this.tx, y: (box.y - box.height / 2) * this.k + this.ty };
  }

  private draw(): void {
    const parts: string[] = [];
    const s = this.scene;
    const overview = this.k < OVERVIEW;
    const region = this.visibleRegion(1);
    this.drawn = { overview, region };
    const rx0 = region.x - region.width / 2;
    const rx1 = region.x + region.width / 2;
    const ry0 = region.y - region.height / 2;
    const ry1 = region.y + region.height / 2;
    const inside = (b: Box) => overview || (b.x + b.width / 2 >= rx0 && b.x - b.width / 2 <= rx1 && b.y + b.height / 2 >= ry0 && b.y - b.height / 2 <= ry1);
    // a frame's fill under the edges, its border and title over them (edges into a group
    // cross its title band)
    const frames: string[] = [];
    for (const { group, box } of s.frames) {
      if (!inside(box)) continue;
      const x = box.x - box.width / 2;
      const y = box.y - box.height / 2;
      const rect = `x="${fmt(x)}" y="${fmt(y)}" width="${fmt(box.width)}" height="${fmt(box.height)}" rx="6"`;
      parts.push(`<rect class="frame-fill" ${rect}/>`);
      frames.push(
        `<g class="frame${this.holdsProblem(group) ? " problem" : ""}" data-id="${esc(group.id)}"><rect ${rect}/>` +
          `<text class="frame-title" x="${fmt(x + 8)}" y="${fmt(y + 16)}">${esc(frameTitle(group))}</text></g>`,
      );
    }
    const drawnEdges: SceneEdge[] = [];
    for (const edge of s.edges) {
      if (!overview) {
        let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
        for (const p of edge.points) {
          x0 = Math.min(x0, p.x);
          x1 = Math.max(x1, p.x);
          y0 = Math.min(y0, p.y);
          y1 = Math.max(y1, p.y);
        }
        if (x1 < rx0 || x0 > rx1 || y1 < ry0 || y0 > ry1) continue;
      }
      const d = edge.points.map((p, i) => `${i ? "L" : "M"}${fmt(p.x)},${fmt(p.y)}`).join("");
      parts.push(`<path class="edge" d="${d}" marker-end="url(#${this.arrow})"/>`);
      drawnEdges.push(edge);
      if (!overview && edge.label && edge.labelAt) parts.push(`<text class="edge-label" x="${fmt(edge.labelAt.x)}" y="${fmt(edge.labelAt.y)}">${esc(edge.label)}</text>`);
    }
    parts.push(...frames);
    for (const { group, box } of s.collapsed) {
      if (!inside(box)) continue;
      const x = box.x - box.width / 2;
      const y = box.y - box.height / 2;
      const detail = `${group.nodeCount} nodes${group.changeCount ? ` · ${group.changeCount} changed` : ""}${group.problemCount ? ` · ${group.problemCount} problem${group.problemCount === 1 ? "" : "s"}` : ""}`;
      parts.push(
        `<g class="group collapsed${group.changeCount ? " changed" : ""}${this.holdsProblem(group) ? " problem" : ""}" data-id="${esc(group.id)}" transform="translate(${fmt(x)},${fmt(y)})">` +
          `<title>${esc(group.path)}${group.type ? ` (${esc(group.type)})` : ""}: click to expand</title>` +
          `<rect width="${fmt(box.width)}" height="${fmt(box.height)}" rx="8"/>` +
          (group.changeCount ? `<rect class="change-bar" width="5" height="${fmt(box.height)}" rx="2"/>` : "") +
          `<text class="t1" x="10" y="18">▸ ${esc(groupTitle(group))}</text><text class="t2" x="10" y="35">${detail}</text>` +
          (this.holdsProblem(group) ? this.badge(box.width, group.problemCount ? String(group.problemCount) : "!") : "") +
          sameBadge(this.model, group, box.width) +
          `</g>`,
      );
    }
    for (const { node, box } of s.nodes) {
      if (!inside(box)) continue;
      const x = box.x - box.width / 2;
      const y = box.y - box.height / 2;
      const problem = node.problems.length > 0;
      const mark = node.data.mark ? ` mark-${esc(node.data.mark)}` : "";
      if (overview) {
        parts.push(
          `<g class="node op-${esc(node.data.op)}${mark}${problem ? " problem" : ""}" data-id="${esc(node.id)}" transform="translate(${fmt(x)},${fmt(y)})"><rect width="${fmt(box.width)}" height="${fmt(box.height)}" rx="4"/></g>`,
        );
        continue;
      }
      // the whole name, shape and folded bookkeeping (labels.ts); none in the overview above
      const tooltip = nodeTooltip(node);
      const tip = tooltip ? `<title>${esc(tooltip)}</title>` : "";
      parts.push(
        `<g class="node op-${esc(node.data.op)}${mark}${problem ? " problem" : ""}" data-id="${esc(node.id)}" transform="translate(${fmt(x)},${fmt(y)})">` +
          `${tip}<rect width="${fmt(box.width)}" height="${fmt(box.height)}" rx="4"/>` +
          `<text class="t1" x="8" y="15">${esc(nodeTitle(node))}</text><text class="t2" x="8" y="30">${esc(nodeSubtitle(node))}</text>` +
          (problem ? this.badge(box.width, "!") : "") +
          `</g>`,
      );
    }
    this.viewport.innerHTML = parts.join("");
    this.drawnEdges = drawnEdges;
    this.edgeElements = Array.from(this.viewport.querySelectorAll("path.edge"));
    this.focusedEdges = [];
    this.elements = new Map();
    this.viewport.querySelectorAll("[data-id]").forEach((element) => this.elements.set(element.getAttribute("data-id")!, element));
    this.applyMarks();
  }

  /** Whether a problem is marked inside `group`: at its nodes, or attached to the group
   * itself or one inside it (a problem in library code the module called). */
  private holdsProblem(group: Group): boolean {
    if (group.problemCount) return true;
    if (!this.problemGroups) {
      this.problemGroups = new Set();
      for (const problem of this.model.doc.problems ?? []) {
        const { group: at } = problemPlace(this.model, problem);
        for (let g = at; g; g = g.parent) this.problemGroups.add(g);
      }
    }
    return this.problemGroups.has(group);
  }

  private badge(width: number, text: string): string {
    return `<circle class="badge" cx="${fmt(width)}" cy="0" r="8"/><text class="badge-text" x="${fmt(width)}" y="3.5" text-anchor="middle">${esc(text)}</text>`;
  }

  /** Selection, search matches and the cursor's nodes as classes on what is drawn. */
  private applyMarks(): void {
    this.viewport.querySelectorAll(".selected, .match, .cursor, .counterpart").forEach((element) => element.classList.remove("selected", "match", "cursor", "counterpart"));
    const mark = (item: Item, cls: string) => this.elements.get(shownAs(item as GNode).id)?.classList.add(cls);
    const markItem = (item: Item, cls: string) => (item.kind === "node" ? mark(item, cls) : this.elements.get(item.id)?.classList.add(cls));
    for (const node of this.matches) mark(node, "match");
    for (const node of this.cursorNodes) mark(node, "cursor");
    if (this.counterpart) mark(this.counterpart, "counterpart");
    for (const node of this.picked) mark(node, "selected");
    if (this.selected) markItem(this.selected, "selected");
    this.markEdges();
  }

  /** The shown item whose edges the selection colours: a node (or the closed group showing
   * it), or a closed group; an open group's frame has no edges of its own. */
  private focusId(): string | null {
    const item = this.selected;
    if (!item) return null;
    if (item.kind === "group" && item.expanded) return null;
    return shownItem(item).id;
  }

  /** The selection's input edges and output edges coloured, the other edges faded. */
  private markEdges(): void {
    for (const element of this.focusedEdges) {
      element.classList.remove("edge-in", "edge-out");
      element.setAttribute("marker-end", `url(#${this.arrow})`);
    }
    this.focusedEdges = [];
    const focus = this.focusId();
    this.svg.classList.toggle("fx-focus", focus !== null);
    if (focus === null) return;
    this.drawnEdges.forEach((edge, i) => {
      const end = edge.to.id === focus ? "in" : edge.from.id === focus ? "out" : null;
      const element = this.edgeElements[i];
      if (!end || !element) return;
      element.classList.add(`edge-${end}`);
      element.setAttribute("marker-end", `url(#${this.arrow}-${end})`);
      this.focusedEdges.push(element);
    });
  }

  // -- zoom, pan, minimap -----------------------------------------------------------------

  private applyTransform(): void {
    this.viewport.setAttribute("transform", `translate(${fmt(this.tx)},${fmt(this.ty)}) scale(${this.k})`);
    this.svg.classList.toggle("far", this.k < 0.5);
    this.svg.classList.toggle("very-far", this.k < OVERVIEW);
    if (this.needsRedraw()) this.draw();
    this.minimap.draw(this.transform, this.size());
    this.scheduleSave();
    this.host.transformed?.(this);
  }

  /** The zoom and pan: scene point p is drawn at p * k + (tx, ty). */
  get transform(): { k: number; tx: number; ty: number } {
    return { k: this.k, tx: this.tx, ty: this.ty };
  }

  /** Zooms and pans to `transform` (the other pane of a split view did). */
  setTransform(transform: { k: number; tx: number; ty: number }): void {
    if (transform.k === this.k && transform.tx === this.tx && transform.ty === this.ty) return;
    ({ k: this.k, tx: this.tx, ty: this.ty } = transform);
    this.applyTransform();
  }

  private savePending = false;

  private scheduleSave(): void {
    if (this.savePending || !this.host.saveState) return;
    this.savePending = true;
    setTimeout(() => {
      this.savePending = false;
      this.saveState();
    }, 200);
  }

  /** The graph area's size, read once and on resize: reading it after a redraw would
   * force a synchronous layout of the whole SVG (seconds at 5,000 nodes). */
  private size(): { width: number; height: number } {
    if (!this.viewSize) this.viewSize = { width: this.drawArea.clientWidth || 800, height: this.drawArea.clientHeight || 600 };
    return this.viewSize;
  }

  private place(t: Transform): void {
    ({ k: this.k, tx: this.tx, ty: this.ty } = t);
  }

  /** Moves the view to `t` and draws it. */
  private look(t: Transform): void {
    this.place(t);
    this.applyTransform();
  }

  /** The whole graph in the window, width and height. */
  fit(): void {
    this.look(fitAll(this.scene, this.size()));
  }

  /** The graph's width across the window, from its top. */
  fitWidth(): void {
    this.look(fitWidth(this.scene, this.size()));
  }

  /** Centres the view on the scene point (x, y) (the overview's click). */
  private lookAt(x: number, y: number): void {
    const { width, height } = this.size();
    this.look({ k: this.k, tx: width / 2 - x * this.k, ty: height / 2 - y * this.k });
  }

  /** Moves the view so that `item` (shown now) is in it: whole if it fits, else its top. */
  bringIntoView(item: Item): void {
    const box = this.scene.boxes.get(item.id);
    if (box) this.look(bringIntoView(box, this.transform, this.size()));
  }

  zoomBy(factor: number, cx?: number, cy?: number): void {
    const { width, height } = this.size();
    const x = cx ?? width / 2;
    const y = cy ?? height / 2;
    const k = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, this.k * factor));
    this.tx = x - ((x - this.tx) * k) / this.k;
    this.ty = y - ((y - this.ty) * k) / this.k;
    this.k = k;
    this.applyTransform();
  }

  /** Scrolls so that `box` (scene coordinates) is in the middle, zooming in to read it. */
  private centerOn(box: Box): void {
    const { width, height } = this.size();
    if (this.k < 0.7) this.k = 0.9;
    this.tx = width / 2 - box.x * this.k;
    this.ty = height / 2 - box.y * this.k;
    this.applyTransform();
  }

  // -- events -----------------------------------------------------------------------------

  private wire(): void {
    let drag: { x: number; y: number; tx: number; ty: number; moved: boolean } | null = null;
    let suppressClick = false;
    this.svg.addEventListener("pointerdown", (event) => {
      if (event.button !== 0) return;
      drag = { x: event.clientX, y: event.clientY, tx: this.tx, ty: this.ty, moved: false };
    });
    window.addEventListener("pointermove", (event) => {
      if (!drag) return;
      const dx = event.clientX - drag.x;
      const dy = event.clientY - drag.y;
      if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
      drag.moved = true;
      this.graphBox.classList.add("panning");
      this.tx = drag.tx + dx;
      this.ty = drag.ty + dy;
      this.applyTransform();
    });
    window.addEventListener("pointerup", () => {
      if (drag?.moved) suppressClick = true;
      drag = null;
      this.graphBox.classList.remove("panning");
    });
    this.svg.addEventListener(
      "wheel",
      (event) => {
        event.preventDefault();
        const r = this.svg.getBoundingClientRect();
        this.zoomBy(Math.exp(-event.deltaY * 0.0015), event.clientX - r.left, event.clientY - r.top);
      },
      { passive: false },
    );
    this.svg.addEventListener("click", (event) => {
      if (suppressClick) {
        suppressClick = false;
        return;
      }
      const target = (event.target as Element).closest("[data-id]");
      if (!target) {
        this.select(null);
        return;
      }
      this.activate(target.getAttribute("data-id")!, target.classList.contains("frame") && !(event.target as Element).classList.contains("frame-title"));
    });
    this.searchInput.addEventListener("input", () => this.search(this.searchInput.value));
    this.searchInput.addEventListener("keydown", (event) => {
      if (event.key === "Enter") this.nextMatch(event.shiftKey ? -1 : 1);
      if (event.key === "Escape") {
        this.searchInput.value = "";
        this.search("");
      }
    });
    window.addEventListener("keydown", (event) => {
      if (event.key === "/" && document.activeElement !== this.searchInput && (!this.pane || this.active)) {
        event.preventDefault();
        this.searchInput.focus();
      }
    });
    window.addEventListener("resize", () => {
      this.viewSize = null;
      this.applyTransform();
    });
  }

  /** A click on an item: a node is selected and its line revealed; a collapsed group
   * expands; an expanded group's title collapses it (a click inside its frame selects it). */
  private activate(id: string, frameBody: boolean): void {
    const item = id.startsWith("n:") ? this.model.nodes.get(id.slice(2)) : this.model.groups.get(id.slice(2));
    if (!item) return;
    if (item.kind === "node") {
      this.select(item);
      if (item.data.span) this.host.reveal(item.data.span);
      return;
    }
    if (frameBody) {
      this.select(item);
      return;
    }
    this.toggle(item);
  }

  // -- groups -----------------------------------------------------------------------------

  toggle(group: Group): void {
    if (group.expanded) this.collapse(group);
    else this.expand(group);
  }

  expand(group: Group): void {
    if (group.expanded) return;
    group.expanded = true;
    this.layouter.invalidate(group);
    this.select(group);
    this.render({ keep: group });
    this.bringIntoView(group);
    this.host.toggled?.(this, group.path, true);
  }

  collapse(group: Group): void {
    if (!group.expanded || !group.parent) return;
    group.expanded = false;
    this.layouter.invalidate(group);
    this.select(group);
    this.render({ keep: group });
    this.host.toggled?.(this, group.path, false);
  }

  /** Expands or collapses the group of module path `path` if there is one (the other pane
   * of a split view did); whether anything changed. */
  setExpanded(path: string, expanded: boolean): boolean {
    const group = this.model.groups.get(path);
    if (!group || !group.parent || group.expanded === expanded) return false;
    group.expanded = expanded;
    this.layouter.invalidate(group);
    this.render({ keep: group });
    return true;
  }

  /** Marks the node `name` (the other pane's selection), showing it; null clears it. */
  showCounterpart(name: string | null): GNode | null {
    const node = name ? this.model.nodes.get(name) ?? null : null;
    this.counterpart = node;
    if (node) {
      const opened = reveal(node);
      for (const group of opened) this.layouter.invalidate(group);
      if (opened.length) this.render();
      const box = this.scene.boxes.get(shownAs(node).id);
      const { width, height } = this.size();
      if (box) {
        const sx = box.x * this.k + this.tx;
        const sy = box.y * this.k + this.ty;
        if (sx < 0 || sy < 0 || sx > width || sy > height) this.centerOn(box);
      }
    }
    this.applyMarks();
    return node;
  }

  /** Opens or folds the overview column (the other pane of a split view did). */
  setOverview(open: boolean): void {
    this.minimap.setOpen(open);
  }

  /** The view's box changed size (a split view showed or hid the other pane, the
   * overview folded or opened). */
  resized(): void {
    this.viewSize = null;
    this.drawn = null;
    if (this.scene) this.applyTransform();
  }

  expandAll(): void {
    for (const group of this.model.groups.values()) group.expanded = true;
    this.layouter.invalidateAll();
    this.render({ fit: true });
  }

  collapseAll(): void {
    this.initialExpansion();
    if (this.model.nodes.size <= SMALL_MODEL) for (const group of this.model.groups.values()) group.expanded = !group.parent;
    this.layouter.invalidateAll();
    this.render({ fit: true });
    this.select(null);
  }

  /** Shows `node` (expanding the groups around it), selects it and centres it. */
  focusNode(node: GNode, revealSource: boolean): void {
    const opened = reveal(node);
    for (const group of opened) this.layouter.invalidate(group);
    if (opened.length) this.render();
    this.select(node);
    const box = this.scene.boxes.get(shownAs(node).id);
    if (box) this.centerOn(box);
    if (revealSource && node.data.span) this.host.reveal(node.data.span);
  }

  // -- search -----------------------------------------------------------------------------

  search(query: string): GNode[] {
    const found = findNodes(this.model, query);
    this.matches = found.nodes;
    this.matchIndex = -1;
    this.searchInput.classList.toggle("fx-regex", found.regex);
    this.searchCount.classList.toggle("fx-error", found.error !== null);
    const modules = new Set(found.nodes.map((node) => node.parent)).size;
    this.searchCount.textContent = found.error ?? (query.trim() ? `${found.nodes.length} found${modules > 1 ? ` in ${modules} modules` : ""}` : "");
    this.applyMarks();
    this.showPanel();
    return this.matches;
  }

  nextMatch(step: number): void {
    if (!this.matches.length) return;
    this.matchIndex = (this.matchIndex + step + this.matches.length) % this.matches.length;
    this.searchCount.textContent = `${this.matchIndex + 1} of ${this.matches.length}`;
    this.focusNode(this.matches[this.matchIndex], false);
  }

  // -- the source -------------------------------------------------------------------------

  /** Marks the nodes made by `line` of `file` (the editor's cursor); returns them. */
  highlightLine(file: string | null, line: number): GNode[] {
    this.cursorNodes = nodesAtLine(this.model, file, line);
    this.applyMarks();
    const first = this.cursorNodes[0];
    if (first) {
      const box = this.scene.boxes.get(shownAs(first).id);
      const { width, height } = this.size();
      if (box) {
        const sx = box.x * this.k + this.tx;
        const sy = box.y * this.k + this.ty;
        if (sx < 0 || sy < 0 || sx > width || sy > height) this.centerOn(box);
      }
    }
    return this.cursorNodes;
  }

  /** The standalone page's `Host.reveal`: shows `file:line` in the toolbar. */
  showLocation(span: Span): void {
    this.sourceLocation.textContent = `${span.file}:${lineLabel(documentCells(this.model.doc), span.file, span.line)}`;
    this.sourceLocation.title = `${span.file}:${span.line}:${span.col + 1}`;
  }

  // -- selection and side panel -------------------------------------------------------------

  select(item: Item | null): void {
    this.selected = item;
    this.picked = [];
    if (this.pane) {
      this.active = true;
      this.counterpart = null;
    }
    this.applyMarks();
    this.showPanel();
    this.scheduleSave();
    this.host.selected?.(this, item);
  }

  /** What the side panel needs of this view. */
  private panelContext(): PanelContext {
    return {
      model: this.model,
      sources: this.sources,
      paneTitle: this.pane?.title ?? null,
      focusNode: (node) => this.focusNode(node, false),
      reveal: (span) => this.host.reveal(span),
      toggle: (group) => this.toggle(group),
      problemLink: (problem) => this.problemLink(problem),
    };
  }

  showPanel(): void {
    if (this.pane && !this.active) return;
    const panel = this.panel;
    panel.textContent = "";
    const ctx = this.panelContext();
    const item = this.selected;
    if (item?.kind === "node") panel.append(...nodePanel(ctx, item));
    else if (item?.kind === "group") panel.append(...groupPanel(ctx, item));
    else panel.append(...(this.host.summary ? this.host.summary() : summaryPanel(ctx)));
    if (this.searchInput.value.trim()) {
      panel.append(el("h3", {}, `Matches (${this.matches.length})`));
      const current = this.selected?.kind === "node" ? this.selected : null;
      panel.append(resultsList(this.matches, (node) => this.focusNode(node, false), current));
      // the list keeps the selected result in sight (the panel was written anew)
      panel.querySelector("#fx-matches li.current")?.scrollIntoView({ block: "nearest" });
    }
    if (this.model.doc.code) panel.append(codePanel(this.model.doc.code));
  }

  /** Scrolls the shown item `id` (`n:name`, `g:path`) into the middle of the view. */
  centerOnId(id: string): boolean {
    const box = this.scene.boxes.get(id);
    if (box) this.centerOn(box);
    return !!box;
  }

  /** Names of the shown groups and nodes, for tests. */
  shown(): { nodes: string[]; groups: string[] } {
    return { nodes: this.scene.nodes.map((n) => n.node.data.name), groups: this.scene.collapsed.map((g) => g.group.path) };
  }

  groupOf(path: string): Group | undefined {
    return this.model.groups.get(path);
  }

  ancestorsOf(name: string): string[] {
    const node = this.model.nodes.get(name);
    return node ? ancestors(node).map((g) => g.path) : [];
  }
}
