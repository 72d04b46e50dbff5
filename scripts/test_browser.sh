#!/usr/bin/env bash
# The playground's browser tests (tests/browser): headless Chromium and chromedriver from
# Debian (installed with apt-get, as root or through sudo), Selenium in the Python test venv,
# against target/debug/ckeep (no second build). Screenshots: target/playground-screenshots/.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium > /dev/null || ! command -v chromedriver > /dev/null; then
  sudo=$([ "$(id -u)" = 0 ] || echo sudo)
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver > /dev/null
fi
scripts/build.sh
source scripts/test_venv.sh
test_venv "pytest, selenium" -- "pytest>=7" "selenium>=4.10"
CKEEP_BIN="$PWD/target/debug/ckeep" "$venv/bin/python" -m pytest -q tests/browser "$@"
