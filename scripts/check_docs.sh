#!/usr/bin/env bash
# The Rust API docs: `cargo doc` of the workspace's crates with every rustdoc warning an error
# (CI makes them in its build lane, after the build; see .ci/run). Then the book: mdBook
# (installed once into target/tools with `cargo install`, pinned) builds docs/ into target/book,
# failing on a page SUMMARY.md lists that does not exist; then every relative link and #anchor
# of the README and the book must resolve, and every ```console block's commands must print what
# the page shows under them (scripts/check_outputs.py, with the build's target/debug/ckeep).
set -euo pipefail
cd "$(dirname "$0")/.."
# CI documents the API in its build lane, where llama.cpp is already built (CKEEP_API_DOCS_DONE).
[ -n "${CKEEP_API_DOCS_DONE:-}" ] || RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps --workspace
MDBOOK_VERSION=0.5.4
mdbook="$PWD/target/tools/bin/mdbook"
if ! "$mdbook" --version 2> /dev/null | grep -q "v$MDBOOK_VERSION"; then
  # Unoptimised and without debug info: it compiled in 47 s on a 2-core AMD EPYC (2026-12-03)
  # and still builds the book in 2 s; CI compiles it once per run, so its compile time counts.
  CARGO_PROFILE_DEV_DEBUG=0 cargo install --quiet --locked --debug \
    mdbook --version "$MDBOOK_VERSION" --no-default-features --features search --root "$PWD/target/tools"
fi
"$mdbook" build docs 2>&1 | { grep -Ev '^ ?INFO' || true; }
test -f target/book/index.html
python3 scripts/check_links.py
python3 scripts/check_outputs.py
