// Where a notebook's cells are in the one Python source the server analyses of it (as
// fxls/project/notebooks.py's notebook_source makes it): a first line of its own (the
// prelude), then each Python code cell in order, each from a line of its own, its lines
// kept line for line. The graph view names a notebook's lines in that source; the editor
// shows them in cells.

export interface NotebookCellText {
  /** a Python code cell (analysed); markdown, raw and other languages' cells are not */
  python: boolean;
  text: string;
}

export interface CellLine {
  /** the cell's index among all cells */
  cell: number;
  /** 0-based, in the cell */
  line: number;
}

/** The source's 0-based first line of each cell (undefined for a cell not analysed). */
export function firstLines(cells: readonly NotebookCellText[]): (number | undefined)[] {
  let line = 1;
  return cells.map(({ python, text }) => {
    if (!python) return undefined;
    const first = line;
    line += lineCount(text);
    return first;
  });
}

/** The lines a cell takes in the source: its text's, the last one ended. */
function lineCount(text: string): number {
  const breaks = text.match(/\r\n|\r|\n/g)?.length ?? 0;
  return /[\r\n]$/.test(text) ? breaks : breaks + 1;
}

/** The source's 0-based `line` -> its cell and the line in it (undefined: the prelude, or
 * past the last cell). */
export function toCell(cells: readonly NotebookCellText[], line: number): CellLine | undefined {
  const starts = firstLines(cells);
  for (let cell = cells.length - 1; cell >= 0; cell--) {
    const first = starts[cell];
    if (first === undefined || line < first) continue;
    return line - first < lineCount(cells[cell].text) ? { cell, line: line - first } : undefined;
  }
  return undefined;
}

/** A cell's 0-based `line` -> the source's line (undefined for a cell not analysed). */
export function toSource(cells: readonly NotebookCellText[], cell: number, line: number): number | undefined {
  const first = firstLines(cells)[cell];
  return first === undefined ? undefined : first + line;
}
