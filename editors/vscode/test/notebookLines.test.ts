import { test } from "node:test";
import assert from "node:assert/strict";
import { firstLines, toCell, toSource } from "../src/notebookLines";

// as fxls/project/notebooks.py lays them out (its notebook_source gives these cells the
// first lines 1, 3, 4, 5): the prelude on line 0, each code cell from a line of its own, a
// cell without a final line break ended
const cells = [
  { python: false, text: "# Title" },
  { python: true, text: "import torch\nx = 1" },
  { python: true, text: "y = 2\n" },
  { python: false, text: "raw" },
  { python: true, text: "" },
  { python: true, text: "a\r\nb\rc\n" },
];

test("each analysed cell starts on its own line after the prelude", () => {
  assert.deepEqual(firstLines(cells), [undefined, 1, 3, undefined, 4, 5]);
});

test("a line of the source is a line of its cell, and back", () => {
  assert.equal(toCell(cells, 0), undefined, "the prelude");
  assert.deepEqual(toCell(cells, 2), { cell: 1, line: 1 });
  assert.deepEqual(toCell(cells, 3), { cell: 2, line: 0 });
  assert.deepEqual(toCell(cells, 4), { cell: 4, line: 0 });
  assert.deepEqual(toCell(cells, 7), { cell: 5, line: 2 });
  assert.equal(toCell(cells, 8), undefined, "past the last cell");
  assert.equal(toSource(cells, 5, 2), 7);
  assert.equal(toSource(cells, 0, 0), undefined);
});
