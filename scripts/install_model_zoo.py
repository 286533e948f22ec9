"""Install real model libraries (timm, torchvision, transformers) into a cache folder.

    .venv/bin/python scripts/install_model_zoo.py [--dest DIR] [--without-transformers] [--force]

Everything goes to DIR/site (default DIR: ~/.cache/fxls-model-zoo) with
`pip install --target DIR/site --no-deps`, never into the project venv's site-packages,
and pip never resolves torch (the venv's CPU torch is used). torchvision 0.28.0, the release
that pairs with torch 2.13, exists only as a CUDA build: its C++ ops do not load next to the
CPU torch, and `import torchvision` then fails in `torchvision/_meta_registrations.py`
("operator torchvision::nms does not exist"). The installed copy is patched so that the two
`@torch.library.register_fake("torchvision::nms"/"qnms")` decorators only apply when
`torchvision.extension._has_ops()`; the pure-Python models (all classification models) then
import and run. Idempotent: a stamp file records what was installed. Prints the folder to
put on PYTHONPATH (last line of output), e.g.

    PYTHONPATH=$(.venv/bin/python scripts/install_model_zoo.py | tail -1) .venv/bin/python -c \
        "import timm; print(timm.create_model('resnet18'))"

Hugging Face transformers is part of the zoo (its modeling files are real models users check):
transformers plus regex, and tokenizers, without which `modeling_*.py` files that reach the
tokenizer registry do not import (`TokenizersBackend | SentencePieceBackend` on `None`);
~130 MB more; with it, Hugging Face optimum (its FX passes, `fx/optimization/`, are real
passes the pass tests check in place). `--without-transformers` leaves them out
(`--with-transformers` is accepted and changes nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DEST = Path(os.environ.get("FXLS_MODEL_ZOO", "~/.cache/fxls-model-zoo")).expanduser()

# Pinned: what `timm` + `torchvision` need at import on this machine (checked by importing).
# huggingface_hub 1.x uses httpx (2.x moved to httpx2/httpcore2); click and hf-xet are only
# used by its CLI and downloads, not at import.
PACKAGES = [
    "timm==1.0.31",
    "torchvision==0.28.0",
    "pyyaml==6.0.3",
    "safetensors==0.8.0",
    "huggingface_hub==1.33.0",
    "filelock==4.2.12",
    "fsspec==2026.9.0",
    "packaging==26.3",
    "tqdm==4.70.1",
    "typing_extensions==4.16.0",
    "httpx==0.28.1",
    "httpcore==1.0.9",
    "h11==0.16.0",
    "anyio==4.16.0",
    "idna==3.20",
    "certifi==2026.10.18",
    "numpy==2.4.6",
    "pillow==13.0.0",
]
TRANSFORMERS_PACKAGES = ["transformers==5.23.0", "regex==2026.11.15", "tokenizers==0.23.3",
                         "optimum==2.3.0"]

PATCH_VERSION = 1
PATCH_MARK = "# fxls-model-zoo patch"
FAKE_DECORATOR = '@torch.library.register_fake("torchvision::'
HELPER_ANCHOR = "import torchvision.extension  # noqa: F401\n"
HELPER = f'''

{PATCH_MARK} v{PATCH_VERSION}: torchvision's C++ ops are absent next to a CPU-only torch;
# registering fake kernels for them would raise "operator torchvision::nms does not exist".
def _fxls_register_fake_if_ops(name):
    if torchvision.extension._has_ops():
        return torch.library.register_fake(name)
    return lambda fn: fn
'''

VERIFY = (
    "import timm, torchvision, torchvision.models\n"
    "m = timm.create_model('resnet18')\n"
    "t = torchvision.models.resnet18()\n"
    "print('timm', timm.__version__, 'torchvision', torchvision.__version__,"
    " type(m).__name__, type(t).__name__)\n"
)
VERIFY_TRANSFORMERS = (
    "from transformers.models.bert import modeling_bert\n"
    "from transformers.models.resnet import modeling_resnet\n"
    "import transformers\n"
    "print('transformers', transformers.__version__)\n"
)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def default_python() -> str:
    venv = REPO / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def pip_install(python: str, site: Path, packages: list[str]) -> None:
    cmd = [
        python, "-m", "pip", "install", "--disable-pip-version-check", "--quiet",
        "--no-deps", "--upgrade", "--target", str(site), *packages,
    ]
    log("$ " + " ".join(cmd))
    subprocess.run(cmd, check=True)


def patch_torchvision(site: Path) -> str:
    """Make the nms/qnms fake registrations conditional on torchvision's ops being loaded."""
    path = site / "torchvision" / "_meta_registrations.py"
    text = path.read_text()
    if PATCH_MARK in text:
        return "already patched"
    count = text.count(FAKE_DECORATOR)
    if count == 0 or HELPER_ANCHOR not in text:
        raise SystemExit(f"{path}: unexpected content, cannot patch (found {count} decorators)")
    text = text.replace(FAKE_DECORATOR, '@_fxls_register_fake_if_ops("torchvision::')
    text = text.replace(HELPER_ANCHOR, HELPER_ANCHOR + HELPER, 1)
    path.write_text(text)
    for cached in (path.parent / "__pycache__").glob("_meta_registrations.*.pyc"):
        cached.unlink()
    return f"patched {count} register_fake decorators"


def check_no_torch(site: Path) -> None:
    """--no-deps must not have brought a torch (or CUDA libraries) into the target."""
    unwanted = [p.name for p in site.iterdir() if p.name == "torch" or p.name.startswith(
        ("torch-", "nvidia", "triton"))]
    if unwanted:
        raise SystemExit(f"{site}: unexpected packages installed: {unwanted}")


def verify(python: str, site: Path, code: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(site))
    result = subprocess.run(
        [python, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    if result.returncode != 0:
        raise SystemExit(f"verification failed:\n{result.stderr[-3000:]}")
    return result.stdout.strip()


def folder_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST,
                        help=f"cache folder (default {DEFAULT_DEST}); packages go to DEST/site")
    parser.add_argument("--python", default=default_python(),
                        help="interpreter whose pip installs (default: the project's .venv)")
    parser.add_argument("--without-transformers", action="store_true",
                        help="leave Hugging Face transformers out (~130 MB less)")
    parser.add_argument("--with-transformers", action="store_true",
                        help="the default (kept for older command lines)")
    parser.add_argument("--force", action="store_true", help="reinstall even if stamped")
    args = parser.parse_args(argv)

    dest = args.dest.expanduser().resolve()
    site = dest / "site"
    stamp = dest / "installed.json"
    with_transformers = not args.without_transformers
    packages = PACKAGES + (TRANSFORMERS_PACKAGES if with_transformers else [])
    wanted = {"packages": packages, "patch": PATCH_VERSION}

    previous = None
    if stamp.exists():
        try:
            previous = json.loads(stamp.read_text())
        except ValueError:
            previous = None
    if not args.force and previous and site.is_dir() and (
        previous.get("patch") == PATCH_VERSION and set(packages) <= set(previous["packages"])
    ):
        log(f"model zoo already installed in {site} ({stamp.name}); --force reinstalls")
        print(site)
        return 0

    start = time.perf_counter()
    site.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    pip_install(args.python, site, packages)
    check_no_torch(site)
    log(patch_torchvision(site))
    log(verify(args.python, site, VERIFY))
    if with_transformers:
        log(verify(args.python, site, VERIFY_TRANSFORMERS))
    size = folder_size(site)
    stamp.write_text(json.dumps({**wanted, "bytes": size, "python": args.python}, indent=1))
    log(f"installed in {time.perf_counter() - start:.0f} s, {size / 2**20:.0f} MB in {site}")
    log(f"use: PYTHONPATH={site}")
    print(site)
    return 0


if __name__ == "__main__":
    sys.exit(main())
