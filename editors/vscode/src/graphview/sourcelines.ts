// The source lines around a node, from the document's `sources` (file -> line number ->
// text, written by the CLI for the lines near each node): the page can show the code
// without an editor.
import { el } from "./dom";
import { GraphDocument, Span } from "./model";

export type Sources = Record<string, Record<string, string>>;

/** Lines shown before and after the node's own lines. */
const AROUND = 2;
/** A node made by a long statement shows its first lines at most. */
const OWN_LINES = 6;

export function documentSources(doc: GraphDocument): Sources | null {
  const sources = (doc as GraphDocument & { sources?: unknown }).sources;
  return sources && typeof sources === "object" ? (sources as Sources) : null;
}

/** The lines around `span` that the document has, the span's own lines marked; null when
 * it has none of them. */
export function sourceLines(sources: Sources | null, span: Span): HTMLElement | null {
  const lines = sources?.[span.file];
  if (!lines) return null;
  const last = Math.min(span.end_line, span.line + OWN_LINES - 1);
  const numbers: number[] = [];
  for (let n = span.line - AROUND; n <= last + AROUND; n++) if (typeof lines[String(n)] === "string") numbers.push(n);
  if (!numbers.includes(span.line)) return null;
  const width = String(numbers[numbers.length - 1]).length;
  // the lines' common indentation is dropped: the panel is narrow
  const indent = Math.min(...numbers.map((n) => lines[String(n)]).filter((t) => t.trim()).map((t) => t.length - t.trimStart().length));
  const pre = el("pre", { class: "fx-source-lines", id: "fx-source-lines" });
  for (const n of numbers) {
    const own = n >= span.line && n <= last;
    const row = el("span", { class: own ? "line here" : "line", "data-line": String(n) });
    row.append(el("span", { class: "number" }, String(n).padStart(width)), el("span", { class: "code" }, ` ${lines[String(n)].slice(Number.isFinite(indent) ? indent : 0)}`));
    pre.append(row);
  }
  return pre;
}
