#!/usr/bin/env bash
# Collects the runs behind the regression gate's error rates
# (docs/reports.md, "The gate's error rates"): K suite runs of one profile,
# each with veth-routing and veth-routing-cost (the same datapath plus a
# known per-packet cost) interleaved, into DIR/run-NN/. hack/gaterates then
# pairs runs of different suite invocations: same-build pairs (a datapath
# against itself in the next run) and injected pairs (veth-routing against
# veth-routing-cost in the next run).
#
#   hack/gaterates/collect.sh PROFILE K DIR [suite flags...]
#
# The suite flags should fix the shape (repeats, windows, CPU placement,
# wire, MTU) rather than take the profile's, which may change: the committed
# quick runs are reproduced by
#   hack/gaterates/collect.sh quick 60 /tmp/gate-quick --tests tcp_stream,tcp_rr,tcp_crr \
#     --flows 1 --repeat 5 --duration 200ms --warmup 100ms --pin none --wire nic --mtu 1500
# (hack/ci/gate.sh passes the same shape by default). Runs already in DIR
# (run-NN/results.json or .json.gz) are kept, so a collection is extended
# by asking for a larger K.
set -euo pipefail
profile=${1:?profile}; k=${2:?count}; dir=${3:?dir}; shift 3
# A private copy of the binary: a rebuild of bin/cnibench during the
# collection (a shared checkout) must not change what measures.
bin=$(mktemp /tmp/cnibench-collect.XXXXXX)
trap 'rm -f "$bin"' EXIT
cp "${CNIBENCH:-bin/cnibench}" "$bin"
echo "[$(date +%T)] $("$bin" version 2>/dev/null | head -1)"
mkdir -p "$dir"
for i in $(seq -w 0 $((k - 1))); do
  out=$dir/run-$i
  { [ -f "$out/results.json" ] || [ -f "$out/results.json.gz" ]; } && continue
  rm -rf "$out"
  echo "[$(date +%T)] run $i of $k (load $(cut -d' ' -f1 /proc/loadavg))"
  "$bin" suite --profile "$profile" --datapaths veth-routing,veth-routing-cost --no-baseline \
    --no-conntrack-scenario --out "$out" "$@" >"$dir/run-$i.log" 2>&1
done
echo "[$(date +%T)] done: $k runs in $dir"
