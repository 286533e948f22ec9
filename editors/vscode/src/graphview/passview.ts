// An FX pass's before/after view: per graph the pass ran on, the graph before it and the
// graph after it in two panes side by side (or one of them), as Model Explorer compares two
// graphs in its split pane. Each pane is a GraphView (grouped by module, collapsible,
// searchable) of its own; the nodes the pass added, removed or rewired are marked (legend
// in the bar; a call of a module the pass swapped, `setattr(parent, name, fused_conv)`, says
// both classes), the pass's problems sit on the nodes they concern. The panes open at the
// same expansion and zoom and stay so: expanding a module in one expands it in the other,
// zoom and pan follow, selecting a node marks the node of the same name in the other; a
// click on a node reveals the pass line that made or changed it (its model line for the
// others). The document is `fxls graph FILE::pass --format json`'s page data
// (fxls/output/pass_page.py).
import { GraphDocument, GraphProblem, Item, Span, fileName } from "./model";
import { GraphView, Host, ViewState } from "./view";

export interface PassRunDocument {
  graph: string;
  summary: string;
  problem: string | null;
  added: string[];
  removed: string[];
  rewired: string[];
  diff: string[];
  before: GraphDocument;
  /** null when the pass raised (no graph after it) */
  after: GraphDocument | null;
}

export interface PassDocument {
  kind: "pass";
  name: string;
  passKind: string;
  graphsFrom: string;
  /** ok | problem */
  status: string;
  title?: string;
  file?: string | null;
  span?: Span | null;
  runs: PassRunDocument[];
  /** the pass's problems on no graph it ran on */
  problems?: GraphProblem[];
}

export type PassMode = "split" | "before" | "after";

/** What the view keeps across a reload of its page (VS Code re-renders after every trace). */
export interface PassState {
  run: number;
  mode: PassMode;
  sync: boolean;
  before?: ViewState | null;
  after?: ViewState | null;
}

export interface PassHost {
  reveal(span: Span): void;
  saveState?(state: PassState): void;
}

const GRAPHS_FROM: Record<string, string> = {
  representative: "The file has no model to run it on: it ran on representative graphs.",
  pass_models: "It ran on the project's pass_models.",
  import: "The file runs it itself, at import.",
};

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text?: string): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) element.setAttribute(key, value);
  if (text !== undefined) element.textContent = text;
  return element;
}

/** The module paths of the view's open groups (its root is always open). */
function expandedPaths(view: GraphView): string[] {
  return [...view.model.groups.values()].filter((g) => g.parent && g.expanded).map((g) => g.path);
}

export function isPassDocument(doc: unknown): doc is PassDocument {
  return !!doc && typeof doc === "object" && (doc as { kind?: unknown }).kind === "pass" && Array.isArray((doc as { runs?: unknown }).runs);
}

export class PassView {
  before: GraphView | null = null;
  after: GraphView | null = null;
  private runIndex = 0;
  private mode: PassMode = "split";
  private sync = true;
  private readonly panel: HTMLElement;
  private readonly panes: { before: HTMLElement; after: HTMLElement };
  private readonly banner: HTMLElement;
  private readonly location: HTMLElement;
  private readonly modeButtons = new Map<PassMode, HTMLButtonElement>();
  private states: { before?: ViewState | null; after?: ViewState | null } = {};
  /** set while one pane follows the other: the follower's own changes are not echoed */
  private following = false;

  constructor(
    root: HTMLElement,
    readonly doc: PassDocument,
    private readonly host: PassHost,
    saved?: PassState | null,
  ) {
    if (saved && typeof saved.run === "number" && saved.run < doc.runs.length) {
      this.runIndex = saved.run;
      this.mode = saved.mode ?? "split";
      this.sync = saved.sync ?? true;
      this.states = { before: saved.before, after: saved.after };
    }
    root.textContent = "";
    const app = el("div", { class: "fx-app fx-pass" });
    const bar = el("div", { class: "fx-pass-bar" });
    bar.append(el("h1", {}, doc.name));
    bar.append(el("span", { class: `status status-${doc.status === "problem" ? "failed" : "traced"}`, id: "fx-status" }, doc.status === "problem" ? "problem" : "ok"));
    bar.append(el("span", { class: "fx-muted" }, `FX pass (${doc.passKind})`));
    if (doc.file) bar.append(el("span", { class: "file", title: doc.file }, fileName(doc.file) + (doc.span ? `:${doc.span.line}` : "")));
    if (doc.runs.length > 1) {
      const select = el("select", { id: "fx-run", "aria-label": "Graph the pass ran on" });
      doc.runs.forEach((run, i) => {
        const option = el("option", { value: String(i) }, run.summary);
        if (i === this.runIndex) option.selected = true;
        select.append(option);
      });
      select.addEventListener("change", () => this.showRun(Number(select.value)));
      bar.append(select);
    }
    for (const [mode, label, title] of [
      ["split", "Side by side", "The graph before and after the pass side by side"],
      ["before", "Before", "Only the graph before the pass"],
      ["after", "After", "Only the graph after the pass"],
    ] as const) {
      const button = el("button", { id: `fx-mode-${mode}`, title }, label);
      button.addEventListener("click", () => this.setMode(mode));
      this.modeButtons.set(mode, button);
      bar.append(button);
    }
    const syncLabel = el("label", { title: "Selecting a node, expanding a module, zooming or panning in one pane does it in the other" });
    const syncBox = el("input", { type: "checkbox", id: "fx-sync" });
    syncBox.checked = this.sync;
    syncBox.addEventListener("change", () => {
      this.sync = syncBox.checked;
      if (this.sync) this.alignPanes();
      this.save();
    });
    syncLabel.append(syncBox, document.createTextNode(" sync"));
    bar.append(syncLabel);
    const legend = el("span", { class: "fx-legend", id: "fx-legend" });
    const swaps = doc.runs.some((run) => (run.after?.nodes ?? []).some((n) => n.swap));
    for (const [cls, text] of [["added", "added"], ["removed", "removed"], ["rewired", "rewired"], ...(swaps ? [["swapped", "module swapped"]] : []), ["problem", "problem"]]) {
      const item = el("span", { class: cls });
      item.append(el("i"), document.createTextNode(text));
      legend.append(item);
    }
    bar.append(legend, el("span", { class: "fx-spacer" }));
    this.location = el("span", { id: "fx-source-location", title: "source of the selected node" });
    bar.append(this.location);
    app.append(bar);
    this.banner = el("div", { class: "fx-banner", id: "fx-banner" });
    app.append(this.banner);
    const main = el("div", { class: "fx-main" });
    const split = el("div", { class: "fx-split" });
    this.panes = { before: el("div", { class: "fx-pane", id: "fx-pane-before" }), after: el("div", { class: "fx-pane", id: "fx-pane-after" }) };
    split.append(this.panes.before, this.panes.after);
    for (const side of ["before", "after"] as const) this.panes[side].addEventListener("click", (event) => this.paneButton(side, event));
    this.panel = el("aside", { class: "fx-panel", id: "fx-panel" });
    main.append(split, this.panel);
    app.append(main);
    root.append(app);
    this.showRun(this.runIndex, true);
  }

  get run(): PassRunDocument | undefined {
    return this.doc.runs[this.runIndex];
  }

  /** Draws run `index` (a graph the pass ran on) in the two panes. */
  showRun(index: number, restoring = false): void {
    this.runIndex = index;
    const run = this.run;
    if (!restoring) this.states = {};
    this.before = this.after = null;
    this.panes.before.textContent = "";
    this.panes.after.textContent = "";
    this.applyMode(false);
    if (!run) {
      this.panes.before.append(el("p", { class: "note" }, "Not run: no graph to run it on."));
      this.panes.after.classList.add("hidden");
      this.fillBanner();
      this.showSummary();
      return;
    }
    const host = (side: "before" | "after"): Host => ({
      reveal: (span) => this.reveal(span),
      saveState: (state) => {
        this.states[side] = state;
        this.save();
      },
      selected: (view, item) => this.selected(view, item),
      toggled: (view, path, expanded) => this.follow(view, (other) => other.setExpanded(path, expanded)),
      transformed: (view) => this.follow(view, () => undefined),
      overview: (view, open) => this.follow(view, (other) => other.setOverview(open)),
      summary: () => this.summary(),
    });
    const saved = !!(this.states.before || this.states.after);
    this.before = new GraphView(this.panes.before, run.before, host("before"), this.states.before ?? null, { title: `Before · ${run.graph}`, panel: this.panel });
    if (run.after) {
      // the graph after the pass opens as the graph before it is shown
      const start = this.states.after ?? (this.sync ? { expanded: expandedPaths(this.before), transform: this.before.transform, selected: null } : null);
      this.after = new GraphView(this.panes.after, run.after, host("after"), start, { title: `After · ${run.graph}`, panel: this.panel });
      if (!saved && this.sync) this.fitTogether();
    } else {
      this.panes.after.append(el("p", { class: "note fx-no-after" }, `No graph after the pass: ${run.problem ?? "it returned none"}`));
    }
    this.fillBanner();
    this.showSummary();
    this.save();
  }

  /** The other pane does what `view` did (`change`) and takes its zoom and pan. */
  private follow(view: GraphView, change: (other: GraphView) => void): void {
    const other = this.other(view);
    if (!other || !this.sync || this.following) return;
    this.following = true;
    try {
      change(other);
      other.setTransform(view.transform);
    } finally {
      this.following = false;
    }
  }

  /** A pane's Expand or Collapse (every module): the other pane does the same, and both
   * are fitted together. */
  private paneButton(side: "before" | "after", event: Event): void {
    const button = (event.target as Element).closest("button");
    const view = this[side];
    const other = view && this.other(view);
    if (!button || !other || !this.sync) return;
    const all = button.classList.contains("fx-expand-all") ? () => other.expandAll() : button.classList.contains("fx-collapse-all") ? () => other.collapseAll() : null;
    if (!all) return;
    this.following = true;
    try {
      all();
    } finally {
      this.following = false;
    }
    this.fitTogether();
  }

  /** The graph after the pass as the graph before it is shown: its modules that are in
   * both opened or closed alike, the same zoom and pan (sync turned back on). */
  private alignPanes(): void {
    const { before, after } = this;
    if (!before || !after) return;
    this.following = true;
    try {
      for (const group of after.model.groups.values()) {
        const leader = before.model.groups.get(group.path);
        if (leader && group.parent) after.setExpanded(group.path, leader.expanded);
      }
      after.setTransform(before.transform);
    } finally {
      this.following = false;
    }
  }

  /** Both panes at the zoom that shows the larger graph whole. */
  private fitTogether(): void {
    const { before, after } = this;
    if (!before || !after) return;
    this.following = true;
    try {
      before.fit();
      after.fit();
      const shared = before.transform.k <= after.transform.k ? before.transform : after.transform;
      before.setTransform(shared);
      after.setTransform(shared);
    } finally {
      this.following = false;
    }
  }

  private other(view: GraphView): GraphView | null {
    return view === this.before ? this.after : view === this.after ? this.before : null;
  }

  private selected(view: GraphView, item: Item | null): void {
    const other = this.other(view);
    if (!other) return;
    other.active = false;
    if (this.sync) other.showCounterpart(item?.kind === "node" ? item.data.name : null);
  }

  setMode(mode: PassMode): void {
    this.mode = mode;
    this.applyMode(true);
    this.save();
  }

  private applyMode(refit: boolean): void {
    for (const [mode, button] of this.modeButtons) button.classList.toggle("on", mode === this.mode);
    this.panes.before.classList.toggle("hidden", this.mode === "after");
    this.panes.after.classList.toggle("hidden", this.mode === "before");
    if (!refit) return;
    for (const view of [this.before, this.after]) view?.resized();
    if (this.mode === "split" && this.sync && this.before && this.after) this.fitTogether();
    else for (const view of [this.before, this.after]) view?.fit();
  }

  private fillBanner(): void {
    const run = this.run;
    const problems = [...(this.doc.problems ?? []), ...(run?.after?.problems ?? []), ...(run?.before.problems ?? [])];
    this.banner.textContent = "";
    this.banner.hidden = !run?.problem && problems.length === 0;
    if (this.banner.hidden) return;
    const errors = problems.filter((p) => p.severity === "error").length;
    this.banner.append(document.createTextNode(problems.length ? `${problems.length} problem${problems.length === 1 ? "" : "s"} in the pass${errors ? "" : " (information)"}: ` : `${run?.problem}`));
    problems.forEach((problem, i) => {
      if (i) this.banner.append(document.createTextNode(" · "));
      this.banner.append(this.problemLink(problem));
    });
  }

  private problemLink(problem: GraphProblem): HTMLElement {
    const line = problem.span ? `${fileName(problem.span.file)}:${problem.span.line} ` : "";
    const link = el("a", { class: "fx-problem-link" }, `${problem.code} ${line}${problem.message}`);
    link.addEventListener("click", () => {
      for (const view of [this.after, this.before]) {
        const node = view && problem.nodes.map((n) => view.model.nodes.get(n)).find((n) => n);
        if (view && node) {
          view.focusNode(node, false);
          break;
        }
      }
      if (problem.span) this.reveal(problem.span);
    });
    return link;
  }

  /** Shows the node `name` of the graph after the pass (before it for a removed node). */
  focus(name: string, side?: "before" | "after"): boolean {
    const order = side === "before" ? [this.before, this.after] : [this.after, this.before];
    for (const view of order) {
      const node = view?.model.nodes.get(name);
      if (view && node) {
        if (this.mode !== "split" && this.panes[view === this.before ? "before" : "after"].classList.contains("hidden")) this.setMode("split");
        view.focusNode(node, true);
        return true;
      }
    }
    return false;
  }

  private showSummary(): void {
    this.panel.textContent = "";
    this.panel.append(...this.summary());
    if (this.before) this.before.active = false;
    if (this.after) this.after.active = false;
  }

  /** The side panel with nothing selected: what the pass did to this graph. */
  summary(): Node[] {
    const run = this.run;
    const out: Node[] = [el("h2", { id: "fx-run-summary" }, run ? run.summary : `${this.doc.name}: not run`)];
    const note = GRAPHS_FROM[this.doc.graphsFrom];
    if (note) out.push(el("p", { class: "note", id: "graphs-from" }, note));
    out.push(el("p", { class: "note" }, "Left: the graph before the pass; right: after it. Click a node to see it (and the same node in the other pane) and the pass line that made or changed it."));
    if (!run) return out;
    const chips = el("div", { class: "chips", id: "fx-changes" });
    const chip = (cls: string, sign: string, name: string, side: "before" | "after") => {
      const c = el("span", { class: `chip ${cls}`, "data-node": name, title: `${cls}: show it` }, `${sign} ${name}`);
      c.addEventListener("click", () => this.focus(name, side));
      chips.append(c);
    };
    run.added.forEach((n) => chip("added", "+", n, "after"));
    run.removed.forEach((n) => chip("removed", "−", n, "before"));
    run.rewired.forEach((n) => chip("rewired", "~", n, "after"));
    for (const node of run.after?.nodes ?? []) if (node.swap && !run.added.includes(node.name)) chip("swapped", "⇄", node.name, "after");
    if (chips.childElementCount) out.push(el("h3", {}, "Changes"), chips);
    else out.push(el("p", { class: "fx-muted" }, "No change to this graph."));
    const problems = [...(this.doc.problems ?? []), ...(run.after?.problems ?? []), ...run.before.problems ?? []];
    if (problems.length) {
      out.push(el("h3", {}, `Problems (${problems.length})`));
      const list = el("ul", { id: "fx-problems" });
      for (const problem of problems) {
        const li = el("li", { class: "problem-text" });
        li.append(this.problemLink(problem));
        list.append(li);
      }
      out.push(list);
    }
    if (run.diff.length) {
      const details = el("details", { id: "fx-diff" });
      if (run.diff.length <= 40) details.open = true;
      details.append(el("summary", {}, "Generated code, before → after"));
      const pre = el("pre", { class: "diff" });
      const code = el("code");
      for (const line of run.diff) {
        const cls = line[0] === "+" ? "add" : line[0] === "-" ? "del" : line[0] === "@" ? "hunk" : "ctx";
        code.append(el("span", { class: `line ${cls}` }, line));
      }
      pre.append(code);
      details.append(pre);
      out.push(details);
    }
    return out;
  }

  /** A node's source: the host reveals it (VS Code opens the line); the bar shows it. */
  reveal(span: Span): void {
    this.showLocation(span);
    this.host.reveal(span);
  }

  showLocation(span: Span): void {
    this.location.textContent = `${fileName(span.file)}:${span.line}`;
    this.location.title = `${span.file}:${span.line}:${span.col + 1}`;
  }

  /** The editor's cursor: both panes mark the nodes of that line (in the pass, the nodes
   * that line made or changed). */
  highlightLine(file: string | null, line: number): void {
    this.before?.highlightLine(file, line);
    this.after?.highlightLine(file, line);
  }

  private save(): void {
    this.host.saveState?.({ run: this.runIndex, mode: this.mode, sync: this.sync, before: this.states.before ?? null, after: this.states.after ?? null });
  }
}
