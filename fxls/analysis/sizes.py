"""The usual small value of a size parameter, by its name.

Model zoos give nearly every inner class size parameters (``in_chs``, ``out_chs``, ``dim``,
``num_heads``, ``window_size``). Whether a parameter is a size at all is decided by its use
(``fxls.analysis.arguments``); its name then says which small value to try first: channels
32, heads 4, windows 4, kernels 3, depths 1 (``mlp_dim`` and ``sm_depth`` by their parts).
"""

from __future__ import annotations

from typing import Any

_WIDTH = 32
_VALUES: dict[str, Any] = {
    **dict.fromkeys((
        "in_chs", "out_chs", "mid_chs", "chs", "channels", "in_channels", "out_channels",
        "hidden_channels", "dim", "in_dim", "out_dim", "dim_out", "hidden_dim", "embed_dim",
        "in_features", "out_features", "hidden_features", "d_model", "width", "planes",
        "inplanes", "in_planes", "out_planes", "hidden_size", "num_features", "features",
        "input_dim", "output_dim", "c1", "c2", "inp", "oup", "in_ch", "out_ch",
    ), _WIDTH),
    **dict.fromkeys(("num_heads", "heads", "n_heads", "n_head", "head_count"), 4),
    **dict.fromkeys(("head_dim", "dim_head", "key_dim"), 8),
    **dict.fromkeys(("window_size", "patch_size", "pool_size", "resolution"), 4),
    **dict.fromkeys(("kernel_size", "k"), 3),
    **dict.fromkeys(("stride", "groups", "depth", "num_layers", "dilation", "s", "g"), 1),
    **dict.fromkeys(("num_classes",), 10),
    **dict.fromkeys(("seq_len", "num_patches", "num_tokens", "max_len"), 16),
    **dict.fromkeys(("img_size", "image_size", "input_size"), 32),
    **dict.fromkeys(("drop", "dropout", "drop_path", "drop_rate", "drop_path_rate",
                     "attn_drop", "proj_drop", "p"), 0.0),
}
#: parts of a name that say what kind of size it is, for names not in the list above
_NAME_PARTS: tuple[tuple[tuple[str, ...], Any], ...] = (
    (("drop", "dropout"), 0.0),
    (("heads",), 4),
    (("depth", "layers", "blocks"), 1),
    (("kernel",), 3),
    (("stride", "dilation", "groups"), 1),
    (("patch", "window"), 4),
    (("image", "img"), 32),
    (("dim", "chs", "channels", "features", "width", "hidden", "planes", "size"), _WIDTH),
)


def value_for(name: str) -> Any:
    """The usual small value of a size parameter by its name (``None``: the name says
    nothing): the known names first, then parts of it (``mlp_dim``, ``sm_depth``)."""
    if name in _VALUES:
        return _VALUES[name]
    parts = name.lower().split("_")
    for words, value in _NAME_PARTS:
        if any(w in parts or any(p.endswith(w) for p in parts) for w in words):
            return value
    return None
