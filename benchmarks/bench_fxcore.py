"""fxcore vs torch.fx, side by side in one process: medians and ratios.

    .venv/bin/python benchmarks/bench_fxcore.py [--repeat N] [--markdown]

Cases: symbolic_trace of a small MLP and of a 48-block transformer (~1,500 nodes),
recompile of the big graph, building a 20,000-node graph, and mutating such a graph on its
own (built before the clock starts: insert before every 4th node and rewire it, replace the
uses of every 4th and erase it). Both libraries run interleaved, so machine noise hits both
alike; the ratio (fxcore / torch.fx) is the figure to read. fxcore records source spans on
every node during these runs (its default).
"""

from __future__ import annotations

import argparse
import gc
import math
import operator
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.fx
from torch import nn

import fxcore


class SmallMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x).softmax(-1)


class Block(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        attn = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        y = attn.softmax(dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.norm2(x))


class Transformer(nn.Module):
    def __init__(self, depth: int = 48) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(depth))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


def build_chain(fx: Any, size: int = 20_000) -> Any:
    graph = fx.Graph()
    x = graph.placeholder("x")
    value = x
    for i in range(size):
        value = graph.call_function(operator.add, (value, i))
    graph.output(value)
    return graph


def mutate(graph: Any) -> int:
    """Insert before every 4th node and rewire it; replace the uses of every 4th, erase it."""
    nodes = [n for n in graph.nodes if n.op == "call_function"]
    for node in nodes[::4]:
        with graph.inserting_before(node):
            extra = graph.call_function(operator.mul, (node.args[0], 2))
        node.replace_input_with(node.args[0], extra)
    for node in nodes[1::4]:
        node.replace_all_uses_with(node.args[0])
        graph.erase_node(node)
    return len(graph.nodes)


def timed_ms(prepare: Callable[[], Callable[[], Any]]) -> float:
    """The time of the callable ``prepare()`` returns; preparing it is not counted."""
    fn = prepare()
    gc.collect()
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def plain(fn: Callable[[], Any]) -> Callable[[], Callable[[], Any]]:
    return lambda: fn


def mutation_of_new_graph(fx: Any) -> Callable[[], Callable[[], Any]]:
    def prepare() -> Callable[[], Any]:
        graph = build_chain(fx)
        return lambda: mutate(graph)

    return prepare


def run(repeat: int) -> list[tuple[str, float, float]]:
    small, big = SmallMLP(), Transformer()
    big_fx = torch.fx.symbolic_trace(big)
    big_core = fxcore.symbolic_trace(big)
    Prepare = Callable[[], Callable[[], Any]]
    cases: list[tuple[str, Prepare, Prepare]] = [
        (
            "symbolic_trace small MLP",
            plain(lambda: torch.fx.symbolic_trace(small)),
            plain(lambda: fxcore.symbolic_trace(small)),
        ),
        (
            f"symbolic_trace transformer ({len(big_core.graph.nodes)} nodes)",
            plain(lambda: torch.fx.symbolic_trace(big)),
            plain(lambda: fxcore.symbolic_trace(big)),
        ),
        ("recompile transformer", plain(big_fx.recompile), plain(big_core.recompile)),
        (
            "build 20k-node graph",
            plain(lambda: build_chain(torch.fx)),
            plain(lambda: build_chain(fxcore)),
        ),
        (
            "mutate 20k-node graph (insert/replace/erase)",
            mutation_of_new_graph(torch.fx),
            mutation_of_new_graph(fxcore),
        ),
    ]
    results = []
    for name, reference, ours in cases:
        timed_ms(reference), timed_ms(ours)  # warm up
        ref_times, our_times = [], []
        for _ in range(repeat):  # interleaved: both see the same machine state
            ref_times.append(timed_ms(reference))
            our_times.append(timed_ms(ours))
        results.append((name, statistics.median(ref_times), statistics.median(our_times)))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    results = run(args.repeat)
    machine = (
        f"{platform.machine()}, {platform.processor() or 'cpu'}, Python "
        f"{platform.python_version()}, torch {torch.__version__}"
    )
    if args.markdown:
        print(f"Machine: {machine}; median of {args.repeat} interleaved runs.\n")
        print("| case | torch.fx (ms) | fxcore (ms) | fxcore / torch.fx |")
        print("| --- | ---: | ---: | ---: |")
        for name, ref, ours in results:
            print(f"| {name} | {ref:.1f} | {ours:.1f} | {ours / ref:.2f}x |")
        return
    print(machine)
    for name, ref, ours in results:
        print(
            f"{name:45s} torch.fx {ref:9.1f} ms   fxcore {ours:9.1f} ms   ratio {ours / ref:5.2f}"
        )


if __name__ == "__main__":
    main()
