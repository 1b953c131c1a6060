#!/usr/bin/env bash
# suite-e2e.sh CNIBENCH E2E_TEST : the Kubernetes backend end to end on the local two-node cluster.
#   host snapshot -> a brief lab suite (to compare with) -> cnibench image build -> up.sh (image
#   imported) -> E2E_TEST (go test -c -tags e2e ./test/e2e) inside node n1's network namespace, where
#   the API lives: the suite over every path and check, Ctrl-C, crash + `cnibench k8s clean`, compare
#   -> down.sh -> host-state comparison (sysctls, mounts, links, cgroups, files).
# Non-zero exit on any failure. Output: $E2E_OUT (default /tmp/cnibench-k8s-e2e).
set -euo pipefail
export _t0=$(date +%s.%N)
BIN=$(realpath "${1:?usage: suite-e2e.sh CNIBENCH E2E_TEST}")
TEST=$(realpath "${2:?usage: suite-e2e.sh CNIBENCH E2E_TEST}")
source "$(dirname "$0")/lib.sh"
OUT=${E2E_OUT:-/tmp/cnibench-k8s-e2e}
rm -rf "$OUT"; mkdir -p "$OUT"
exec > >(tee "$OUT/e2e.log") 2>&1
result=1
"$LC_DIR/deps.sh"   # before the snapshot: packages are not host state the run must restore
"$LC_DIR/hoststate.sh" snapshot "$OUT/host-before"
trap "e2e_teardown 'suite e2e'" EXIT

# The lab run the cluster run is compared with: same tests, one datapath (and the baseline).
"$BIN" suite --datapaths veth-routing --no-conntrack-scenario --tests tcp_stream,tcp_rr,tcp_crr --flows 1 \
  --repeat 2 --duration 0.5s --warmup 0.1s --seed 4242 --out "$OUT/lab" >"$OUT/lab.log" 2>&1 ||
  { tail -20 "$OUT/lab.log"; die "the lab suite failed"; }
ts "lab suite done"

REF=cnibench.local/cnibench:e2e
"$BIN" image build --binary "$BIN" --ref "$REF" --out "$OUT/cnibench-image.tar"
ts "image built"
IMAGES="$OUT/cnibench-image.tar" "$LC_DIR/up.sh"
ts "cluster up"

cd "$OUT"
innet n1 env CNIBENCH_E2E_BIN="$BIN" CNIBENCH_E2E_KUBECONFIG="$KUBECONFIG_ADMIN" CNIBENCH_E2E_IMAGE="$REF" \
  CNIBENCH_E2E_CNI_CONF_DIR="$LC_STATE/{node}/cni" CNIBENCH_E2E_OUT="$OUT" CNIBENCH_E2E_LAB="$OUT/lab/results.json" \
  CNIBENCH_E2E_EXPECT_CNI=bridge \
  "$TEST" -test.v -test.count=1 -test.timeout 20m 2>&1 | tee "$OUT/go-test.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || die "the end-to-end test failed (see $OUT/go-test.log)"
ts "end-to-end test passed"
result=0
