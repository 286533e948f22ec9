// Status bar text for the active file, from the client state and the file's fxls diagnostics.

export type ClientState = "starting" | "running" | "stopped" | "failed";

/** LSP / VS Code severities: 0 error, 1 warning, 2 information, 3 hint (vscode.DiagnosticSeverity). */
export interface SeverityCounts {
  error: number;
  warning: number;
  info: number;
  hint: number;
}

export function countSeverities(diagnostics: Iterable<{ severity?: number; source?: string }>, source = "fxls"): SeverityCounts {
  const counts: SeverityCounts = { error: 0, warning: 0, info: 0, hint: 0 };
  for (const d of diagnostics) {
    if (d.source !== undefined && d.source !== source) continue;
    switch (d.severity ?? 0) {
      case 0:
        counts.error++;
        break;
      case 1:
        counts.warning++;
        break;
      case 2:
        counts.info++;
        break;
      default:
        counts.hint++;
    }
  }
  return counts;
}

export interface StatusInput {
  client: ClientState;
  /** the active editor holds a Python file fxls handles */
  isPython: boolean;
  /** the server has published diagnostics for the file at least once */
  traced: boolean;
  /** a trace of the file was asked for (open/save) and has not reported yet */
  tracing?: boolean;
  counts: SeverityCounts;
  /** short name of the file, for the tooltip */
  fileName?: string;
  /** the tracers the server analysed the file for, and why */
  targets?: FileTargets;
  /** what is shown came from the server's result cache; the file's analysis still runs */
  cached?: boolean;
}

/** What `fxls/analysisDone` says of the tracers a file was analysed for (SPEC: Targets). */
export interface FileTargets {
  targets: string[];
  because?: string;
}

/** The targets in an `fxls/analysisDone`'s params; undefined when it has none (an older
 * server, or a report of a file the server could not analyse). */
export function targetsOf(params: unknown): FileTargets | undefined {
  const { targets, targetsBecause } = (params ?? {}) as { targets?: unknown; targetsBecause?: unknown };
  if (!Array.isArray(targets) || targets.length === 0 || !targets.every((t) => typeof t === "string")) return undefined;
  return { targets, because: typeof targetsBecause === "string" && targetsBecause ? targetsBecause : undefined };
}

/** Whether an `fxls/analysisDone` announces the result cache's report of the file (shown until
 * the fresh analysis' own `fxls/analysisDone`). */
export function fromCache(params: unknown): boolean {
  return (params as { cached?: unknown } | undefined)?.cached === true;
}

const CACHED_TOOLTIP = " From the result cache (the file, its imports, settings and environment are as when it was analysed); its analysis is running.";

/** Symbolic tracing alone is what fxls always checked: the text names other targets only. */
function targetsText(targets: FileTargets | undefined): string {
  if (!targets || (targets.targets.length === 1 && targets.targets[0] === "symbolic_trace")) return "";
  return ` · ${targets.targets.join(", ")}`;
}

function targetsTooltip(targets: FileTargets | undefined): string {
  if (!targets) return "";
  return ` Targets: ${targets.targets.join(", ")}${targets.because ? ` (${targets.because})` : ""}.`;
}

export type StatusAction = "showLogs" | "showProblems" | "showGraph" | "restart";

export interface Status {
  visible: boolean;
  text: string;
  tooltip: string;
  /** background: error / warning colours for broken states */
  level: "error" | "warning" | "none";
  action: StatusAction;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

export function statusFor(input: StatusInput): Status {
  const file = input.fileName ? ` in ${input.fileName}` : "";
  if (input.client === "failed") {
    return {
      visible: true,
      text: "$(error) fxls: stopped",
      tooltip: "The fxls server crashed repeatedly and was not restarted. Click to restart it.",
      level: "error",
      action: "restart",
    };
  }
  if (!input.isPython) {
    return { visible: false, text: "fxls", tooltip: "", level: "none", action: "showLogs" };
  }
  if (input.client === "stopped") {
    return { visible: true, text: "fxls: stopped", tooltip: "The fxls server is not running. Click for its logs.", level: "warning", action: "showLogs" };
  }
  if (input.client === "starting") {
    return { visible: true, text: "$(loading~spin) fxls: starting", tooltip: "Starting the fxls server…", level: "none", action: "showLogs" };
  }
  if (input.tracing) {
    return { visible: true, text: "$(loading~spin) fxls: tracing", tooltip: `Tracing the modules${file}…`, level: "none", action: "showLogs" };
  }
  if (!input.traced) {
    return { visible: true, text: "fxls: not traced", tooltip: `fxls has not traced${file || " this file"} yet: save it to trace.`, level: "none", action: "showLogs" };
  }
  const { error, warning, info, hint } = input.counts;
  const total = error + warning + info + hint;
  const targets = targetsText(input.targets) + (input.cached ? " (cached)" : "");
  const why = targetsTooltip(input.targets) + (input.cached ? CACHED_TOOLTIP : "");
  if (total === 0) {
    return { visible: true, text: `$(check) fxls: clean${targets}`, tooltip: `Every module${file} traces cleanly.${why} Click to show the FX graph.`, level: "none", action: "showGraph" };
  }
  const parts = [];
  if (error) parts.push(plural(error, "error"));
  if (warning) parts.push(plural(warning, "warning"));
  if (info) parts.push(plural(info, "info"));
  if (hint) parts.push(plural(hint, "hint"));
  return {
    visible: true,
    text: `${error ? "$(error)" : "$(warning)"} fxls: ${plural(total, "problem")}${targets}`,
    tooltip: `${parts.join(", ")}${file}.${why} Click to open the Problems view.`,
    level: "none",
    action: "showProblems",
  };
}
