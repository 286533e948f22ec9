"""A stand-in for an installed library (``tests/libraries/test_workspace_libraries.py``): it
keeps its own file open, so the processes that imported it can be told from outside."""

KEPT_OPEN = open(__file__, "rb")  # noqa: SIM115
