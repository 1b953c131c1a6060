#!/usr/bin/env bash
# The measurement behind docs/interference.md's threshold: the quick
# profile (baseline and veth-routing) beside a CPU hog of known size, with
# the busy rule off (--busy-threshold 0) so that every repeat counts, each
# hog size in turn, ROUNDS times (sizes alternate, so that a drift of the
# machine is spread over all of them). Each run's results.json lands in
# OUT/hog-<cores>-r<round>/; compare them with
#   cnibench compare OUT/hog-0-r*/results.json… OUT/hog-<c>-r*/results.json…
# (hack/interference/summary.sh does it for every size).
#
#   hack/interference/measure.sh OUT [ROUNDS] [SIZES]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: measure.sh OUT [ROUNDS] [SIZES]}
rounds=${2:-2}
sizes=${3:-"0 0.25 0.5 1 1.5"}
bin=${BIN:-bin/cnibench}
go=${GO:-go}
mkdir -p "$out"
"$go" build -o "$out/hog" ./hack/interference/hog
hog=
trap '[ -n "$hog" ] && kill "$hog" 2>/dev/null; true' EXIT
for r in $(seq 1 "$rounds"); do
  for c in $sizes; do
    dir="$out/hog-$c-r$r"
    hog=
    if [ "$c" != 0 ]; then
      "$out/hog" -cores "$c" -for 30m &
      hog=$!
      sleep 1
    fi
    echo "measure: hog $c cores, round $r → $dir" >&2
    "$bin" suite --profile quick --datapaths baseline,veth-routing --busy-threshold 0 --out "$dir" \
      >"$dir.log" 2>&1 || { echo "measure: suite failed, see $dir.log" >&2; exit 1; }
    if [ -n "$hog" ]; then kill "$hog"; wait "$hog" 2>/dev/null || true; hog=; fi
    grep -m1 'idle load' "$dir.log" >&2 || true
  done
done
