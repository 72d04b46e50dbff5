# Sourced by the Python-driven test scripts: one venv under target/ for all of them, so the
# packages are installed once. `test_venv MODULES -- REQUIREMENTS…` makes sure the venv exists
# and that every module imports, installing the requirements if one does not.
venv=target/python-venv
test_venv() {
  local modules=$1
  shift 2
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -c "import $modules" 2>/dev/null || "$venv/bin/pip" install --quiet "$@"
}
