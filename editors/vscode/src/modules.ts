// Which nn.Module the user means: the class enclosing the cursor.
import { TargetGraph, isTargetGraph } from "./graphSwitch";

const CLASS_RE = /^class\s+([A-Za-z_]\w*)/;

/**
 * The class whose body holds `line` (0-based): searching upward for `^class (\w+)` at
 * column 0. Nested or indented classes are not top-level modules and are skipped.
 */
export function enclosingClass(lines: readonly string[], line: number): string | undefined {
  for (let i = Math.min(line, lines.length - 1); i >= 0; i--) {
    const match = CLASS_RE.exec(lines[i]);
    if (match) return match[1];
  }
  return undefined;
}

/** All top-level class names of a file, in order. */
export function classNames(text: string): string[] {
  const names: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    const match = CLASS_RE.exec(line);
    if (match) names.push(match[1]);
  }
  return names;
}

export interface GraphTarget {
  uri: string;
  /** a module's class name, or a pass's name (with `format: "pass"`) */
  className: string;
  /** `pass`: the pass's before/after view instead of a module's graph */
  format?: "pass";
  /** a module's graph that torch.export or torch.compile made, instead of its FX graph */
  target?: TargetGraph;
}

/** `fxls.showGraph`'s format of a pass's before/after view. */
export const PASS_FORMAT = "pass";

/**
 * Arguments of `fxls.showGraph` as a code lens sends them: `[uri, className, format?]` over
 * a module, `[uri, passName, "pass"]` over an FX pass; as the server takes them, a module's
 * `[uri, className, format, target]` asks for the graph `export` or `compile` made of it.
 * Undefined for anything else (e.g. a call from the command palette).
 */
export function targetFromArgs(args: readonly unknown[]): GraphTarget | undefined {
  const [uri, className, format, target] = args;
  if (typeof uri === "string" && uri && typeof className === "string" && className) {
    if (format === PASS_FORMAT) return { uri, className, format: PASS_FORMAT };
    return isTargetGraph(target) ? { uri, className, target } : { uri, className };
  }
  return undefined;
}

const DEFINITION_RES = [/^class\s+([A-Za-z_]\w*)/, /^(?:async\s+)?def\s+([A-Za-z_]\w*)/, /^([A-Za-z_]\w*)\s*=[^=]/];

/**
 * The top-level definition (`class X`, `def X` or `X = ...` at column 0) whose body holds
 * `line` (0-based): an FX pass may be any of them.
 */
export function enclosingDefinition(lines: readonly string[], line: number): string | undefined {
  for (let i = Math.min(line, lines.length - 1); i >= 0; i--) {
    for (const re of DEFINITION_RES) {
      const match = re.exec(lines[i]);
      if (match) return match[1];
    }
  }
  return undefined;
}

/** Filters server-declared commands that the extension implements itself. */
export function withoutCommands<T extends { commands?: string[] }>(options: T, owned: readonly string[]): T {
  if (!options || !Array.isArray(options.commands)) return options;
  return { ...options, commands: options.commands.filter((c) => !owned.includes(c)) };
}
