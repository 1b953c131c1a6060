#!/usr/bin/env bash
# suite-e2e.sh [--cni NAME] CNIBENCH E2E_TEST : the Kubernetes backend end to end on the local
# two-node cluster with CNI NAME (default bridge; lib.sh CNIS, or one with +kube-proxy-MODE: the
# tests of the CNI without the suffix, its output in a directory of its own).
#   host snapshot -> a brief lab suite on the lab datapath that models the CNI (to compare with)
#   -> cnibench image build -> up.sh --cni NAME (image imported) -> host state while it runs ->
#   E2E_TEST (go test -c -tags e2e ./test/e2e) inside node n1's network namespace, where the API
#   lives (on a CNI that keeps kube-proxy, inside the outside's, which reaches the API through n1
#   and LoadBalancer addresses from beyond the nodes): the suite over every path and check, the scale scenarios, compare (and, with bridge,
#   Ctrl-C, crash + `cnibench k8s clean`, RBAC) -> down.sh -> host-state comparison (sysctls, mounts,
#   links, cgroups, BPF on the host's cgroup root, files).
# Non-zero exit on any failure. Output: $E2E_OUT (default /tmp/cnibench-k8s-e2e/NAME).
set -euo pipefail
export _t0=$(date +%s.%N)
CNI=bridge
if [ "${1:-}" = --cni ]; then CNI=${2:?--cni needs a name}; shift 2; fi
BIN=$(realpath "${1:?usage: suite-e2e.sh [--cni NAME] CNIBENCH E2E_TEST}")
TEST=$(realpath "${2:?usage: suite-e2e.sh [--cni NAME] CNIBENCH E2E_TEST}")
source "$(dirname "$0")/lib.sh"
cni_load "$CNI"
if ! why=$(cni_supported); then echo "suite e2e ($CNI_NAME): skipped: $why"; exit $SKIP_EXIT; fi
OUT=${E2E_OUT:-/tmp/cnibench-k8s-e2e/$CNI_NAME}
rm -rf "$OUT"; mkdir -p "$OUT"
exec > >(tee "$OUT/e2e.log") 2>&1
result=1
"$LC_DIR/deps.sh" $CNI_DEPS   # before the snapshot: packages are not host state the run must restore
clear_stale_cluster "suite e2e ($CNI_NAME)"   # before the snapshot: an interrupted run's leftovers are not this run's host state
"$LC_DIR/hoststate.sh" snapshot "$OUT/host-before"
trap "e2e_teardown 'suite e2e ($CNI_NAME)'" EXIT

# The lab run the cluster run is compared with: same tests, the datapath that models this CNI (and
# the baseline).
"$BIN" suite --datapaths "$LAB_MODEL" --no-conntrack-scenario --tests tcp_stream,tcp_rr,tcp_crr --flows 1 \
  --repeat 2 --duration 0.5s --warmup 0.1s --seed 4242 --out "$OUT/lab" >"$OUT/lab.log" 2>&1 ||
  { tail -20 "$OUT/lab.log"; die "the lab suite failed"; }
ts "lab suite done"

REF=cnibench.local/cnibench:e2e
"$BIN" image build --binary "$BIN" --ref "$REF" --out "$OUT/cnibench-image.tar"
ts "image built"
IMAGES="$OUT/cnibench-image.tar" "$LC_DIR/up.sh" --cni "$CNI_NAME"
ts "cluster up ($CNI_NAME)"
"$LC_DIR/hoststate.sh" during "$OUT/host-before" "$OUT/host-during" || die "the cluster changed the host while it runs"
cni_verify || die "$CNI_NAME does not run as configured"
outside_serve "$BIN"   # the egress scenario's servers outside the cluster (lib.sh outside_net)
lb_serve               # LoadBalancer services' addresses (lib.sh LB_POOL, lb-addresses.sh)
# From beyond the nodes too (external-to-loadbalancer) where kube-proxy serves the address from n1's
# ext0, i.e. on every CNI that keeps kube-proxy: the tests then run in the outside's netns (the API
# reached through n1). Cilium takes it from the outside only with ext0 among its devices
# (cni/cilium.sh CILIUM_DEVICES), which the e2e leaves at eth0.
where=n1 lbx=0
if [ "$CNI_KUBE_PROXY" = yes ]; then where=$OUTSIDE lbx=1; fi
# The CNI-independent tests (interrupt, crash, RBAC) run once, with bridge; the CPU profile runs
# on every CNI (a real CNI's flamegraph next to its lab model's); the managed-cluster run also on
# flannel-vxlan, a CNI with a version, so that one run asserts the whole identity.
# E2E_SET=ci (make e2e, CI's slice: bridge and cilium-vxlan): bridge skips the tests the real CNI
# runs after it (the suite, its CPU profile, the egress scenario), so that each test runs once;
# E2E_SET=all (make e2e-all, the default here): every test each CNI can run.
skip=""
case $CNI in
  bridge) run=""; [ "${E2E_SET:-all}" = ci ] && skip='^(TestSuiteOnCluster|TestCPUProfileOnCluster|TestEgressScenarioOnCluster)$' ;;
  bridge-dual) run='^TestDualStackOnCluster$' ;;
  flannel-vxlan) run='^(TestSuiteOnCluster|TestCPUProfileOnCluster|TestEgressScenarioOnCluster|TestServicesScenarioOnCluster|TestManagedClusterOnCluster)$' ;;
  *) run='^(TestSuiteOnCluster|TestCPUProfileOnCluster|TestEgressScenarioOnCluster|TestServicesScenarioOnCluster)$' ;;
esac
run=${E2E_RUN:-$run} # E2E_RUN=REGEX: only these tests (while working on one)
[ -z "${E2E_RUN:-}" ] || skip=""
[ -z "$skip" ] || echo "suite e2e ($CNI_NAME): E2E_SET=ci: skipping $skip (the real CNI's run has them)"

cd "$OUT"
innet "$where" env CNIBENCH_E2E_BIN="$BIN" CNIBENCH_E2E_KUBECONFIG="$KUBECONFIG_ADMIN" CNIBENCH_E2E_IMAGE="$REF" \
  CNIBENCH_E2E_CNI_CONF_DIR="$LC_STATE/{node}/cni" CNIBENCH_E2E_OUT="$OUT" CNIBENCH_E2E_LAB="$OUT/lab/results.json" \
  CNIBENCH_E2E_EXPECT_CNI="$CNI" CNIBENCH_E2E_EXPECT_CNI_VERSION="$CNI_VERSION" CNIBENCH_E2E_EGRESS_DENIED="$OUTSIDE_DENIED" CNIBENCH_E2E_EGRESS_ALLOWED="$OUTSIDE_ALLOWED" \
  CNIBENCH_E2E_LB_POOL="$LB_POOL." CNIBENCH_E2E_LB_EXTERNAL=$lbx \
  CNIBENCH_E2E_KUBE_PROXY_CGROUP="$KUBE_PROXY_CGROUP" CNIBENCH_E2E_EXPECT_KUBE_PROXY_MODE="$KUBE_PROXY_MODE" \
  "$TEST" -test.v -test.count=1 -test.timeout 20m ${run:+-test.run "$run"} ${skip:+-test.skip "$skip"} 2>&1 | tee "$OUT/go-test.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || die "the end-to-end test failed (see $OUT/go-test.log)"
"$LC_DIR/hoststate.sh" during "$OUT/host-before" "$OUT/host-during-2" || die "the cluster changed the host while it ran"
ts "end-to-end test passed ($CNI_NAME)"
result=0
