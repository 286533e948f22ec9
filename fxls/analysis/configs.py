"""Configuration objects a constructor needs, built where that is unambiguous, and shrunk.

A required ``__init__`` parameter gets a configuration when its annotation is a class that
builds with no arguments (a dataclass config, ``BertConfig``), or when it is named
``config``/``cfg`` and the file defines or imports exactly one ``*Config`` class. Known size
fields (layers, hidden sizes, heads, vocabulary) are shrunk for tracing, keeping the
config's own divisibility rules (hidden size a multiple of the heads, heads a multiple of
the key/value heads).
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

_CONFIG_NAMES = ("config", "cfg", "model_config", "model_cfg")
_LAYERS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "num_decoder_layers",
           "encoder_layers", "decoder_layers", "depth")
_HIDDEN = ("hidden_size", "d_model", "n_embd", "embed_dim", "dim")
_HEADS = ("num_attention_heads", "n_head", "num_heads", "encoder_attention_heads",
          "decoder_attention_heads")
_KV_HEADS = ("num_key_value_heads", "n_kv_heads", "num_kv_heads")
_INTERMEDIATE = ("intermediate_size", "d_ff", "n_inner", "ffn_dim", "encoder_ffn_dim",
                 "decoder_ffn_dim", "mlp_dim")
_SMALL_LAYERS, _SMALL_HIDDEN, _SMALL_HEADS, _SMALL_KV_HEADS = 2, 64, 4, 2
_SMALL_INTERMEDIATE, _SMALL_VOCAB, _SMALL_POSITIONS = 128, 1024, 512


def arguments_for(cls: type, namespace: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Keyword arguments for ``cls``'s required configuration parameters, and how they were
    built ("built from BertConfig() with 2 layers"); ({}, "") when it needs none."""
    try:
        signature = inspect.signature(cls.__init__)
        hints = typing.get_type_hints(cls.__init__, globalns=namespace)
    except Exception:
        hints = {}
        try:
            signature = inspect.signature(cls.__init__)
        except (TypeError, ValueError):
            return {}, ""
    kwargs: dict[str, Any] = {}
    described = []
    for parameter in list(signature.parameters.values())[1:]:
        if parameter.default is not inspect.Parameter.empty or parameter.kind in (
            parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD
        ):
            continue
        config_cls = _config_class(parameter.name, hints.get(parameter.name), namespace)
        if config_cls is None:
            continue
        try:
            config = config_cls()
        except Exception:
            continue
        shrunk = shrink(config)
        kwargs[parameter.name] = config
        described.append(f"built from {config_cls.__name__}()" + (f" with {shrunk}"
                                                                    if shrunk else ""))
    return kwargs, "; ".join(described)


def _config_class(name: str, annotation: Any, namespace: dict[str, Any]) -> type | None:
    if inspect.isclass(annotation) and _builds_without_arguments(annotation):
        return annotation
    if annotation is None and name in _CONFIG_NAMES:
        found = {v for k, v in namespace.items()
                 if inspect.isclass(v) and k.endswith("Config") and _builds_without_arguments(v)}
        # the model's own config, not the base classes it derives from (PretrainedConfig)
        leaves = [c for c in found if not any(o is not c and issubclass(o, c) for o in found)]
        if len(leaves) == 1:
            return leaves[0]
    return None


def _builds_without_arguments(cls: type) -> bool:
    if cls.__module__ == "builtins" or cls.__module__.startswith(("torch", "typing")):
        return False
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return False
    return all(
        p.default is not inspect.Parameter.empty
        or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        for p in signature.parameters.values()
    )


def shrink(config: Any) -> str:
    """Make a configuration small for tracing, in place; what changed, in words."""
    changed = []
    layers = _set_first(config, _LAYERS, lambda v: min(v, _SMALL_LAYERS))
    if layers is not None:
        changed.append(f"{layers} layers")
    hidden = _get_first(config, _HIDDEN)
    heads = _get_first(config, _HEADS)
    if hidden is not None and hidden > _SMALL_HIDDEN:
        new_heads = min(heads, _SMALL_HEADS) if heads else None
        _set_first(config, _HIDDEN, lambda v: _SMALL_HIDDEN)
        if new_heads:
            _set_all(config, _HEADS, new_heads)
            kv = _get_first(config, _KV_HEADS)
            if kv:
                _set_all(config, _KV_HEADS, _divisor_at_most(new_heads, min(kv, _SMALL_KV_HEADS)))
            if hasattr(config, "head_dim") and isinstance(config.head_dim, int):
                config.head_dim = _SMALL_HIDDEN // new_heads
        changed.append(f"hidden size {_SMALL_HIDDEN}")
        _set_all(config, _INTERMEDIATE, _SMALL_INTERMEDIATE, only_if_larger=True)
    vocab = getattr(config, "vocab_size", None)
    if isinstance(vocab, int) and vocab > _SMALL_VOCAB:
        config.vocab_size = _SMALL_VOCAB
        for token in ("pad_token_id", "bos_token_id", "eos_token_id"):
            value = getattr(config, token, None)
            if isinstance(value, int) and value >= _SMALL_VOCAB:
                setattr(config, token, _SMALL_VOCAB - 1)
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > _SMALL_POSITIONS:
        config.max_position_embeddings = _SMALL_POSITIONS
    return ", ".join(changed)


def _get_first(config: Any, names: tuple[str, ...]) -> int | None:
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _set_first(config: Any, names: tuple[str, ...], change: Any) -> int | None:
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            new = change(value)
            _set(config, name, new)
            return new
    return None


def _set_all(config: Any, names: tuple[str, ...], value: int, only_if_larger: bool = False
             ) -> None:
    for name in names:
        current = getattr(config, name, None)
        if isinstance(current, int) and not isinstance(current, bool) and (
            not only_if_larger or current > value
        ):
            _set(config, name, value)


def _set(config: Any, name: str, value: int) -> None:
    try:
        setattr(config, name, value)
    except Exception:  # a frozen dataclass: leave it as it is
        pass


def _divisor_at_most(number: int, limit: int) -> int:
    return next(d for d in range(max(limit, 1), 0, -1) if number % d == 0)
