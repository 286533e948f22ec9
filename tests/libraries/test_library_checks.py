"""What the worker accepts as a library to learn from a job's (untrusted) imports, and
which jobs must run without a learned library; what the server reads of a workspace."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import pytest

from fxls.server.workspace_imports import workspace_imports
from fxls.worker.import_origin import Origins, interpreter_folders, only_from
from fxls.worker.installed_libraries import (
    Library,
    conflicts,
    locate,
    module_files,
    quick_fingerprint,
    site_folders,
    target_folders,
    with_modules,
)


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    (site / "lib" / "sub").mkdir(parents=True)
    (site / "lib-1.0.dist-info").mkdir()
    for name in ("__init__.py", "core.py", "sub/__init__.py", "sub/deep.py", "tests.py"):
        (site / "lib" / name).write_text("")
    (site / "single.py").write_text("")
    (site / "spaced").mkdir()  # a namespace package: no __init__.py
    (site / "spaced" / "x.py").write_text("")
    loose = tmp_path / "loose"  # on the path, but no installed library lives there
    (loose / "mine").mkdir(parents=True)
    (loose / "mine" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(loose))
    monkeypatch.syspath_prepend(str(site))
    target_folders.cache_clear()
    yield site
    target_folders.cache_clear()


def test_only_installed_top_level_libraries_are_accepted(site: Path) -> None:
    library = locate("lib")
    assert library == Library("lib", str(site / "lib"), str(site))
    assert locate("single") == Library("single", str(site / "single.py"), str(site))
    for name in ("spaced", "mine", "os", "json", "torch", "fxls", "sys", "lib.core", "../lib",
                 "", "x" * 200, "tests", "not_there"):
        assert locate(name) is None, name


def test_a_library_in_a_workspace_or_a_writable_folder_is_never_learned(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A PYTHONPATH folder holding ``*.dist-info`` is no site folder: it is trusted only
    outside every root, as written and resolved, and no folder a job may write to touches
    the library."""
    assert str(site) not in site_folders()
    assert site_folders() and all(not p.startswith(str(tmp_path)) for p in site_folders())
    expected = Library("lib", str(site / "lib"), str(site))
    elsewhere = str(tmp_path / "elsewhere")
    assert locate("lib", roots=[elsewhere], writable=[elsewhere]) == expected
    link = tmp_path / "link"
    link.symlink_to(site)
    for roots, writable in (([str(site)], []), ([str(tmp_path)], []),
                            ([str(site / "lib")], []), ([str(link)], []),
                            ([], [str(site)]), ([], [str(site / "lib" / "sub")]),
                            ([], [str(tmp_path)])):
        assert locate("lib", roots=roots, writable=writable) is None, (roots, writable)
    # a PYTHONPATH entry that is a link inside the workspace to a folder outside it
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    outside = tmp_path / "outside"
    (outside / "linked").mkdir(parents=True)
    (outside / "linked" / "__init__.py").write_text("")
    (outside / "linked-1.0.dist-info").mkdir()
    (workspace / "libs").symlink_to(outside)
    monkeypatch.syspath_prepend(str(workspace / "libs"))
    target_folders.cache_clear()
    assert locate("linked", roots=[str(tmp_path / "other")]) is not None
    assert locate("linked", roots=[str(workspace)]) is None


def test_code_imported_outside_a_job_comes_from_the_interpreters_installation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While a zygote imports libraries, a module found anywhere else (a workspace folder
    on PYTHONPATH shadowing a library's dependency) is refused before its code runs."""
    workspace, target = tmp_path / "workspace" / "src", tmp_path / "target"
    for folder, name in ((workspace, "shadowing_dep"), (target, "fine_dep")):
        (folder / name).mkdir(parents=True)
        (folder / name / "__init__.py").write_text(
            f"open({str(tmp_path / name)!r}, 'w').close()\n")
    monkeypatch.syspath_prepend(str(target))
    monkeypatch.syspath_prepend(str(workspace))
    origins = Origins(tuple(interpreter_folders()), (str(target),), (str(tmp_path / "workspace"),))
    try:
        with only_from(origins):
            with pytest.raises(ImportError, match="shadowing_dep is not imported outside a job"):
                importlib.import_module("shadowing_dep")
            importlib.import_module("fine_dep")
            importlib.import_module("json.decoder")  # the standard library
        assert not (tmp_path / "shadowing_dep").exists()
        assert (tmp_path / "fine_dep").exists()
        importlib.import_module("shadowing_dep")  # outside: imports as before
    finally:
        for name in ("shadowing_dep", "fine_dep"):
            sys.modules.pop(name, None)


def test_submodules_must_be_files_of_the_library(site: Path) -> None:
    library = locate("lib")
    assert library is not None
    names = ["lib.core", "lib.sub.deep", "lib.sub", "lib.Thing", "lib.sub.Thing",
             "lib.tests", "lib.missing.Thing", "lib..core", "lib/../x", "other.core",
             "lib.core.__main__", 7]
    extended = with_modules(library, names)  # type: ignore[arg-type]
    assert extended.modules == ("lib.Thing", "lib.core", "lib.sub", "lib.sub.Thing",
                                "lib.sub.deep")
    assert module_files(extended) == [str(site / "lib" / p) for p in (
        "__init__.py", "core.py", "sub/__init__.py", "sub/deep.py")]


def test_a_replaced_package_changes_its_quick_fingerprint(site: Path) -> None:
    library = locate("lib")
    assert library is not None
    before = quick_fingerprint(library)
    assert quick_fingerprint(library) == before
    new = site / "lib" / "__init__.py.new"
    new.write_text("VERSION = 2\n")
    os.replace(new, site / "lib" / "__init__.py")
    assert quick_fingerprint(library) != before


def test_jobs_whose_own_code_is_or_shadows_a_library_run_without_it(
    site: Path, tmp_path: Path,
) -> None:
    library = locate("lib")
    assert library is not None
    project = tmp_path / "project"
    (project / "lib").mkdir(parents=True)
    (project / "other").mkdir()
    assert conflicts([library], [str(project / "lib" / "model.py"), str(project)]) == {"lib"}
    # the project root is an import root: its `lib` would be shadowed
    assert conflicts([library], [str(project / "other" / "model.py"), str(project)]) == {"lib"}
    assert conflicts([library], [str(project / "other" / "model.py")]) == set()
    assert conflicts([library], [str(site / "lib" / "core.py")]) == {"lib"}  # in place
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert conflicts([library], [str(elsewhere / "model.py"), str(elsewhere)]) == set()
    assert conflicts([library], ["relative/model.py", 3]) == set()  # type: ignore[list-item]


def test_the_workspaces_imports_are_read_without_its_environments(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "model.py").write_text(
        "import timm\nimport torch.nn as nn\nfrom transformers import BertModel\n"
        "from yaml import *\nfrom . import sibling\nfrom .x import y\n")
    (tmp_path / "broken.py").write_text("import yaml\ndef (:\n")
    for skipped in (".venv/lib", "node_modules/x", "venv2"):
        (tmp_path / skipped).mkdir(parents=True)
        (tmp_path / skipped / "m.py").write_text("import skipped_library\n")
    (tmp_path / "venv2" / "pyvenv.cfg").write_text("")
    assert workspace_imports([str(tmp_path)]) == [
        "timm", "torch.nn", "transformers", "transformers.BertModel", "yaml"]
