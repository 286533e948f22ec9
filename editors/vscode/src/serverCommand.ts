// The process that runs the language server: `<python> -E -P -u -m fxls serve` on stdio.

// -E: the server never imports from the environment's PYTHONPATH (a dev shell may point it
// into the workspace, whose sitecustomize.py would run before any fxls code); it stays in the
// environment for the worker, which keeps the workspace's folders for the sandboxed jobs.
// -P: nor from the working directory (the workspace). -u: PYTHONUNBUFFERED is ignored under -E.
export const SERVER_ARGS: readonly string[] = ["-E", "-P", "-u", "-m", "fxls", "serve"];

export interface ServerCommand {
  command: string;
  args: string[];
  options: { cwd?: string; env: Record<string, string> };
}

export interface ServerCommandInputs {
  interpreter: string;
  /** the first workspace folder, if any: the server's working directory */
  cwd?: string;
  /** the extension host's environment (process.env) */
  baseEnv?: Record<string, string | undefined>;
}

export function buildServerCommand(inputs: ServerCommandInputs): ServerCommand {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(inputs.baseEnv ?? {})) {
    if (value !== undefined) env[key] = value;
  }
  // The protocol runs on stdout: never let Python buffer or re-encode it.
  env.PYTHONUNBUFFERED = "1";
  env.PYTHONIOENCODING = "utf-8";
  // A user's PYTHONSTARTUP or PYTHONINSPECT would talk on the protocol stream.
  delete env.PYTHONSTARTUP;
  delete env.PYTHONINSPECT;
  const options: ServerCommand["options"] = { env };
  if (inputs.cwd) options.cwd = inputs.cwd;
  return { command: inputs.interpreter, args: [...SERVER_ARGS], options };
}

/** The command line, for logs and error messages. */
export function formatCommandLine(command: ServerCommand): string {
  const quote = (part: string) => (/^[\w@%+=:,./-]+$/.test(part) ? part : `'${part.replace(/'/g, `'\\''`)}'`);
  return [command.command, ...command.args].map(quote).join(" ");
}

/** Hint for a server that exits at once: the usual cause is fxls missing from the interpreter. */
export function startFailureHint(interpreter: string): string {
  return (
    `The fxls server (${interpreter} -m fxls serve) stopped. ` +
    `Is fxls installed in that interpreter? Install it (pip install fxls) or set ` +
    `"fxls.interpreter" to a Python that has it.`
  );
}
