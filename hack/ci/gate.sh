#!/usr/bin/env bash
# The regression gate for a datapath change, as a CI job runs it
# (docs/ci.md): measure the change (this checkout) and its base with the lab
# suite, compare them, and fail on a significant slowdown.
#
#   hack/ci/gate.sh [--base-ref REF | --base-results FILE] [--profile P]
#                   [--shape measured|profile] [--rounds N] [--fail-on RULES]
#                   [--out DIR] [-- SUITE FLAGS...]
#
#   --base-ref REF        build cnibench at git REF (a worktree) and measure
#                         it on this machine, right before the change: the
#                         like-for-like comparison (same machine, same hour)
#   --base-results FILE   compare against a stored results.json instead (a
#                         previous run's artifact; compare notes when its
#                         machine differs)
#   --profile P           suite profile (default quick)
#   --shape S             how each cell is measured. measured (default): the
#                         shape the documented error rates were measured
#                         with (docs/reports.md), passed to the suite
#                         explicitly, so that a later change of the
#                         profile does not change what the gate runs:
#                           quick:    --repeat 5 --duration 200ms
#                                     --warmup 100ms --pin none --wire nic
#                                     --mtu 1500
#                           standard: --repeat 5 --duration 2s
#                                     --warmup 250ms --pin none --wire nic
#                                     --mtu 1500
#                         profile: none of these, the profile's own shape
#                         (its error rates are not measured; also what
#                         --backend kubernetes needs). SUITE FLAGS come
#                         after them and override any one, e.g. --repeat 12
#   --rounds N            alternate base and change N times (base, change,
#                         base, change, …) and pool each side's rounds: the
#                         intervals then hold the variation between runs,
#                         not only within one (default 3; docs/reports.md
#                         has the error rates of both)
#   --fail-on RULES       the gate's rules (default: "default" = worse>5%)
#   --out DIR             where results and the gate's outputs go
#                         (default cnibench-gate)
#   SUITE FLAGS           passed to both suites, e.g. --datapaths veth-routing
#
# Writes DIR/base-R/ and DIR/head-R/ per round (results, reports), DIR/gate.md (a
# pull-request comment), DIR/gate.xml (JUnit) and DIR/gate.txt (the terminal
# table), and exits with compare's status: 0 no regression, 1 regression
# (listed), 2 usage or input error; a failed build or suite exits 3.
# Needs root (the lab). Only namespaces the suites create are touched.
set -euo pipefail
cd "$(dirname "$0")/../.."
base_ref= base_results= profile=quick fail_on=default out=cnibench-gate rounds=3 shape=measured
while [ $# -gt 0 ]; do
  case $1 in
    --base-ref) base_ref=${2:?--base-ref needs a git ref}; shift 2 ;;
    --base-results) base_results=${2:?--base-results needs a file}; shift 2 ;;
    --profile) profile=${2:?--profile needs quick or standard}; shift 2 ;;
    --fail-on) fail_on=${2:?--fail-on needs rules}; shift 2 ;;
    --rounds) rounds=${2:?--rounds needs a count}; shift 2 ;;
    --shape) shape=${2:?--shape needs measured or profile}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,46p' "$0"; exit 0 ;;
    *) echo "gate: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -n "$base_ref" ] && [ -n "$base_results" ]; then
  echo "gate: give --base-ref or --base-results, not both" >&2; exit 2
fi
if [ -z "$base_ref" ] && [ -z "$base_results" ]; then
  echo "gate: give --base-ref REF (measure the base here) or --base-results FILE (a stored run)" >&2; exit 2
fi
case $rounds in ''|*[!0-9]*|0) echo "gate: --rounds $rounds: a count from 1" >&2; exit 2 ;; esac
if [ -n "$base_results" ] && [ ! -r "$base_results" ]; then
  echo "gate: --base-results $base_results: not readable" >&2; exit 2
fi
# The measured shape: the repeats, windows, CPU placement, wire and MTU of the
# committed runs behind docs/reports.md's error rates
# (docs/data/gate-rates-2026-11-25/*/run-*/results.json.gz, "config").
case $shape in
  measured)
    case $profile in
      quick) shape_flags=(--repeat 5 --duration 200ms --warmup 100ms --pin none --wire nic --mtu 1500) ;;
      standard) shape_flags=(--repeat 5 --duration 2s --warmup 250ms --pin none --wire nic --mtu 1500) ;;
      *) echo "gate: --profile $profile: quick or standard" >&2; exit 2 ;;
    esac
    prev=
    for a in "$@"; do
      case $prev/$a in
        --backend/lab|*/--backend=lab) ;;
        --backend/*|*/--backend=*)
          echo "gate: --shape measured is the lab's (--pin, --wire); with another --backend give --shape profile" >&2; exit 2 ;;
      esac
      prev=$a
    done ;;
  profile) shape_flags=() ;;
  *) echo "gate: --shape $shape: measured or profile" >&2; exit 2 ;;
esac
mkdir -p "$out"
out=$(cd "$out" && pwd)
go=${GO:-$(hack/ensure-go.sh)/go}
step() { echo "[gate $(date +%T)] $*" >&2; }
step "profile $profile, shape $shape${shape_flags[*]+ (${shape_flags[*]})}, $rounds round(s)"

step "building the change"
make --no-print-directory build GO="$go" >&2 || { echo "gate: building the change failed" >&2; exit 3; }
head_bin=$out/cnibench-head
cp bin/cnibench "$head_bin"

if [ -n "$base_ref" ]; then
  rev=$(git rev-parse --verify "$base_ref^{commit}" 2>/dev/null) || { echo "gate: --base-ref $base_ref: not a commit here" >&2; exit 2; }
  step "building the base $base_ref ($rev)"
  wt=$out/base-src
  git worktree remove --force "$wt" >/dev/null 2>&1 || rm -rf "$wt"
  git worktree add --detach "$wt" "$rev" >/dev/null 2>&1 || { echo "gate: git worktree add $rev failed" >&2; exit 3; }
  trap 'git worktree remove --force "$wt" >/dev/null 2>&1 || true' EXIT
  make --no-print-directory -C "$wt" build GO="$go" >&2 || { echo "gate: building the base $base_ref failed" >&2; exit 3; }
  cp "$wt/bin/cnibench" "$out/cnibench-base"
fi

# measure SIDE ROUND BIN [SUITE FLAGS]: one suite into DIR/SIDE-ROUND.
measure() {
  local side=$1 round=$2 bin=$3; shift 3
  rm -rf "$out/$side-$round"
  step "measuring the $side (round $round of $rounds)"
  "$bin" suite --profile "$profile" ${shape_flags[@]+"${shape_flags[@]}"} --out "$out/$side-$round" "$@" >"$out/$side-$round.log" 2>&1 ||
    { tail -5 "$out/$side-$round.log" >&2; echo "gate: the $side's suite failed (log: $out/$side-$round.log)" >&2; exit 3; }
}
base_list= head_list=
for r in $(seq 1 "$rounds"); do
  if [ -n "$base_ref" ]; then
    measure base "$r" "$out/cnibench-base" "$@"
    base_list=${base_list:+$base_list,}$out/base-$r/results.json
  fi
  measure head "$r" "$head_bin" "$@"
  head_list=${head_list:+$head_list,}$out/head-$r/results.json
done
[ -n "$base_ref" ] || base_list=$base_results

step "comparing"
rc=0
"$head_bin" compare --fail-on "$fail_on" --junit "$out/gate.xml" --markdown "$out/gate.md" \
  "$base_list" "$head_list" >"$out/gate.txt" || rc=$?
cat "$out/gate.txt"
case $rc in
  0) step "no regression past --fail-on $fail_on" ;;
  1) step "REGRESSION past --fail-on $fail_on (listed above; $out/gate.md)" ;;
  *) step "compare failed (exit $rc)" ;;
esac
exit $rc
