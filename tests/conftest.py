"""The suite runs on two pytest-xdist workers (``-n 2 --dist loadgroup`` in pyproject.toml).

loadgroup hands out single tests, except those marked ``xdist_group``, which go to one worker
together. A test module whose tests share a module- or class-scoped fixture (one `fxls check`
of many files, a server, a reference run) is one group here, so that fixture is built once,
not once on each worker.
"""

from __future__ import annotations

import pytest

SHARED_SCOPES = frozenset({"module", "class", "package"})


def _shares_a_fixture(item: pytest.Item) -> bool:
    fixtures = getattr(item, "_fixtureinfo", None)
    if fixtures is None:
        return False
    return any(definition.scope in SHARED_SCOPES
               for definitions in fixtures.name2fixturedefs.values()
               for definition in definitions)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group") is None and _shares_a_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
