// What the side panel says about the selection: a node (its op, target, inputs and users,
// shape, module, source link and lines, problems), a module group (its class and where it
// is defined, nodes by op, shapes in and out, identical siblings, the problems attached to
// it), or with nothing selected the graph and its problems.
import { isMarked, problemPlace, problemText } from "./banner";
import { el } from "./dom";
import { BoundaryValue, boundary, definedAt, groupList, opCounts, sameSiblings } from "./groupinfo";
import { GNode, GraphModel, GraphProblem, Group, Span, fileName } from "./model";
import { Sources, documentCells, lineLabel, sourceLines } from "./sourcelines";

/** What the panel needs from its view. */
export interface PanelContext {
  model: GraphModel;
  sources: Sources | null;
  /** the pane's title in a split view, whose panes share one panel */
  paneTitle: string | null;
  /** goes to a node (the links to inputs and users) */
  focusNode(node: GNode): void;
  reveal(span: Span): void;
  toggle(group: Group): void;
  problemLink(problem: GraphProblem): HTMLElement;
}

const MARK_TEXT: Record<string, string> = { added: "added by the pass", removed: "removed by the pass", rewired: "changed by the pass (inputs or users rewired)", swapped: "its module swapped by the pass" };

function nodeLink(ctx: PanelContext, name: string): HTMLElement {
  const link = el("a", { "data-node": name }, name);
  link.addEventListener("click", () => {
    const node = ctx.model.nodes.get(name);
    if (node) ctx.focusNode(node);
  });
  return link;
}

function row(table: HTMLElement, key: string, value: string | Node | Node[]): void {
  const tr = el("tr");
  const td = el("td");
  if (typeof value === "string") td.textContent = value;
  else if (Array.isArray(value)) value.forEach((v, i) => td.append(...(i ? [document.createTextNode(", "), v] : [v])));
  else td.append(value);
  tr.append(el("td", {}, key), td);
  table.append(tr);
}

function sourceLink(ctx: PanelContext, span: Span, id: string): HTMLElement {
  const link = el("a", { id, title: span.file }, `${fileName(span.file)}:${lineLabel(documentCells(ctx.model.doc), span.file, span.line)}`);
  link.addEventListener("click", () => ctx.reveal(span));
  return link;
}

export function nodePanel(ctx: PanelContext, node: GNode): Node[] {
  const d = node.data;
  const out: Node[] = [el("h2", { id: "fx-selected" }, d.name)];
  if (ctx.paneTitle) out.push(el("p", { class: "fx-muted", id: "fx-selected-pane" }, ctx.paneTitle));
  const table = el("table", { id: "fx-node-table" });
  if (d.mark) row(table, "pass", el("span", { class: `fx-mark fx-mark-${d.mark}` }, MARK_TEXT[d.mark] ?? d.mark));
  row(table, "op", d.op);
  row(table, "target", d.target);
  if (d.args && d.args !== "()") row(table, "args", d.args);
  if (d.kwargs && d.kwargs !== "{}") row(table, "kwargs", d.kwargs);
  const inputs = ctx.model.edges.filter((e) => e.to === node).map((e) => nodeLink(ctx, e.from.data.name));
  if (inputs.length) row(table, "inputs", inputs);
  if (d.users.length) row(table, "users", d.users.map((u) => nodeLink(ctx, u)));
  if (d.shape) row(table, "shape", `${d.dtype ? d.dtype.replace("torch.", "") : ""}[${d.shape.join(", ")}]`);
  if (d.module_path) row(table, "module", d.module_type ? `${d.module_path} : ${d.module_type}` : d.module_path);
  if (d.swap) row(table, "module swap", el("span", { class: "fx-swap" }, d.swap));
  // a node the pass made or changed: its span is the pass line that did it
  if (d.span) row(table, d.mark === "added" || (d.mark === "rewired" && d.origin) ? "pass line" : "source", sourceLink(ctx, d.span, "fx-node-source"));
  if (d.origin) row(table, "model line", sourceLink(ctx, d.origin, "fx-node-origin"));
  out.push(table);
  const lines = d.span ? sourceLines(ctx.sources, d.span, documentCells(ctx.model.doc)) : null;
  if (lines) out.push(lines);
  if (node.problems.length) {
    out.push(el("h3", {}, "Problems"));
    const list = el("ul");
    for (const p of node.problems) list.append(el("li", { class: "problem-text" }, `${p.code} ${p.message}`));
    out.push(list);
  }
  return out;
}

/** `pos_drop float32[1, 197, 768]` per value (at most four, then how many more). */
function boundaryValues(ctx: PanelContext, values: BoundaryValue[]): Node[] {
  const shown: Node[] = values.slice(0, 4).map((v) => {
    const span = el("span", { class: "fx-boundary" });
    span.append(nodeLink(ctx, v.node.data.name), document.createTextNode(` ${v.shape}`));
    return span;
  });
  if (values.length > 4) shown.push(document.createTextNode(`and ${values.length - 4} more`));
  return shown;
}

export function groupPanel(ctx: PanelContext, group: Group): Node[] {
  const out: Node[] = [el("h2", { id: "fx-selected" }, group.path)];
  const table = el("table");
  if (group.type) row(table, "module", group.type);
  const defined = definedAt(ctx.model, group);
  if (defined) row(table, "defined at", sourceLink(ctx, { ...defined, end_line: defined.line, col: 0, end_col: 0 }, "fx-group-defined"));
  row(table, "nodes", String(group.nodeCount));
  const ops = opCounts(ctx.model, group);
  if (ops) row(table, "by op", ops);
  const { inputs, outputs } = boundary(ctx.model, group);
  if (inputs.length) row(table, "inputs", boundaryValues(ctx, inputs));
  if (outputs.length) row(table, "outputs", boundaryValues(ctx, outputs));
  const same = sameSiblings(ctx.model, group);
  if (same.length) row(table, "same as", el("span", { id: "fx-group-same" }, groupList(same)));
  if (group.problemCount) row(table, "problems", String(group.problemCount));
  out.push(table);
  const toggle = el("button", { id: "fx-toggle-group" }, group.expanded ? "Collapse" : "Expand");
  toggle.addEventListener("click", () => ctx.toggle(group));
  out.push(toggle);
  // problems in library code this module ran, attached to it
  const attached = (ctx.model.doc.problems ?? []).filter((p) => problemPlace(ctx.model, p).group === group);
  if (attached.length) {
    out.push(el("h3", {}, "Problems"));
    const list = el("ul", { id: "fx-group-problems" });
    for (const p of attached) list.append(el("li", { class: "problem-text" }, problemText(p)));
    out.push(list);
  }
  return out;
}

/** The graph, how to use the view, and every problem (those not on the graph said so). */
export function summaryPanel(ctx: PanelContext): Node[] {
  const doc = ctx.model.doc;
  const out: Node[] = [el("h2", {}, doc.name)];
  if (doc.verdict) out.push(el("p", { class: "fx-muted" }, doc.verdict));
  out.push(el("p", { class: "note" }, "Click a module to expand it, a node to see it and its source line. Drag to pan, wheel to zoom, / to search (/…/ for a regular expression)."));
  const problems = doc.problems ?? [];
  if (problems.length) {
    out.push(el("h3", {}, `Problems (${problems.length})`));
    const list = el("ul", { id: "fx-problems" });
    for (const problem of problems) {
      const li = el("li", { class: "problem-text" });
      li.append(ctx.problemLink(problem));
      if (!isMarked(ctx.model, problem)) li.append(el("span", { class: "fx-muted" }, " (not on the graph)"));
      list.append(li);
    }
    out.push(list);
  }
  return out;
}

/** The generated code, folded. */
export function codePanel(code: string): HTMLElement {
  const details = el("details", { id: "fx-code" });
  details.append(el("summary", {}, "Generated code"));
  const pre = el("pre", { id: "code" });
  pre.append(el("code", {}, code));
  details.append(pre);
  return details;
}
