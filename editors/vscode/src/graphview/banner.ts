// The banner above a graph with problems: how many there are and how many of them are
// marked on the graph (a problem inside library code may have no node of its own), with a
// link per problem that goes to it.
import { el } from "./dom";
import { GNode, GraphDocument, GraphModel, GraphProblem, Group, fileName } from "./model";

/** A problem as the document may carry it: how it was put on the graph, and the module
 * group it was attached to when no node was made at its line. */
export type PlacedProblem = GraphProblem & { attached?: string | null; group?: string | null };

/** Where a problem is on the graph: its nodes, else its group, else nowhere. */
export function problemPlace(model: GraphModel, problem: PlacedProblem): { nodes: GNode[]; group: Group | null } {
  const nodes = problem.nodes.map((name) => model.nodes.get(name)).filter((n): n is GNode => !!n);
  const group = !nodes.length && problem.group != null ? model.groups.get(problem.group) ?? null : null;
  return { nodes, group };
}

export function isMarked(model: GraphModel, problem: PlacedProblem): boolean {
  const { nodes, group } = problemPlace(model, problem);
  return nodes.length > 0 || group !== null;
}

/** Problems the banner names, before the rest are left to the side panel's list. */
const NAMED = 3;

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** `3 problems, 2 marked in red` / `1 problem marked in red` / `2 problems, none on the
 * graph`: the count says only what the graph shows. */
export function problemCount(model: GraphModel, problems: PlacedProblem[]): string {
  const marked = problems.filter((p) => isMarked(model, p)).length;
  if (marked === problems.length) return `${plural(problems.length, "problem")} marked in red`;
  if (marked === 0) return `${plural(problems.length, "problem")}, none on the graph`;
  return `${plural(problems.length, "problem")}, ${marked} marked in red`;
}

/** The banner, or null for a traced graph without problems. `link` makes a problem's
 * link; `more` shows every problem (the side panel's list). */
export function problemBanner(
  doc: GraphDocument,
  model: GraphModel,
  link: (problem: GraphProblem) => HTMLElement,
  more: () => void,
): HTMLElement | null {
  const problems: PlacedProblem[] = doc.problems ?? [];
  if (doc.status === "traced" && problems.length === 0) return null;
  const banner = el("div", { class: "fx-banner", id: "fx-banner" });
  const what = doc.status === "partial" ? "Partial graph: tracing could not follow the code everywhere." : doc.status === "traced" ? "" : `Graph ${doc.status}.`;
  banner.append(document.createTextNode(`${what} ${problemCount(model, problems)}`));
  // the marked ones first: a click on them shows where they are
  const named = [...problems.filter((p) => isMarked(model, p)), ...problems.filter((p) => !isMarked(model, p))].slice(0, NAMED);
  named.forEach((problem, i) => banner.append(document.createTextNode(i ? " · " : ": "), link(problem)));
  if (problems.length > named.length) {
    const rest = el("a", { class: "fx-problem-more", id: "fx-problem-more" }, `+${problems.length - named.length} more`);
    rest.addEventListener("click", more);
    banner.append(document.createTextNode(" · "), rest);
  }
  return banner;
}

/** A problem's text: code, file:line (a notebook's `file:cell 4:2`, the document's `where`)
 * and message. */
export function problemText(problem: GraphProblem): string {
  const where = (problem as GraphProblem & { where?: string }).where ?? problem.span?.line;
  const line = problem.span ? `${fileName(problem.span.file)}:${where} ` : "";
  return `${problem.code} ${line}${problem.message}`;
}
