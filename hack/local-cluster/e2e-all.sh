#!/usr/bin/env bash
# e2e-all.sh CNIBENCH E2E_TEST [CNI...] : `make e2e-all`: suite-e2e.sh for every CNI the harness
# knows (lib.sh CNIS), or the ones named (a name may end in +kube-proxy-MODE: README.md), in turn, each with every test it can run (E2E_SET=all),
# whatever the one before did; each CNI built once and cached by version (build-cni.sh). Ends with
# a summary — CNI, version, mode, result (passed, failed, or skipped with the reason), the Go tests
# passed/failed/skipped, seconds, host unchanged — printed and written with the commit it ran on to
# $E2E_ALL_OUT/summary.md (default /tmp/cnibench-k8s-e2e/summary.md; docs/kubernetes.md says where
# to commit it). Exit 1 if any CNI failed, else 0. Each CNI's logs: $E2E_ALL_OUT/<cni>/.
set -euo pipefail
BIN=$(realpath "${1:?usage: e2e-all.sh CNIBENCH E2E_TEST [CNI...]}")
TEST=$(realpath "${2:?usage: e2e-all.sh CNIBENCH E2E_TEST [CNI...]}")
shift 2
LCD=$(cd "$(dirname "$0")" && pwd)
source "$LCD/lib.sh"
list=${*:-$CNIS}
for c in $list; do cni_known "$c" || die "e2e-all: unknown CNI $c (want some of: $CNIS, optionally with ${KUBE_PROXY_SUFFIX}MODE)"; done
OUTD=${E2E_ALL_OUT:-/tmp/cnibench-k8s-e2e}
mkdir -p "$OUTD"
commit=$(git -C "$LCD" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$LCD" diff --quiet HEAD 2>/dev/null || commit="$commit (with uncommitted changes)"
rows=() failed=0 t_all=$SECONDS
for c in $list; do
  t=$SECONDS rc=0
  E2E_SET=all E2E_OUT="$OUTD/$c" "$LCD/suite-e2e.sh" --cni "$c" "$BIN" "$TEST" 2>&1 | tee "$OUTD/$c.console" || rc=${PIPESTATUS[0]}
  s=$((SECONDS - t))
  log=$OUTD/$c/e2e.log gotest=$OUTD/$c/go-test.log
  # version and mode as the family script gives them (after the run: Debian packages installed)
  vm=$( (cni_load "$c" >/dev/null 2>&1; printf '%s\t%s' "${CNI_VERSION:-?}" "${CNI_MODE:-?}") ) || vm=$'?\t?'
  ver=${vm%%$'\t'*} mode=${vm#*$'\t'}
  tests="—"
  if [ -s "$gotest" ]; then
    tests="$(grep -c -- '^--- PASS' "$gotest" || true)/$(grep -c -- '^--- FAIL' "$gotest" || true)/$(grep -c -- '^--- SKIP' "$gotest" || true)"
  fi
  host="not compared"
  if [ -f "$log" ]; then
    if grep -q '^host state: unchanged' "$log"; then host=yes; elif grep -q '^host state: CHANGED' "$log"; then host=NO; fi
  fi
  case $rc in
    0) res=passed ;;
    "$SKIP_EXIT") res="skipped: $(grep -m1 -o 'skipped: .*' "$OUTD/$c.console" 2>/dev/null | sed 's/^skipped: //' || true)"
       [ "$res" != "skipped: " ] || res="skipped (this kernel cannot run it)" ;;
    *) why=$(grep -E '^(ERROR|FAIL):' "$OUTD/$c.console" 2>/dev/null | head -1 || true)
       res="FAILED (exit $rc${why:+: $why})"; failed=1 ;;
  esac
  rows+=("| $c | $ver | $mode | $res | $tests | $s | $host |")
  echo "e2e-all: $c: $res in $s s"
done
{
  echo "# make e2e-all on $(date -u +%Y-%m-%d) at commit $commit"
  echo
  echo "Machine: $(nproc) cores, kernel $(uname -r); Kubernetes $K8S_VERSION. Tests: Go tests passed/failed/skipped."
  echo
  echo "| CNI | version | mode | result | tests | s | host unchanged |"
  echo "|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Total: $((SECONDS - t_all)) s."
} >"$OUTD/summary.md"
echo
cat "$OUTD/summary.md"
echo "e2e-all: summary in $OUTD/summary.md"
exit "$failed"
