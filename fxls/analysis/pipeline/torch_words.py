"""torch's own words for a failure, short enough for a diagnostic: the exception's class and
the first sentence of its text (torchvision's missing-ops error is 600 characters, export's
data-dependent guard a page of graph)."""

from __future__ import annotations

import re

#: dynamo's name for the rest of a function after a graph break, kept as a global of the
#: function's module: ``torch_dynamo_resume_in_ForCTCLoss_at_48``
_RESUME_FUNCTION = re.compile(r"torch_dynamo_resume_in_(\w+?)_at_\d+")


def first_sentence(error: BaseException) -> str:
    """``RuntimeError: Couldn't load custom C++ ops``."""
    text = str(error).strip().splitlines()
    first = text[0].split(". ")[0].rstrip(".") if text else ""
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def without_resume_names(name: str) -> str:
    """``transformers.loss.loss_ctc.ForCTCLoss`` for the name of its resume function."""
    return _RESUME_FUNCTION.sub(r"\1", name)
