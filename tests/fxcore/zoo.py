"""A zoo of small models that both torch.fx and fxcore should trace identically.

``ZOO`` maps a name to a :class:`ZooEntry`: a factory for the model (or function), a factory
for example inputs, optional ``concrete_args`` and optional leaf module types (traced with a
Tracer subclass that keeps those types as ``call_module`` nodes).
"""

import math
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

import fxcore


def scaled_sum(x: torch.Tensor, y: torch.Tensor, scale: float) -> torch.Tensor:
    """A helper registered with both libraries' ``wrap``: it must become one node."""
    return (x + y) * scale


def clamp_len(x: torch.Tensor) -> torch.Tensor:
    return x[: len(x)]


fxcore.wrap("scaled_sum")
torch.fx.wrap("scaled_sum")
fxcore.wrap(clamp_len)
torch.fx.wrap(clamp_len)


def free_function(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.relu(x) * y + 1


def _helper_stage(x: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(x) * 2


# -- models ---------------------------------------------------------------------------------


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.relu(self.fc1(x)))


class ConvBN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn(self.conv(x)))
        x = self.pool(x).flatten(1)
        return self.head(x)


class ResidualBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(4, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return F.relu(out)


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.heads = 2
        self.dim = 8
        self.qkv = nn.Linear(8, 24)
        self.proj = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.size()
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        head_dim = self.dim // self.heads
        q = q.view(b, t, self.heads, head_dim).transpose(1, 2)
        k = k.view(b, t, self.heads, head_dim).transpose(1, 2)
        v = v.view(b, t, self.heads, head_dim).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(head_dim)
        att = att.softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.proj(y)


class TransformerBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(8)
        self.attn = Attention()
        self.ln2 = nn.LayerNorm(8)
        self.mlp = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Embeddings(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tok = nn.Embedding(20, 8)
        self.pos = nn.Parameter(torch.randn(1, 6, 8))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        t = ids.shape[1]
        return self.tok(ids) + self.pos[:, :t]


class Containers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Linear(4, 2)})

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        x = self.seq(x)
        for layer in self.layers:
            x = layer(x)
        return {k: head(x) for k, head in self.heads.items()}


class KwargsForward(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, *, scale: torch.Tensor, bias: float = 0.5) -> torch.Tensor:
        return self.lin(x) * scale + bias


class VarArgs(nn.Module):
    def forward(self, x: torch.Tensor, *args: torch.Tensor, **kwargs: torch.Tensor) -> Any:
        return x + args[0] + kwargs["extra"]


class DefaultArgs(nn.Module):
    def forward(self, x: torch.Tensor, alpha: float = 2.0, beta: int = 3) -> torch.Tensor:
        return x * alpha + beta


class ConcreteFlag(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, use_relu: bool = True, mode: Any = None) -> torch.Tensor:
        x = self.lin(x)
        if use_relu:
            x = torch.relu(x)
        if mode is not None:
            x = x * 2
        return x


class TensorConstants(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.ones(4) * torch.tensor(3.0)


class PlainTensorAttr(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.offsets = torch.arange(4.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x - self.offsets


class Buffers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("running", torch.full((4,), 0.5))
        self.register_buffer("mask", torch.tensor([1.0, 0.0, 1.0, 0.0]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.running) * self.mask


class SharedParam(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4))
        self.b = nn.Parameter(torch.zeros(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x @ self.w + self.b
        return y @ self.w.t() + self.b.sum()


class WrappedFunction(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return scaled_sum(x, y, 0.5) + clamp_len(x)


class MathFunctions(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.d = 16

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * math.sqrt(self.d) + math.pi - math.log(2.0) + math.floor(x.size(0) / 3)


class ShapeAccess(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        c = x.size(1)
        d = x.dim()
        return x.reshape(n, c * 1) + d + x.ndim


class TupleUnpack(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = x.chunk(2)
        first, *rest = x.split(1, dim=0) if False else (x, x)
        return a * b + first + rest[0]


class InPlace(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        y.add_(1)
        y.mul_(3)
        return torch.relu_(y)


class Slicing(nn.Module):
    def forward(self, x: torch.Tensor) -> Any:
        a = x[:, 1:3]
        b = x[..., None]
        c = x[0, ::2]
        d = x[:, -1]
        return a.sum() + b.mean() + c.sum() + d.sum()


class DictOutput(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> Any:
        y = self.lin(x)
        return {"out": y, "aux": (y.relu(), [x, y.sigmoid()]), "n": 3}


class NestedTupleOutput(nn.Module):
    def forward(self, x: torch.Tensor) -> Any:
        return (x, (x + 1, (x * 2, x - 1)))


class CustomLeaf(nn.Module):
    """Not a torch.nn module, so only a Tracer subclass keeps it as one node."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:  # data-dependent: untraceable unless this module is a leaf
            return x * self.scale
        return x


class UsesCustomLeaf(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.leaf = CustomLeaf()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(self.leaf(x))


class Inner(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _helper_stage(self.lin(x))


class Middle(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Inner()
        self.norm = nn.LayerNorm(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.inner(x))


class Nested(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.middle = Middle()
        self.out = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.middle(x))


class Functional(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.linear(x, self.weight)
        y = F.dropout(y, p=0.0, training=self.training)
        y = F.softmax(y, dim=-1) + F.gelu(y) + F.leaky_relu(y, negative_slope=0.1)
        return F.layer_norm(y, (4,))


class TorchKwargs(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = torch.sum(x, dim=1, keepdim=True)
        m = torch.mean(x, dim=0)
        c = torch.cat([x, s], dim=1)
        return c.sum(dim=-1) + m.max() + torch.clamp(x, min=-1.0, max=1.0).sum()


class Reflected(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 2 - x + 1 / (x + 3) + 3 * x + 2**x - (-x) + abs(x) + 5 // (x.abs() + 1)


class Comparisons(nn.Module):
    def forward(self, x: torch.Tensor) -> Any:
        a = x > 0
        b = x <= 0.5
        c = x == 1
        d = x != 2
        return (a & b) | (c ^ d), ~a, torch.where(x >= 0, x, -x)


class NonCallableAttrs(nn.Module):
    def forward(self, x: torch.Tensor) -> Any:
        y = x.T
        return y.to(x.dtype) + x.mT.sum(), x.device, x.shape


class ParamMethods(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.w.t() + self.w.sum(dim=0) + self.w.norm()


class SharedSubmodule(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = nn.Linear(4, 4)
        self.act = nn.Tanh()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.block(self.act(self.block(x))))


class KeywordNames(nn.Module):
    """Argument and value names that clash with keywords and builtins."""

    def forward(self, input: torch.Tensor, list: torch.Tensor) -> torch.Tensor:
        torch_ = input + list
        return torch_.float()


class GetattrChains(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.lin.weight.T + self.lin.bias


class Operators(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> Any:
        return x @ y, x**2, x // 2, x % 3, -x, +x, x.abs() << 1 if False else x * y


class SequentialRoot(nn.Sequential):
    def __init__(self) -> None:
        super().__init__(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))


class ListArgs(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = [x, x * 2, x + 1]
        stacked = torch.stack(parts, dim=0)
        return stacked.permute(1, 0, 2).reshape(x.shape[0], -1)


class TypeConversion(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.to(torch.float64).type(torch.float32) + x.new_zeros(x.shape)


class ConstantsAndDtypes(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = torch.zeros(2, 3, dtype=torch.float32, device=x.device)
        big = x.clamp(max=float("inf")).masked_fill(x > 100, float("-inf"))
        return big + z + torch.full((2, 3), -1.5) + x.new_tensor([1.0, 2.0, 3.0])


class SizeArithmetic(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size = x.size()
        n = size[0] * size[1]
        tail = x.shape[1:]
        return x.reshape(n).view(size[0], tail[0]).expand(size) + x.size()[-1]


class OptionalArgs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, scales: list[float] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.lin(x)
        return y, y.masked_fill(mask, 0.0)


class NamedChildren(nn.Module):
    """Submodule names that are builtins, and numbered Sequential children."""

    def __init__(self) -> None:
        super().__init__()
        self.add_module("list", nn.Linear(4, 4))
        self.add_module("input", nn.ReLU())
        self.blocks = nn.Sequential(nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 4), nn.Tanh()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = getattr(self, "list")(x)
        x = getattr(self, "input")(x)
        return self.blocks(x)


class ScalarConstants(nn.Module):
    def forward(self, x: torch.Tensor) -> Any:
        return x * -1, x.pow(0.5 + 0j).real if False else x + 1e-6, "a'b\"c", None, [1, (2,)]


class InterpolatePad(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.pad(x, (1, 1, 2, 0), mode="constant", value=0.0)
        y = F.interpolate(y, scale_factor=2.0, mode="nearest")
        return F.max_pool2d(y, kernel_size=2, stride=2)


class TypingAnnotations(nn.Module):
    def forward(
        self,
        x: typing.Optional[torch.Tensor],  # noqa: UP045
        ys: typing.List[torch.Tensor],  # noqa: UP006
        opts: typing.Dict[str, int] | None = None,  # noqa: UP006
    ) -> typing.Tuple[torch.Tensor, ...]:  # noqa: UP006
        return (x + ys[0], ys[1])


class StructuredInputs(nn.Module):
    """Placeholders inside containers: the generated code unpacks them (pytree codegen)."""

    def forward(self, x: torch.Tensor, d: dict[str, Any], pair: Any, scale: float = 2.0) -> Any:
        return {"sum": x + d["a"] * d["b"][0] * scale, "p": (pair[0] - pair[1],)}


def structured_function(xs: list[torch.Tensor], k: int) -> torch.Tensor:
    return xs[0] * xs[1] + k


class AtenOps(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten.relu.default(x) + torch.ops.aten.add.Tensor(x, x, alpha=2)


class MultipleOutputsUnused(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values, indices = x.max(dim=1)
        _unused = x * 100  # dead but still traced
        return values + indices.float()


# -- the zoo --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ZooEntry:
    factory: Callable[[], Any]
    inputs: Callable[[], tuple[Any, ...]]
    concrete_args: dict[str, Any] | None = None
    leaf_types: tuple[type, ...] = ()
    kwargs: Callable[[], dict[str, Any]] | None = None


def _t(*shape: int) -> Callable[[], tuple[torch.Tensor, ...]]:
    return lambda: (torch.randn(*shape),)


def _t2(*shape: int) -> Callable[[], tuple[torch.Tensor, ...]]:
    return lambda: (torch.randn(*shape), torch.randn(*shape))


ZOO: dict[str, ZooEntry] = {
    "mlp": ZooEntry(MLP, _t(2, 8)),
    "conv_bn": ZooEntry(lambda: ConvBN().eval(), _t(2, 3, 8, 8)),
    "residual": ZooEntry(lambda: ResidualBlock().eval(), _t(2, 4, 6, 6)),
    "attention": ZooEntry(Attention, _t(2, 5, 8)),
    "transformer_block": ZooEntry(TransformerBlock, _t(2, 5, 8)),
    "embeddings": ZooEntry(Embeddings, lambda: (torch.randint(0, 20, (2, 6)),)),
    "containers": ZooEntry(Containers, _t(3, 4)),
    "kwargs_forward": ZooEntry(KwargsForward, _t(2, 4), kwargs=lambda: {"scale": torch.randn(4)}),
    "varargs": ZooEntry(
        VarArgs, lambda: (torch.randn(3), torch.randn(3)), kwargs=lambda: {"extra": torch.ones(3)}
    ),
    "default_args": ZooEntry(DefaultArgs, _t(3)),
    "concrete_flag": ZooEntry(
        ConcreteFlag,
        lambda: (torch.randn(2, 4), True, None),
        concrete_args={"use_relu": True, "mode": None},
    ),
    "concrete_flag_off": ZooEntry(
        ConcreteFlag,
        lambda: (torch.randn(2, 4), False),
        concrete_args={"use_relu": False, "mode": None},
    ),
    "tensor_constants": ZooEntry(TensorConstants, _t(4)),
    "plain_tensor_attr": ZooEntry(PlainTensorAttr, _t(2, 4)),
    "buffers": ZooEntry(Buffers, _t(2, 4)),
    "shared_param": ZooEntry(SharedParam, _t(2, 4)),
    "wrapped_function": ZooEntry(WrappedFunction, _t2(3, 3)),
    "math_functions": ZooEntry(MathFunctions, _t(5, 2)),
    "shape_access": ZooEntry(ShapeAccess, _t(3, 4)),
    "tuple_unpack": ZooEntry(TupleUnpack, _t(2, 4)),
    "in_place": ZooEntry(InPlace, _t(2, 3)),
    "slicing": ZooEntry(Slicing, _t(3, 4)),
    "dict_output": ZooEntry(DictOutput, _t(2, 4)),
    "nested_tuple_output": ZooEntry(NestedTupleOutput, _t(3)),
    "custom_leaf": ZooEntry(UsesCustomLeaf, _t(2, 4), leaf_types=(CustomLeaf,)),
    "nested_3_levels": ZooEntry(Nested, _t(2, 4)),
    "functional": ZooEntry(Functional, _t(2, 4)),
    "torch_kwargs": ZooEntry(TorchKwargs, _t(3, 4)),
    "reflected": ZooEntry(Reflected, lambda: (torch.rand(3) + 0.5,)),
    "comparisons": ZooEntry(Comparisons, _t(5)),
    "non_callable_attrs": ZooEntry(NonCallableAttrs, _t(3, 3)),
    "param_methods": ZooEntry(ParamMethods, _t(2, 4)),
    "shared_submodule": ZooEntry(SharedSubmodule, _t(2, 4)),
    "keyword_names": ZooEntry(KeywordNames, _t2(3)),
    "getattr_chains": ZooEntry(GetattrChains, _t(2, 4)),
    "operators": ZooEntry(Operators, _t2(3, 3)),
    "sequential_root": ZooEntry(SequentialRoot, _t(2, 4)),
    "list_args": ZooEntry(ListArgs, _t(2, 3)),
    "type_conversion": ZooEntry(TypeConversion, _t(2, 3)),
    "free_function": ZooEntry(lambda: free_function, _t2(3)),
    "constants_and_dtypes": ZooEntry(ConstantsAndDtypes, _t(2, 3)),
    "size_arithmetic": ZooEntry(SizeArithmetic, _t(2, 3)),
    "optional_args": ZooEntry(OptionalArgs, lambda: (torch.randn(2, 4), torch.randn(2, 4) > 0)),
    "named_children": ZooEntry(NamedChildren, _t(2, 4)),
    "scalar_constants": ZooEntry(ScalarConstants, _t(3)),
    "interpolate_pad": ZooEntry(InterpolatePad, _t(1, 2, 4, 4)),
    "aten_ops": ZooEntry(AtenOps, _t(3)),
    "structured_inputs": ZooEntry(
        StructuredInputs,
        lambda: (
            torch.randn(3),
            {"a": torch.randn(3), "b": [torch.randn(3)]},
            (torch.randn(3), torch.randn(3)),
            2.0,  # the pytree signature drops defaults (torch.fx does too)
        ),
        concrete_args={"d": {"a": fxcore.PH, "b": [fxcore.PH]}, "pair": (fxcore.PH, fxcore.PH)},
    ),
    "structured_function": ZooEntry(
        lambda: structured_function,
        lambda: ([torch.randn(3), torch.randn(3)], 4),
        concrete_args={"xs": [fxcore.PH, fxcore.PH], "k": 4},
    ),
    "typing_annotations": ZooEntry(
        TypingAnnotations, lambda: (torch.randn(3), [torch.randn(3), torch.randn(3)])
    ),
    "multiple_outputs_unused": ZooEntry(MultipleOutputsUnused, _t(3, 4)),
}
