// Which graphs of a module its graph panel offers and which one it shows: the FX graph, or
// the graph torch.export or torch.compile made of the same module (`fxls.showGraph` with a
// target). The server's answer names the targets that made a graph (`graphs`); the page's
// switch offers those, and a choice is the next request of the same panel.

/** The targets whose graph of a module the server draws in place of its FX graph. */
export const TARGET_GRAPHS = ["export", "compile"] as const;
export type TargetGraph = (typeof TARGET_GRAPHS)[number];

/** A graph of a module: its FX graph, or a target's. */
export type GraphChoice = "fx" | TargetGraph;

export const GRAPH_LABELS: Record<GraphChoice, string> = {
  fx: "FX graph",
  export: "export graph",
  compile: "compile graphs",
};

export function isTargetGraph(value: unknown): value is TargetGraph {
  return typeof value === "string" && (TARGET_GRAPHS as readonly string[]).includes(value);
}

/** The module's graphs to offer: its FX graph, then each target the server's `graphs` names
 * (in a fixed order; anything else ignored, an older server's missing list is none). */
export function offeredGraphs(graphs: unknown): GraphChoice[] {
  const named = Array.isArray(graphs) ? graphs : [];
  return ["fx", ...TARGET_GRAPHS.filter((target) => named.includes(target))];
}

/** The graphs the command palette asks between before any answer: the FX graph, and those of
 * the targets the file was analysed for (`fxls/analysisDone`'s `targets`). */
export function graphsToPick(analysedFor: readonly string[]): GraphChoice[] {
  return ["fx", ...TARGET_GRAPHS.filter((target) => analysedFor.includes(target))];
}

/** What the page's switch shows: one button per offered graph, the shown one pressed. */
export interface GraphSwitch {
  shown: GraphChoice;
  choices: { graph: GraphChoice; label: string }[];
}

/** `fxls.showGraph`'s arguments for a module's graph in the graph view's format. */
export function showGraphArguments(uri: string, className: string, shown: GraphChoice): unknown[] {
  return shown === "fx" ? [uri, className, "json"] : [uri, className, "json", shown];
}

/** The message the page posts when a button of the switch is clicked. */
export const CHOOSE_GRAPH = "chooseGraph";

/**
 * A module panel's graphs: the one shown (and asked for next) and those the last answer
 * offered. The extension asks with `request`, gives every answer to `answered` and every
 * failure to `failed`, and draws `switch` in the page.
 */
export class GraphSelection {
  private offered: GraphChoice[] = ["fx"];

  constructor(public shown: GraphChoice = "fx") {}

  request(uri: string, className: string): unknown[] {
    return showGraphArguments(uri, className, this.shown);
  }

  /** The server's answer to `request`: the graphs it has of the module now. */
  answered(answer: { graphs?: unknown } | undefined): void {
    this.offered = offeredGraphs(answer?.graphs);
  }

  /** The shown target's graph could not be had (the module no longer makes one): whether
   * to ask again for its FX graph, which is then the shown one. */
  failed(): boolean {
    if (this.shown === "fx") return false;
    this.shown = "fx";
    this.offered = ["fx"];
    return true;
  }

  /** A message from the page: whether it chose another offered graph (then shown). */
  choose(message: unknown): boolean {
    const { type, graph } = (message ?? {}) as { type?: unknown; graph?: unknown };
    if (type !== CHOOSE_GRAPH || graph === this.shown) return false;
    const choice = this.offered.find((offered) => offered === graph);
    if (!choice) return false;
    this.shown = choice;
    return true;
  }

  /** The page's switch; none when the FX graph is all there is to show. */
  get switch(): GraphSwitch | undefined {
    if (this.offered.length < 2) return undefined;
    return { shown: this.shown, choices: this.offered.map((graph) => ({ graph, label: GRAPH_LABELS[graph] })) };
  }
}
