// `fxls.*` settings -> what the server reads (initializationOptions and
// workspace/didChangeConfiguration). The server accepts the nested form under "fxls".

export interface ServerSettings {
  trace: { onSave: boolean; onChange: boolean; timeout: number; mode?: "eval" | "train" | "both" };
  python?: string;
  diagnostics: { select: string[]; ignore: string[] };
  inlayHints: { shapes: boolean };
  worker: { learnLibraries: boolean };
  /** user settings only (declared `"scope": "machine"`): a repository cannot widen the sandbox */
  allowWrite: string[];
  allowNetwork: boolean;
  /** the tracers the code must pass; absent: the project's, else inferred from the code */
  targets?: string[];
}

export const DEFAULTS: ServerSettings = {
  trace: { onSave: true, onChange: false, timeout: 30 },
  diagnostics: { select: [], ignore: [] },
  inlayHints: { shapes: true },
  worker: { learnLibraries: true },
  allowWrite: [],
  allowNetwork: false,
};

/** Reads one setting below the `fxls` section (e.g. "trace.onSave"); undefined when unset. */
export type SettingReader = (key: string) => unknown;

function bool(value: unknown, fallback: boolean): boolean {
  return typeof value === "boolean" ? value : fallback;
}

function positiveNumber(value: unknown, fallback: number): number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : fallback;
}

function codes(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return value.filter((item): item is string => typeof item === "string").map((s) => s.trim()).filter(Boolean);
}

export function serverSettings(read: SettingReader, resolvePath: (p: string) => string = (p) => p): ServerSettings {
  const settings: ServerSettings = {
    trace: {
      onSave: bool(read("trace.onSave"), DEFAULTS.trace.onSave),
      onChange: bool(read("trace.onChange"), DEFAULTS.trace.onChange),
      timeout: positiveNumber(read("trace.timeout"), DEFAULTS.trace.timeout),
    },
    diagnostics: { select: codes(read("diagnostics.select")), ignore: codes(read("diagnostics.ignore")) },
    inlayHints: { shapes: bool(read("inlayHints.shapes"), DEFAULTS.inlayHints.shapes) },
    worker: { learnLibraries: bool(read("worker.learnLibraries"), DEFAULTS.worker.learnLibraries) },
    allowWrite: codes(read("allowWrite")).map(resolvePath),
    allowNetwork: bool(read("allowNetwork"), DEFAULTS.allowNetwork),
  };
  const mode = read("trace.mode");
  if (mode === "eval" || mode === "train" || mode === "both") settings.trace.mode = mode;
  const targets = codes(read("targets"));
  if (targets.length) settings.targets = targets;
  const python = read("python");
  if (typeof python === "string" && python.trim()) settings.python = resolvePath(python.trim());
  return settings;
}

/** initializationOptions for the server. */
export function initializationOptions(settings: ServerSettings): { fxls: ServerSettings } {
  return { fxls: settings };
}

/** `workspace/didChangeConfiguration` params. */
export function didChangeConfigurationParams(settings: ServerSettings): { settings: { fxls: ServerSettings } } {
  return { settings: { fxls: settings } };
}

export type ConfigChangeAction = "restart" | "push" | "none";

/**
 * What a settings change needs: a new interpreter means a new server process; every other
 * `fxls.*` setting is pushed to the running server, which re-traces open files.
 */
export function configChangeAction(affects: (section: string) => boolean): ConfigChangeAction {
  if (affects("fxls.interpreter")) return "restart";
  if (affects("fxls")) return "push";
  return "none";
}
