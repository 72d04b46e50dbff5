# Sourced by .ci/run and scripts/test.sh: `phase NAME COMMAND…` runs COMMAND and records how long
# it took in $CKEEP_PHASES (a file; nothing is recorded without it), so a CI run ends with the
# time of each phase and the slow ones are found by measurement, not by guess.
phase() {
  local name=$1 start=$SECONDS status=0
  shift
  # A subshell with errexit, not `"$@" || …`: in that form bash ignores `set -e` inside a
  # function run as the command, so a failing step would not stop it.
  set +e
  (set -e; "$@")
  status=$?
  set -e
  if [ -n "${CKEEP_PHASES:-}" ]; then
    printf '%-34s %6d s%s\n' "$name" $((SECONDS - start)) \
      "$([ $status = 0 ] || echo "  (failed: exit $status)")" >> "$CKEEP_PHASES"
  fi
  return $status
}

# Prints the phases recorded so far, and the total since the file was made.
print_phases() {
  [ -n "${CKEEP_PHASES:-}" ] && [ -f "$CKEEP_PHASES" ] || return 0
  echo "--- phase times (wall clock, $(nproc) cores) ---"
  cat "$CKEEP_PHASES"
  local made
  made=$(stat -c %Y "$CKEEP_PHASES.start" 2> /dev/null || echo "")
  if [ -n "$made" ]; then
    printf '%-34s %6d s\n' "total" $(($(date +%s) - made))
  fi
}
