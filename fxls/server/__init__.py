"""The fxls language server (pygls 2.x). It never imports torch or user code: analyses run
in the worker and come back as plain-data reports."""
