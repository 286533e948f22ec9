"""The client side of running analyses: a file's request (``request``), the worker's runs
of them (``runs``) and every outcome read as the file's report (``outcome``). The job side,
run in the worker, is ``fxls.analysis``."""
