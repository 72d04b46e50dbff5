#!/usr/bin/env bash
# The book: builds docs/ with mdBook (installed once into target/tools from crates.io, pinned)
# into target/book, failing on a page SUMMARY.md lists that does not exist, then checks that
# every relative link and #anchor of the README and the book resolves.
set -euo pipefail
cd "$(dirname "$0")/.."
MDBOOK_VERSION=0.5.4
mdbook="$PWD/target/tools/bin/mdbook"
if ! "$mdbook" --version 2> /dev/null | grep -q "v$MDBOOK_VERSION"; then
  cargo install --quiet --locked mdbook --version "$MDBOOK_VERSION" \
    --no-default-features --features search --root "$PWD/target/tools"
fi
"$mdbook" build docs 2>&1 | { grep -Ev '^ ?INFO' || true; }
test -f target/book/index.html
python3 scripts/check_links.py
