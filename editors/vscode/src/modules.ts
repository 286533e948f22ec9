// Which nn.Module the user means: the class enclosing the cursor.

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
  className: string;
}

/**
 * Arguments of `fxls.showGraph` as a code lens sends them: `[uri, className, format?]`.
 * Undefined for anything else (e.g. a call from the command palette).
 */
export function targetFromArgs(args: readonly unknown[]): GraphTarget | undefined {
  const [uri, className] = args;
  if (typeof uri === "string" && uri && typeof className === "string" && className) {
    return { uri, className };
  }
  return undefined;
}

/** Filters server-declared commands that the extension implements itself. */
export function withoutCommands<T extends { commands?: string[] }>(options: T, owned: readonly string[]): T {
  if (!options || !Array.isArray(options.commands)) return options;
  return { ...options, commands: options.commands.filter((c) => !owned.includes(c)) };
}
