"""scripts/install_model_zoo.py: the torchvision patch, on a stand-in file (no network, no zoo)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "install_model_zoo.py"

# The shape of torchvision 0.28's torchvision/_meta_registrations.py around the two decorators.
ORIGINAL = '''import functools

import torch
import torch._custom_ops
import torch.library

# Ensure that torch.ops.torchvision is visible
import torchvision.extension  # noqa: F401


@torch.library.register_fake("torchvision::nms")
def meta_nms(dets, scores, iou_threshold):
    return dets


@torch.library.register_fake("torchvision::qnms")
def meta_qnms(dets, scores, iou_threshold):
    return dets
'''


@pytest.fixture(scope="module")
def installer():
    spec = importlib.util.spec_from_file_location("install_model_zoo", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_patch_makes_fake_registrations_conditional(installer, tmp_path: Path) -> None:
    target = tmp_path / "torchvision" / "_meta_registrations.py"
    target.parent.mkdir()
    target.write_text(ORIGINAL)
    assert installer.patch_torchvision(tmp_path) == "patched 2 register_fake decorators"
    text = target.read_text()
    assert "@torch.library.register_fake(" not in text
    assert text.count('@_fxls_register_fake_if_ops("torchvision::') == 2
    compile(text, str(target), "exec")
    # the helper is defined before its first use
    assert text.index("def _fxls_register_fake_if_ops") < text.index("@_fxls_register_fake_if")
    # idempotent
    assert installer.patch_torchvision(tmp_path) == "already patched"
    assert target.read_text() == text


def test_patch_refuses_unknown_content(installer, tmp_path: Path) -> None:
    target = tmp_path / "torchvision" / "_meta_registrations.py"
    target.parent.mkdir()
    target.write_text("import torch\n")
    with pytest.raises(SystemExit):
        installer.patch_torchvision(tmp_path)


def test_pins_never_include_torch(installer) -> None:
    names = [p.split("==")[0].lower() for p in installer.PACKAGES + installer.TRANSFORMERS_PACKAGES]
    assert "torch" not in names
    assert all("==" in p for p in installer.PACKAGES)
