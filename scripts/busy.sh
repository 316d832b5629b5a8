#!/usr/bin/env bash
# The whole suite N times in a row (default 3) beside a CPU hog, as CI's 2-core
# machine may be: each run is `bash .ci/run` (it sets CI=true) in a fresh clone of this
# checkout's HEAD. Stops at the first failing run. Prints each run's time and the
# load average; every run's output is kept under the directory it names.
# Usage: bash scripts/busy.sh [N]
set -uo pipefail
cd "$(dirname "$0")/.."

runs=${1:-3}
commit=$(git rev-parse HEAD)
work=$(mktemp -d /tmp/zsn-busy.XXXXXX)
chmod 755 "$work"  # the suite runs some commands as nobody, from the clone
echo "busy: $runs run(s) of $commit beside a CPU hog; output in $work"

python3 -c 'while True: pass' &
hog=$!
trap 'kill "$hog" 2>/dev/null' EXIT

for run in $(seq 1 "$runs"); do
    clone="$work/clone"
    rm -rf "$clone"
    git clone -q "$PWD" "$clone" && git -C "$clone" checkout -q "$commit" || exit 1
    started=$(date +%s)
    (cd "$clone" && bash .ci/run) >"$work/run$run.log" 2>&1
    status=$?
    seconds=$(($(date +%s) - started))
    summary=$(grep -E '[0-9]+ (passed|failed)' "$work/run$run.log" | tail -1)
    printf 'run %d: exit %d, %dm%02ds, load %s; %s\n' "$run" "$status" \
        $((seconds / 60)) $((seconds % 60)) "$(cut -d' ' -f1-3 /proc/loadavg)" "$summary"
    kill -0 "$hog" 2>/dev/null || { echo "busy: the hog died" >&2; exit 1; }
    [ "$status" -eq 0 ] || exit "$status"
done
