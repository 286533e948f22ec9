// The text drawn on the graph's boxes, fitted to them: a node's name relative to the group
// it is drawn in (`vit_blocks_0_attn_qkv` inside `attn` is `qkv`), what it calls in a word,
// a group's `label : Class`, each cut in the middle when it is still too long (the end
// keeps what tells siblings apart: `…attention_11`). Whole names are in the tooltip and
// the side panel. Sizes here and font sizes in style.ts go together.
import type { GNode, Group } from "./model";

/** Font sizes of the graph's text (px), as style.ts sets them. */
export const TITLE_PX = 13;
export const DETAIL_PX = 11;
export const EDGE_LABEL_PX = 11;

/** A monospace glyph's advance per px of font size (DejaVu Sans Mono, Menlo 0.60,
 * Consolas 0.55), with a little to spare. */
const ADVANCE = 0.62;

/** The drawn width of `text` in the graph's monospace font at `px`. */
export function textWidth(text: string, px: number): number {
  return [...text].length * px * ADVANCE;
}

/** How many characters fit in `width` px at `px`. */
export function charsIn(width: number, px: number): number {
  return Math.floor(width / (px * ADVANCE));
}

/** `text` cut in the middle to at most `max` characters; the end keeps more (indices and
 * the last name part tell repeated nodes apart). */
export function fitMiddle(text: string, max: number): string {
  const chars = [...text];
  if (chars.length <= max) return text;
  if (max <= 1) return "…";
  const tail = Math.ceil((max - 1) * 0.6);
  const head = max - 1 - tail;
  return chars.slice(0, head).join("") + "…" + chars.slice(chars.length - tail).join("");
}

/** Node boxes' widths (px) and the room their text has (a box's text starts 8 px in). */
export const NODE_MIN_WIDTH = 80;
export const NODE_MAX_WIDTH = 264;
export const NODE_TEXT_PAD = 20;
const TITLE_CHARS = charsIn(NODE_MAX_WIDTH - NODE_TEXT_PAD, TITLE_PX);
const DETAIL_CHARS = charsIn(NODE_MAX_WIDTH - NODE_TEXT_PAD, DETAIL_PX);

/** A group path as FX writes it in node names (`blocks.0` -> `blocks_0`). */
function nameOfPath(path: string): string {
  return path.replace(/[^A-Za-z0-9_]/g, "_");
}

/** `name` without the prefix its group's path gives it, when there is something left. */
function relative(name: string, group: Group | null, separator: string): string {
  const path = group?.path;
  if (!path) return name;
  const prefix = (separator === "_" ? nameOfPath(path) : path) + separator;
  return name.startsWith(prefix) && name.length > prefix.length ? name.slice(prefix.length) : name;
}

/** The first line of a node's box: its name in its group, fitted (a Sequential's `0` says
 * little on its own: `downsample_0`). */
export function nodeTitle(node: GNode): string {
  let name = relative(node.data.name, node.parent, "_");
  const path = node.parent?.path ?? "";
  if (name !== node.data.name && /^\d/.test(name)) name = `${nameOfPath(path.slice(path.lastIndexOf(".") + 1))}_${name}`;
  return fitMiddle(name, TITLE_CHARS);
}

/** What a node calls, in a word: a module call's class (`Linear`), a function's or
 * method's name (`scaled_dot_product_attention`, `view`), an ATen op without its default
 * overload (`aten.addmm`), an attribute's path in its group. */
function callText(node: GNode): string {
  const { op, target, module_type: type } = node.data;
  if (op === "placeholder" || op === "output") return op;
  if (op === "call_module") return type ? type.slice(type.lastIndexOf(".") + 1) : relative(target, node.parent, ".");
  if (op === "get_attr") return relative(target, node.parent, ".");
  const builtin = /^<built-in (?:function|method) (\w+)[^>]*>$/.exec(target);
  if (builtin) return builtin[1];
  const aten = /(?:^|\.)aten\.(\w+)(?:\.(\w+))?$/.exec(target);
  if (aten) return aten[2] && aten[2] !== "default" ? `aten.${aten[1]}.${aten[2]}` : `aten.${aten[1]}`;
  return target.slice(target.lastIndexOf(".") + 1) || target;
}

/** The second line of a node's box: what it calls (a pass's swap: what it swapped), and
 * how many bookkeeping nodes are folded into it (`reshape · +4`). */
export function nodeSubtitle(node: GNode): string {
  const folded = node.folded.length ? ` · +${node.folded.length}` : "";
  const text = node.data.swap ?? callText(node);
  return fitMiddle(text, DETAIL_CHARS - [...folded].length) + folded;
}

/** The node's tooltip: what its box shortened or folded away, and its shape (an edge label
 * that found no free place is not drawn); "" for a node with nothing of that. */
export function nodeTooltip(node: GNode): string {
  const d = node.data;
  const lines: string[] = [];
  if (nodeTitle(node) !== d.name || node.folded.length || d.shape) lines.push(`${d.name}: ${d.op} ${d.target}${d.shape ? ` [${d.shape.join(", ")}]` : ""}`);
  if (node.folded.length) {
    lines.push(`shape bookkeeping folded in (${node.folded.length}):`);
    for (const f of node.folded) lines.push(`  ${f.data.name} = ${f.data.op === "call_method" ? "." : ""}${callText(f)}${f.data.args}`);
  }
  for (const p of node.problems) lines.push(`${p.code} ${p.message}`);
  return lines.join("\n");
}

const GROUP_TITLE_CHARS = 36;

/** `blocks : Sequential`: the class by its own name (its module in the tooltip and
 * panel), the label cut in the middle when the two are too long together. */
export function groupTitle(group: Group): string {
  const type = group.type ? ` : ${group.type.slice(group.type.lastIndexOf(".") + 1)}` : "";
  const room = Math.max(10, GROUP_TITLE_CHARS - [...type].length);
  return fitMiddle(fitMiddle(group.label, room) + type, GROUP_TITLE_CHARS);
}

/** An open group's title on its frame, as the view draws it. */
export function frameTitle(group: Group): string {
  return `▾ ${groupTitle(group)} (${group.nodeCount})`;
}

/** A closed group's second line, as the view draws it. */
export function groupDetail(group: Group): string {
  const changed = group.changeCount ? ` · ${group.changeCount} changed` : "";
  const problems = group.problemCount ? ` · ${group.problemCount} problem${group.problemCount === 1 ? "" : "s"}` : "";
  return `${group.nodeCount} nodes${changed}${problems}`;
}
