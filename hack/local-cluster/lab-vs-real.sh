#!/usr/bin/env bash
# lab-vs-real.sh CNIBENCH OUTDIR [CNI...] : the data of docs/findings.md section 12 (the lab's models
# against the real CNIs, and seed 000 on real Cilium), reproducible on any machine that runs the
# local cluster. For each CNI (default: flannel-host-gw flannel-vxlan cilium-native-legacy
# cilium-native), in turn, nothing else running:
#   up.sh --cni CNI -> the suite on the cluster (tests, flows, repeats, windows and seed below; every
#   path and check) -> down.sh -> host-state comparison -> the lab suite on the datapath that models
#   the CNI (cni/README.md LAB_MODEL) with the same tests, on the lab's bare-veth wire (the cluster's
#   nodes are joined by a veth pair) and MTU 1500.
# flannel-vxlan-mtu1500 is flannel-vxlan with the pods' MTU set to 1500 by hand in its CNI
# configuration (50 bytes too large under VXLAN): the MTU check must call it misconfigured, and
# the comparison with flannel-vxlan prices it.
# Output: OUTDIR/k8s-<CNI>/ and OUTDIR/lab-<MODEL>/ (results.json, report.md), OUTDIR/tables.md
# (lab-vs-real-tables.py: the findings' tables and their verdict rule), OUTDIR/compare-*.txt:
#   compare --by datapath of each file (every path against its node-to-node baseline) and
#   compare --match path,test,flows of each model's lab run against its CNI's cluster run.
set -euo pipefail
export _t0=$(date +%s.%N)
BIN=$(realpath "${1:?usage: lab-vs-real.sh CNIBENCH OUTDIR [CNI...]}")
OUT=${2:?usage: lab-vs-real.sh CNIBENCH OUTDIR [CNI...]}; shift 2
CNIS_RUN=${*:-flannel-host-gw flannel-vxlan flannel-vxlan-mtu1500 cilium-native-legacy cilium-native}
source "$(dirname "$0")/lib.sh"
mkdir -p "$OUT"; OUT=$(realpath "$OUT")
COMMON=(--tests tcp_stream,tcp_rr,tcp_crr --flows 1,8 --repeat 5 --duration 1s --warmup 0.25s --seed 4242)
REF=cnibench.local/cnibench:lvr
"$BIN" image build --binary "$BIN" --ref "$REF" --out "$OUT/image.tar" >/dev/null
"$LC_DIR/deps.sh"
declare -A models=()
for c in $CNIS_RUN; do
  name=$c; mtu=""
  [ "$c" = flannel-vxlan-mtu1500 ] && { c=flannel-vxlan; mtu=1500; }
  cni_load "$c"; [ -n "$mtu" ] || models[$LAB_MODEL]=1
  clear_stale_cluster "lab-vs-real: $name"   # before the snapshot: an interrupted run's leftovers are not this run's host state
  "$LC_DIR/hoststate.sh" snapshot "$OUT/host-before"
  FLANNEL_DELEGATE_MTU=$mtu IMAGES="$OUT/image.tar" "$LC_DIR/up.sh" --cni "$c" >"$OUT/up-$name.log" 2>&1 || { tail -30 "$OUT/up-$name.log"; "$LC_DIR/down.sh"; die "$name did not come up"; }
  ts "$name up"
  cni_verify >"$OUT/verify-$name.txt" 2>&1 || { cat "$OUT/verify-$name.txt"; "$LC_DIR/down.sh"; die "$name does not run as configured"; }
  rc=0 args=("${COMMON[@]}")
  [ -n "$mtu" ] && args=(--tests tcp_stream --flows 1,8 --repeat 5 --duration 1s --warmup 0.25s --seed 4242 --checks cni,mtu)
  innet n1 "$BIN" suite --backend kubernetes --kubeconfig "$KUBECONFIG_ADMIN" --image "$REF" --image-pull-policy Never \
    --cni-conf-dir "$LC_STATE/{node}/cni" --cluster-name local-2node "${args[@]}" --out "$OUT/k8s-$name" >"$OUT/k8s-$name.log" 2>&1 || rc=$?
  ts "$name measured (exit $rc)"
  "$LC_DIR/down.sh" >"$OUT/down-$name.log" 2>&1
  "$LC_DIR/hoststate.sh" snapshot "$OUT/host-after"
  "$LC_DIR/hoststate.sh" compare "$OUT/host-before" "$OUT/host-after" >"$OUT/host-$name.txt" 2>&1; tail -1 "$OUT/host-$name.txt"
  rm -rf "$OUT/host-before" "$OUT/host-after"
  [ $rc -eq 0 ] || { tail -20 "$OUT/k8s-$name.log"; die "the suite on $name failed"; }
done
for m in "${!models[@]}"; do
  "$BIN" suite --datapaths "$m" --no-conntrack-scenario --wire veth --mtu 1500 "${COMMON[@]}" --out "$OUT/lab-$m" >"$OUT/lab-$m.log" 2>&1 ||
    { tail -20 "$OUT/lab-$m.log"; die "the lab suite on $m failed"; }
  ts "lab $m measured"
done
if [ -d "$OUT/k8s-flannel-vxlan-mtu1500" ] && [ -d "$OUT/k8s-flannel-vxlan" ]; then
  "$BIN" compare --match path,test,flows "$OUT/k8s-flannel-vxlan/results.json" "$OUT/k8s-flannel-vxlan-mtu1500/results.json" >"$OUT/compare-k8s-flannel-vxlan-mtu-1450-vs-1500.txt"
fi
for c in $CNIS_RUN; do
  [ "$c" = flannel-vxlan-mtu1500 ] && continue
  cni_load "$c"
  "$BIN" compare --by datapath "$OUT/k8s-$c/results.json" >"$OUT/compare-k8s-$c-by-datapath.txt"
  "$BIN" compare --match path,test,flows "$OUT/lab-$LAB_MODEL/results.json" "$OUT/k8s-$c/results.json" >"$OUT/compare-lab-$LAB_MODEL-vs-k8s-$c.txt"
done
# seed 000 on the real agent and in the lab: eBPF host routing against legacy host routing
if [ -d "$OUT/k8s-cilium-native-legacy" ] && [ -d "$OUT/k8s-cilium-native" ]; then
  "$BIN" compare --match path,test,flows "$OUT/k8s-cilium-native-legacy/results.json" "$OUT/k8s-cilium-native/results.json" >"$OUT/compare-k8s-cilium-legacy-vs-ebpf.txt"
  "$BIN" compare --match path,test,flows "$OUT/lab-veth-routing/results.json" "$OUT/lab-ebpf-host-routing/results.json" >"$OUT/compare-lab-veth-routing-vs-ebpf-host-routing.txt"
fi
for m in "${!models[@]}"; do "$BIN" compare --by datapath "$OUT/lab-$m/results.json" >"$OUT/compare-lab-$m-by-datapath.txt"; done
python3 "$LC_DIR/lab-vs-real-tables.py" "$BIN" "$OUT" >"$OUT/tables.md"
rm -f "$OUT/image.tar"
ts "done: $OUT"
