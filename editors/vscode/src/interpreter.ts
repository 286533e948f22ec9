// Which Python runs `fxls serve`. No `vscode` import: unit-tested with node --test.
//
// Order: the `fxls.interpreter` setting, else the Python extension's active environment
// (ms-python.python), else `python3` on PATH.

export type InterpreterSource = "setting" | "python-extension" | "default";

export interface Interpreter {
  path: string;
  source: InterpreterSource;
}

export const DEFAULT_INTERPRETER = "python3";

export interface VariableContext {
  workspaceFolder?: string;
  home?: string;
  env?: Record<string, string | undefined>;
}

/** Expands `${workspaceFolder}`, `${userHome}`, `${env:NAME}` and a leading `~`. */
export function resolveVariables(value: string, ctx: VariableContext): string {
  let out = value.trim();
  if (ctx.home && (out === "~" || out.startsWith("~/"))) {
    out = ctx.home + out.slice(1);
  }
  return out.replace(/\$\{(workspaceFolder|userHome|env:([A-Za-z_][A-Za-z0-9_]*))\}/g, (whole, name, envName) => {
    if (name === "workspaceFolder") return ctx.workspaceFolder ?? whole;
    if (name === "userHome") return ctx.home ?? whole;
    return ctx.env?.[envName] ?? "";
  });
}

export interface InterpreterInputs {
  /** value of `fxls.interpreter` */
  setting?: string | null;
  /** executable of the Python extension's active environment, when it has one */
  pythonExtension?: string | null;
}

export function chooseInterpreter(inputs: InterpreterInputs, ctx: VariableContext = {}): Interpreter {
  const setting = typeof inputs.setting === "string" ? resolveVariables(inputs.setting, ctx) : "";
  if (setting) return { path: setting, source: "setting" };
  const fromExtension = typeof inputs.pythonExtension === "string" ? inputs.pythonExtension.trim() : "";
  if (fromExtension) return { path: fromExtension, source: "python-extension" };
  return { path: DEFAULT_INTERPRETER, source: "default" };
}

/** Shapes of the ms-python.python `environments` API that we read. */
export interface ActiveEnvironmentPath {
  id?: string;
  path?: string;
}
export interface ResolvedEnvironment {
  executable?: { uri?: { fsPath?: string } | undefined; sysPrefix?: string } | undefined;
}

/**
 * The interpreter of the Python extension's active environment: the resolved executable when
 * the environment resolves, else the path it reported (which is the interpreter itself for
 * venvs and global installs, but an environment folder for e.g. a conda env without Python).
 */
export function pythonFromEnvironment(
  active: ActiveEnvironmentPath | undefined,
  resolved: ResolvedEnvironment | undefined,
): string | undefined {
  const executable = resolved?.executable?.uri?.fsPath;
  if (executable) return executable;
  if (resolved !== undefined && resolved.executable && !resolved.executable.uri) {
    // resolved, but the environment has no interpreter: nothing usable
    return undefined;
  }
  return active?.path || undefined;
}

export function describeInterpreter(interpreter: Interpreter): string {
  switch (interpreter.source) {
    case "setting":
      return `${interpreter.path} (from the fxls.interpreter setting)`;
    case "python-extension":
      return `${interpreter.path} (the Python extension's active environment)`;
    default:
      return `${interpreter.path} (default; set fxls.interpreter to choose another)`;
  }
}
