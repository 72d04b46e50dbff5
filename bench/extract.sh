#!/usr/bin/env bash
# Document extraction speed and agreement: `ckeep extract --stats` (release build) beside the
# widely used Python extractors (bench/extract_reference.py: pypdf, BeautifulSoup with lxml,
# python-docx, ebooklib) on the same real files in the same run, alternating, best of ROUNDS;
# then the token F1 of the two texts per file, averaged per format.
#
# The files come from Debian's packages, unpacked under target/bench-documents without
# installing them: the Python 3 documentation (HTML), TeX Live's latex-recommended
# documentation (PDF), the Live Systems manual (EPUB, ten languages), the PreviSat manual
# (PDF and DOCX, English and French) and Pattern's Lewis Carroll (PDF and DOCX).
# Usage: bench/extract.sh   (ROUNDS=2 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${ROUNDS:-2}"
dir=target/bench-documents
if [ ! -f "$dir/.unpacked" ]; then
  rm -rf "$dir" && mkdir -p "$dir/debs"
  (cd "$dir/debs" && apt-get download -qq python3.11-doc texlive-latex-recommended-doc \
    live-manual-epub previsat python3-pattern 2> /dev/null)
  for deb in "$dir"/debs/*.deb; do dpkg-deb -x "$deb" "$dir"; done
  touch "$dir/.unpacked"
fi
list=target/bench-documents.list
find "$dir/usr" -type f \( -name '*.pdf' -o -name '*.html' -o -name '*.epub' -o -name '*.docx' \) \
  | sort > "$list"
echo "files: $(wc -l < "$list") ($(grep -c '\.pdf$' "$list") PDF, $(grep -c '\.html$' "$list") HTML, $(grep -c '\.epub$' "$list") EPUB, $(grep -c '\.docx$' "$list") DOCX)"

venv=target/bench-venv
"$venv/bin/python" -c "import pypdf, bs4, lxml, docx, ebooklib" 2> /dev/null || {
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet pypdf beautifulsoup4 lxml python-docx ebooklib
}
"$venv/bin/pip" list 2> /dev/null | grep -iE '^(pypdf|beautifulsoup4|lxml|python-docx|ebooklib) '

cargo build --release --quiet -p ckeep
ck=target/release/ckeep
mkdir -p bench/results
for round in $(seq "$ROUNDS"); do
  echo "== round $round: ckeep"
  xargs -a "$list" -d '\n' "$ck" --quiet extract --stats --keep-going
  echo "== round $round: Python reference"
  "$venv/bin/python" bench/extract_reference.py run "$list" bench/results/extract-reference.json \
    2> bench/results/extract-reference.log
  "$venv/bin/python" - <<'PY'
import json
stats = json.load(open("bench/results/extract-reference.json"))["formats"]
print(f"{'format':<9} {'files':>6} {'failed':>6} {'MB in':>10} {'MB text':>10} {'pages':>7} {'seconds':>8} {'MB/s':>8} {'pages/s':>8}")
for name, s in sorted(stats.items()):
    secs = max(s["seconds"], 1e-9)
    pages = f"{s['pages'] / secs:.0f}" if s["pages"] else "-"
    print(f"{name:<9} {s['files']:>6} {s['failed']:>6} {s['bytes_in'] / 1e6:>10.2f} {s['bytes_out'] / 1e6:>10.2f} {s['pages']:>7} {s['seconds']:>8.2f} {s['bytes_in'] / 1e6 / secs:>8.2f} {pages:>8}")
PY
done
echo "== agreement (token F1 of ckeep's text against the reference's, files both read)"
xargs -a "$list" -d '\n' "$ck" --quiet --json extract --keep-going > bench/results/extract-ckeep.json
"$venv/bin/python" bench/extract_reference.py agree bench/results/extract-ckeep.json \
  bench/results/extract-reference.json
