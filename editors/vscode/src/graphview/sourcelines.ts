// The source lines around a node, from the document's `sources` (file -> line number ->
// text, written by the CLI for the lines near each node): the page can show the code
// without an editor.
import { el } from "./dom";
import { GraphDocument, Span } from "./model";

export type Sources = Record<string, Record<string, string>>;
/** A notebook's code cells (the document's `cells`): per notebook file, each code cell's
 * number (1-based among all its cells) and the line of the notebook's joined code it
 * starts at; spans count lines of that joined code. */
export type NotebookCells = Record<string, [number, number][]>;

/** Lines shown before and after the node's own lines. */
const AROUND = 2;
/** A node made by a long statement shows its first lines at most. */
const OWN_LINES = 6;

export function documentSources(doc: GraphDocument): Sources | null {
  const sources = (doc as GraphDocument & { sources?: unknown }).sources;
  return sources && typeof sources === "object" ? (sources as Sources) : null;
}

export function documentCells(doc: GraphDocument): NotebookCells | null {
  const cells = (doc as GraphDocument & { cells?: unknown }).cells;
  return cells && typeof cells === "object" ? (cells as NotebookCells) : null;
}

/** The code cell of `file` that holds `line` (null: not a notebook's line), and the
 * line after the cell's last one (Infinity for the last cell). */
function cellOf(cells: NotebookCells | null, file: string, line: number): { cell: number; first: number; next: number } | null {
  const list = cells?.[file];
  if (!list?.length) return null;
  let at = 0;
  while (at + 1 < list.length && list[at + 1][1] <= line) at++;
  const [cell, first] = list[at];
  return { cell, first: Math.min(first, line), next: at + 1 < list.length ? list[at + 1][1] : Infinity };
}

/** `12`, or for a notebook's line `cell 4:2` (as `fxls check` names it). */
export function lineLabel(cells: NotebookCells | null, file: string, line: number): string {
  const at = cellOf(cells, file, line);
  return at ? `cell ${at.cell}:${line - at.first + 1}` : String(line);
}

/** The lines around `span` that the document has, the span's own lines marked; null when
 * it has none of them. In a notebook only the lines of the span's cell, numbered in it. */
export function sourceLines(sources: Sources | null, span: Span, cells: NotebookCells | null = null): HTMLElement | null {
  const lines = sources?.[span.file];
  if (!lines) return null;
  const cell = cellOf(cells, span.file, span.line);
  const inCell = (n: number) => !cell || (n >= cell.first && n < cell.next);
  const shownAs = (n: number) => (cell ? n - cell.first + 1 : n);
  const last = Math.min(span.end_line, span.line + OWN_LINES - 1);
  const numbers: number[] = [];
  for (let n = span.line - AROUND; n <= last + AROUND; n++) if (typeof lines[String(n)] === "string" && inCell(n)) numbers.push(n);
  if (!numbers.includes(span.line)) return null;
  const width = String(shownAs(numbers[numbers.length - 1])).length;
  // the lines' common indentation is dropped: the panel is narrow
  const indent = Math.min(...numbers.map((n) => lines[String(n)]).filter((t) => t.trim()).map((t) => t.length - t.trimStart().length));
  const pre = el("pre", { class: "fx-source-lines", id: "fx-source-lines" });
  for (const n of numbers) {
    const own = n >= span.line && n <= last;
    const row = el("span", { class: own ? "line here" : "line", "data-line": String(n) });
    row.append(el("span", { class: "number" }, String(shownAs(n)).padStart(width)), el("span", { class: "code" }, ` ${lines[String(n)].slice(Number.isFinite(indent) ? indent : 0)}`));
    pre.append(row);
  }
  return pre;
}
