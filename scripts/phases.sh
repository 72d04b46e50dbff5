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

# `lanes FUNCTION…` runs each function in a lane of its own, all at once, each lane's output
# kept in target/lane-FUNCTION.log and printed whole when the lane ends; fails (after all have
# ended) when one did.
lanes() {
  local pids=() names=() status=0 i
  mkdir -p target
  for name in "$@"; do
    ( set -e; "$name" ) > "target/lane-$name.log" 2>&1 &
    pids+=($!)
    names+=("$name")
  done
  for i in "${!pids[@]}"; do
    if wait "${pids[$i]}"; then
      echo "--- lane ${names[$i]}: passed ---"
    else
      echo "--- lane ${names[$i]}: FAILED ---"
      status=1
    fi
    cat "target/lane-${names[$i]}.log"
  done
  return $status
}
