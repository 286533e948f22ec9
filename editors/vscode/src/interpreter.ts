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

/** `fxls.interpreter` as seen from one workspace folder (its effective value there). */
export interface FolderInterpreterSetting {
  /** the folder's path (what `${workspaceFolder}` means there) */
  folder: string;
  /** `getConfiguration("fxls", folder).get("interpreter")`: user, workspace and folder merged */
  value?: string | null;
}

export interface InterpreterSettingChoice {
  setting?: string;
  /** the folder whose value it is: `${workspaceFolder}` expands to it */
  folder?: string;
}

/**
 * Which `fxls.interpreter` value a window's server uses. VS Code gives a setting made in a
 * folder's `.vscode/settings.json` only to reads scoped to that folder, so the extension
 * reads it per folder: the folder of the Python file that started the server (or of the
 * active editor) first, then every other folder in order, then the value without a folder
 * (user or workspace settings, also in a window without folders). A folder that sets no
 * value of its own has the user/workspace value as its effective one, so a folder setting
 * anywhere is never lost to `python3`.
 */
export function interpreterSettingFor(
  folders: FolderInterpreterSetting[],
  windowValue: string | null | undefined,
  preferredFolder?: string,
): InterpreterSettingChoice {
  const usable = (value: string | null | undefined): value is string => typeof value === "string" && value.trim() !== "";
  const ordered = [
    ...folders.filter((f) => f.folder === preferredFolder),
    ...folders.filter((f) => f.folder !== preferredFolder),
  ];
  for (const entry of ordered) {
    if (usable(entry.value)) return { setting: entry.value, folder: entry.folder };
  }
  if (usable(windowValue)) return { setting: windowValue, folder: ordered[0]?.folder };
  return { folder: ordered[0]?.folder };
}

/** The folder (of `folders`, by path) that holds `file`: the innermost one. */
export function folderOf(file: string, folders: string[]): string | undefined {
  const inside = folders.filter((folder) => file === folder || file.startsWith(folder.endsWith("/") ? folder : `${folder}/`));
  return inside.sort((a, b) => b.length - a.length)[0];
}

/**
 * The interpreter that runs a workspace folder's code, as the server asks for it per folder
 * (`workspace/configuration` with the folder's scope, `fxls.python`): the folder's
 * `fxls.python`, else its `fxls.interpreter` (the one window runs one server, but each
 * folder's files are traced under the folder's own interpreter), else none (the window's).
 */
export function folderPython(python: unknown, interpreter: unknown, resolve: (p: string) => string): string | undefined {
  for (const value of [python, interpreter]) {
    if (typeof value === "string" && value.trim()) return resolve(value.trim());
  }
  return undefined;
}
