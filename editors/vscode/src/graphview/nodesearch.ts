// The search box's query and its results: a substring (case-insensitive) by default, a
// regular expression when written `/.../` (case-insensitive; flags after the closing slash
// replace that: `/Linear/u` is case-sensitive), matched against each node's name, op and target. Results are
// grouped by the module group that holds them, in graph order, each with its line.
import { el } from "./dom";
import { nodeSubtitle } from "./layout";
import { GNode, GraphModel, Group, fileName } from "./model";

export interface SearchResult {
  nodes: GNode[];
  /** why the query matches nothing: a regular expression that does not compile */
  error: string | null;
  regex: boolean;
}

const REGEX = /^\/(.+)\/([a-z]*)$/s;

/** What `query` tests a text with, or why it cannot. */
export function compileQuery(query: string): { test: (text: string) => boolean; regex: boolean } | { error: string } {
  const q = query.trim();
  const written = REGEX.exec(q);
  if (!written) {
    const lower = q.toLowerCase();
    return { test: (text) => text.toLowerCase().includes(lower), regex: false };
  }
  const [, source, flags] = written;
  try {
    // `g` and `y` would make `test` remember where it stopped
    const pattern = new RegExp(source, flags ? flags.replace(/[gy]/g, "") : "i");
    return { test: (text) => pattern.test(text), regex: true };
  } catch (error) {
    return { error: `bad regular expression: ${error instanceof Error ? error.message : String(error)}` };
  }
}

/** The nodes `query` matches (by name, op or target), in graph order. */
export function findNodes(model: GraphModel, query: string): SearchResult {
  if (!query.trim()) return { nodes: [], error: null, regex: false };
  const compiled = compileQuery(query);
  if ("error" in compiled) return { nodes: [], error: compiled.error, regex: true };
  const nodes: GNode[] = [];
  for (const node of model.nodes.values()) {
    const { name, op, target } = node.data;
    if (compiled.test(name) || compiled.test(op) || compiled.test(target)) nodes.push(node);
  }
  return { nodes, error: null, regex: compiled.regex };
}

export interface ModuleMatches {
  group: Group;
  nodes: GNode[];
}

/** `nodes` by the group that holds each, groups in the order of their first match. */
export function byModule(nodes: GNode[]): ModuleMatches[] {
  const groups = new Map<Group, GNode[]>();
  for (const node of nodes) {
    const list = groups.get(node.parent);
    if (list) list.push(node);
    else groups.set(node.parent, [node]);
  }
  return [...groups].map(([group, found]) => ({ group, nodes: found }));
}

/** Results shown in the panel at most (the count says how many there are). */
const SHOWN = 400;

function moduleLabel(group: Group): string {
  return group.path || "(top level)";
}

/** The results as a list of modules, `blocks.3.attn (4)`, each listing its matches with
 * their line; `pick` goes to a node; `current` (the selected node) is marked. */
export function resultsList(nodes: GNode[], pick: (node: GNode) => void, current: GNode | null): HTMLElement {
  const list = el("div", { id: "fx-matches", class: "fx-matches" });
  let shown = 0;
  for (const { group, nodes: found } of byModule(nodes)) {
    if (shown >= SHOWN) break;
    const section = el("details", { class: "fx-match-module", open: "", "data-module": group.path });
    const type = group.type ? group.type.slice(group.type.lastIndexOf(".") + 1) : "";
    const summary = el("summary", { title: group.type ? `${moduleLabel(group)} : ${group.type}` : moduleLabel(group) });
    summary.append(el("span", { class: "fx-match-path" }, `${moduleLabel(group)} (${found.length})`));
    if (type) summary.append(el("span", { class: "fx-muted" }, ` ${type}`));
    section.append(summary);
    const items = el("ul");
    for (const node of found.slice(0, SHOWN - shown)) {
      const span = node.data.span;
      const where = span ? `${fileName(span.file)}:${span.line}` : "no source line";
      const li = el("li", { class: node === current ? "current" : "", title: `${node.data.module_path ?? moduleLabel(group)} · ${span ? `${span.file}:${span.line}` : where}` });
      const link = el("a", { "data-node": node.data.name }, node.data.name);
      link.addEventListener("click", () => pick(node));
      li.append(link, el("span", { class: "fx-muted" }, ` ${nodeSubtitle(node)} · ${where}`));
      items.append(li);
      shown++;
    }
    section.append(items);
    list.append(section);
  }
  if (shown < nodes.length) list.append(el("p", { class: "fx-muted" }, `${nodes.length - shown} more not listed: narrow the search`));
  return list;
}
