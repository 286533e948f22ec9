import { test } from "node:test";
import assert from "node:assert/strict";
import { buildServerCommand, formatCommandLine, startFailureHint } from "../src/serverCommand";

test("the server runs as <python> -E -P -u -m fxls serve: nothing from PYTHONPATH or the workspace runs in it", () => {
  const command = buildServerCommand({ interpreter: "/venv/bin/python", cwd: "/ws", baseEnv: { PATH: "/usr/bin" } });
  assert.equal(command.command, "/venv/bin/python");
  assert.deepEqual(command.args, ["-E", "-P", "-u", "-m", "fxls", "serve"]);
  assert.equal(command.options.cwd, "/ws");
  assert.equal(command.options.env.PATH, "/usr/bin");
});

test("the environment keeps the protocol stream clean", () => {
  const command = buildServerCommand({
    interpreter: "python3",
    baseEnv: { PYTHONSTARTUP: "/home/u/.pythonrc", PYTHONINSPECT: "1", HOME: "/home/u", UNSET: undefined },
  });
  const env = command.options.env;
  assert.equal(env.PYTHONUNBUFFERED, "1");
  assert.equal(env.PYTHONIOENCODING, "utf-8");
  assert.equal(env.PYTHONSTARTUP, undefined);
  assert.equal(env.PYTHONINSPECT, undefined);
  assert.equal(env.HOME, "/home/u");
  assert.ok(!("UNSET" in env));
  assert.equal(command.options.cwd, undefined);
});

test("the args array is a copy", () => {
  const a = buildServerCommand({ interpreter: "python3" });
  a.args.push("--tcp");
  assert.deepEqual(buildServerCommand({ interpreter: "python3" }).args, ["-E", "-P", "-u", "-m", "fxls", "serve"]);
});

test("command lines are quoted for logs", () => {
  assert.equal(formatCommandLine(buildServerCommand({ interpreter: "/usr/bin/python3" })), "/usr/bin/python3 -E -P -u -m fxls serve");
  assert.equal(
    formatCommandLine(buildServerCommand({ interpreter: "/My Envs/it's/python" })),
    `'/My Envs/it'\\''s/python' -E -P -u -m fxls serve`,
  );
});

test("a start failure names the interpreter and the setting", () => {
  const hint = startFailureHint("/venv/bin/python");
  assert.match(hint, /\/venv\/bin\/python -m fxls serve/);
  assert.match(hint, /fxls\.interpreter/);
});
