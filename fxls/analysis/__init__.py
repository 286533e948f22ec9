"""Analysis of one file: source text + settings -> FileReport. Runs inside the worker."""
