"""Torch's per-process caches, warm before a job needs them.

A job process is a fresh fork: the first ``torch.export`` or dynamo run of a model in it
misses caches that a second run in the same process hits, and that torch keeps per process
(measured, BERT 2 layers: 330 against 200 ms for export, 1,000 against 700 ms for dynamo).
They are the fake-tensor dispatch cache (keyed by operator and the metadata of its
arguments: shapes, strides, dtypes), dynamo's cleaned bytecode per code object and its
table of function names per source file. No user code can run outside a job, so a job
describes, as data, what would fill them (``graph_data``: the graphs export and dynamo
made, operators and tensor metadata only; ``code_caches``: the library files and functions
dynamo read), and the job processes waiting for the next job fill them from that data
(``replay``) before it arrives: the next save of the same file meets warm caches.
"""
