"""``fxls --version``: the version and what this machine's kernel enforces for analysed code."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from fxls import __version__


def environment_report() -> str:
    from fxls.worker.sandbox import support

    return f"fxls {__version__}\npython {sys.version.split()[0]}\n{support().describe()}"


class VersionAction(argparse.Action):
    """Like argparse's ``version`` action, but the kernel is probed only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: Any = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0,
                         help=help or "show the version and the sandbox's kernel support")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        print(environment_report())
        parser.exit()
