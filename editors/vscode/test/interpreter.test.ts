import { test } from "node:test";
import assert from "node:assert/strict";
import { chooseInterpreter, describeInterpreter, folderOf, folderPython, interpreterSettingFor, pythonFromEnvironment, resolveVariables } from "../src/interpreter";

test("the fxls.interpreter setting wins over the Python extension", () => {
  assert.deepEqual(chooseInterpreter({ setting: "/opt/venv/bin/python", pythonExtension: "/usr/bin/python3.11" }), {
    path: "/opt/venv/bin/python",
    source: "setting",
  });
});

test("the Python extension's environment is used when the setting is empty", () => {
  for (const setting of [undefined, null, "", "   "]) {
    assert.deepEqual(chooseInterpreter({ setting, pythonExtension: "/home/u/.venv/bin/python" }), {
      path: "/home/u/.venv/bin/python",
      source: "python-extension",
    });
  }
});

test("python3 is the last resort", () => {
  assert.deepEqual(chooseInterpreter({}), { path: "python3", source: "default" });
  assert.deepEqual(chooseInterpreter({ setting: "", pythonExtension: "" }), { path: "python3", source: "default" });
  assert.deepEqual(chooseInterpreter({ setting: "", pythonExtension: null }), { path: "python3", source: "default" });
});

test("variables in the setting are expanded", () => {
  const ctx = { workspaceFolder: "/ws", home: "/home/u", env: { VENV: "/venvs/a" } };
  assert.equal(chooseInterpreter({ setting: "${workspaceFolder}/.venv/bin/python" }, ctx).path, "/ws/.venv/bin/python");
  assert.equal(chooseInterpreter({ setting: "~/py/bin/python" }, ctx).path, "/home/u/py/bin/python");
  assert.equal(resolveVariables("${userHome}/x", ctx), "/home/u/x");
  assert.equal(resolveVariables("${env:VENV}/bin/python", ctx), "/venvs/a/bin/python");
  assert.equal(resolveVariables("${env:MISSING}x", ctx), "x");
  // no workspace folder: the variable stays (and the path fails visibly rather than silently)
  assert.equal(resolveVariables("${workspaceFolder}/p", {}), "${workspaceFolder}/p");
  assert.equal(resolveVariables("  /a/b  ", {}), "/a/b");
});

test("the Python extension's environment resolves to its executable", () => {
  assert.equal(
    pythonFromEnvironment({ id: "x", path: "/envs/conda" }, { executable: { uri: { fsPath: "/envs/conda/bin/python" } } }),
    "/envs/conda/bin/python",
  );
  assert.equal(pythonFromEnvironment({ id: "x", path: "/venv/bin/python" }, undefined), "/venv/bin/python");
  // resolved, but an environment without an interpreter
  assert.equal(pythonFromEnvironment({ id: "x", path: "/envs/empty" }, { executable: { uri: undefined } }), undefined);
  assert.equal(pythonFromEnvironment(undefined, undefined), undefined);
  assert.equal(pythonFromEnvironment({ id: "x", path: "" }, undefined), undefined);
});

test("the chosen interpreter is described with its source", () => {
  assert.match(describeInterpreter({ path: "/p", source: "setting" }), /fxls\.interpreter setting/);
  assert.match(describeInterpreter({ path: "/p", source: "python-extension" }), /Python extension/);
  assert.match(describeInterpreter({ path: "python3", source: "default" }), /default/);
});

test("a folder's own fxls.interpreter is used, in a multi-root window too", () => {
  const folders = [
    { folder: "/ws/a", value: "" },
    { folder: "/ws/b", value: "${workspaceFolder}/.venv/bin/python" },
  ];
  // a file of folder a opened first: a sets nothing, b's setting is still found (not python3)
  assert.deepEqual(interpreterSettingFor(folders, "", "/ws/a"), { setting: "${workspaceFolder}/.venv/bin/python", folder: "/ws/b" });
  const choice = interpreterSettingFor(folders, undefined, "/ws/b");
  assert.equal(chooseInterpreter({ setting: choice.setting }, { workspaceFolder: choice.folder }).path, "/ws/b/.venv/bin/python");
  // the preferred folder's value wins over the others
  const both = [{ folder: "/ws/a", value: "/a/python" }, { folder: "/ws/b", value: "/b/python" }];
  assert.deepEqual(interpreterSettingFor(both, "/user/python", "/ws/b"), { setting: "/b/python", folder: "/ws/b" });
  // user settings in a window without folders
  assert.deepEqual(interpreterSettingFor([], "/user/python"), { setting: "/user/python", folder: undefined });
  assert.deepEqual(interpreterSettingFor([], "  "), { folder: undefined });
});

test("a file's folder is the innermost workspace folder that holds it", () => {
  assert.equal(folderOf("/ws/a/m.py", ["/ws", "/ws/a"]), "/ws/a");
  assert.equal(folderOf("/ws/ab/m.py", ["/ws/a"]), undefined);
  assert.equal(folderOf("/elsewhere/m.py", ["/ws/a"]), undefined);
});

test("a folder's code runs under its fxls.python, else its fxls.interpreter, else the window's", () => {
  const resolve = (p: string) => resolveVariables(p, { workspaceFolder: "/ws/a" });
  assert.equal(folderPython("${workspaceFolder}/.venv/bin/python", "/usr/bin/python3", resolve), "/ws/a/.venv/bin/python");
  assert.equal(folderPython("", " ${workspaceFolder}/env/bin/python ", resolve), "/ws/a/env/bin/python");
  assert.equal(folderPython(undefined, "", resolve), undefined);
});
