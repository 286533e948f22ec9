// Shape bookkeeping: the nodes a traced model makes only to read and check sizes
// (`x.shape`, `x.size(0)`, `getitem` of those sizes, `eq` and `torch._assert` on them,
// export's `sym_size`). They are a fifth of a ViT's nodes and their edges cross the
// attention blocks, so the view folds each into the node that consumes it.
import type { GraphNodeData } from "./model";

/** Attributes of a tensor that describe its size, not its values. */
const SIZE_ATTRIBUTES = new Set(["shape", "ndim", "dtype", "device", "is_cuda", "layout"]);

/** Methods of a tensor that answer its size. */
const SIZE_METHODS = new Set(["size", "dim", "numel", "stride", "nelement", "ndimension", "get_device"]);

/** Calls that only read or check sizes, whatever their inputs (export's symbolic sizes and
 * its runtime checks). */
const SIZE_CALL = /(^|\.)(sym_size|sym_numel|sym_stride|sym_storage_offset|sym_constrain_range(_for_size)?|_assert_scalar|_assert_async)(\.\w+)?$/;

/** Calls that are bookkeeping when every input is: arithmetic, comparisons and indexing of
 * sizes, and the checks on them (`torch._assert`). A tensor-making call (`torch.zeros(n)`)
 * is not, even where shapes are unknown. */
const SIZE_ARITHMETIC = /^(operator|_operator|builtins|math)\.\w+$|^torch\.(_assert|_check\w*|sym_\w+)$|^_assert$/;

function readsSize(data: GraphNodeData): boolean {
  if (data.op === "call_method") return SIZE_METHODS.has(data.target);
  if (data.op !== "call_function") return false;
  if (SIZE_CALL.test(data.target)) return true;
  if (data.target !== "builtins.getattr" && !/getattr/.test(data.target)) return false;
  const attribute = /,\s*'?([A-Za-z_]\w*)'?\s*\)$/.exec(data.args)?.[1];
  return !!attribute && SIZE_ATTRIBUTES.has(attribute);
}

/** Whether a node may be folded at all: what a problem or a pass marks stays in sight. */
function foldable(data: GraphNodeData, problemNodes: Set<string>): boolean {
  return data.shape === null && !data.mark && !problemNodes.has(data.name);
}

/**
 * The bookkeeping nodes of a graph and the node each folds into: its first consumer (in
 * graph order) that is not bookkeeping itself, reached through its users; for a check
 * nobody consumes (`_assert(eq(getitem(x.shape, 2), 224))`), the consumer of what it
 * checks, else the tensor it measured (`x`). A node with neither stays shown.
 *
 * `nodes` in graph order (inputs before users); returns folded name -> consumer name.
 */
export function foldBookkeeping(nodes: GraphNodeData[], problemNodes: Set<string>): Map<string, string> {
  const inputs = new Map<string, string[]>(nodes.map((n) => [n.name, []]));
  for (const node of nodes) for (const user of node.users) inputs.get(user)?.push(node.name);
  const bookkeeping = new Set<string>();
  for (const node of nodes) {
    if (!foldable(node, problemNodes)) continue;
    const from = inputs.get(node.name) ?? [];
    const onSizes = from.length > 0 && from.every((name) => bookkeeping.has(name));
    const derived = onSizes && (node.op === "call_method" || (node.op === "call_function" && SIZE_ARITHMETIC.test(node.target)));
    if (readsSize(node) || derived) bookkeeping.add(node.name);
  }
  const index = new Map(nodes.map((n, i) => [n.name, i]));
  // forward, users after their inputs: walk the graph backwards
  const consumer = new Map<string, string | null>();
  for (let i = nodes.length - 1; i >= 0; i--) {
    const node = nodes[i];
    if (!bookkeeping.has(node.name)) continue;
    let best: string | null = null;
    for (const user of node.users) {
      const candidate = bookkeeping.has(user) ? consumer.get(user) ?? null : index.has(user) ? user : null;
      if (candidate !== null && (best === null || index.get(candidate)! < index.get(best)!)) best = candidate;
    }
    consumer.set(node.name, best);
  }
  const into = new Map<string, string>();
  for (const node of nodes) {
    if (!bookkeeping.has(node.name)) continue;
    let target = consumer.get(node.name) ?? null;
    for (const input of inputs.get(node.name) ?? []) {
      if (target !== null) break;
      target = bookkeeping.has(input) ? into.get(input) ?? null : input;
    }
    if (target !== null) into.set(node.name, target);
  }
  return into;
}
