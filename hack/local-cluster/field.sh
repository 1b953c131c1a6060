#!/usr/bin/env bash
# field.sh CNIBENCH OUTDIR [CNI...] : seed 002's comparison re-run on the real CNI field, in one
# command. For each CNI (default $FIELD_CNIS), in turn, holding the local cluster's lock:
#   host snapshot -> up.sh --cni CNI (the cnibench image imported) -> cni_verify (the datapath is
#   the one configured, by the CNI's own account) -> the suite on the cluster: pod-to-pod TCP and
#   UDP throughput (UDP's loss), tcp_rr, tcp_crr and HTTP, across nodes and on one node (--paths), against
#   the node-to-node baseline, with repeats, and every check (MTU, NetworkPolicy, encryption, the
#   CNI and its footprint idle and under load) -> down.sh -> host-state comparison (in full in OUTDIR/<cni>.host.txt, its verdict printed).
# A CNI that cannot run is recorded, never dropped: one this kernel lacks the link types for
# (cni_supported), one the harness does not know, one whose cluster did not come up or did not
# verify, the CNIs no build of which is served here ($FIELD_NOT_SERVED), and the configurations
# the harness has no mode for because the kernel lacks what they need, probed ($FIELD_KERNEL:
# Calico's IPIP, kube-router's IPVS service proxy). Each becomes a
# results file with no runs and a skipped entry labelled with it (docs/results.md), which the
# report lists under "Not measured" with the reason.
# Then one report puts the CNIs side by side: `cnibench report OUTDIR/<cni>/...` ->
# OUTDIR/field.{html,md,txt}. Exit 1 if any CNI that should run failed, else 0.
# Env: FIELD_SUITE_ARGS replaces the suite's shape (default below; with `--scenario egress-filter`
# the outside's denied and allowed servers are started and passed as --egress-denied/--egress-allowed;
# with `--load-balancer` the harness's controller gives LoadBalancer services addresses,
# lb-addresses.sh, and with `--load-balancer-external` the suite runs in the outside's netns, so
# that its external client reaches the address from beyond the nodes); FIELD_CNIS, FIELD_NOT_SERVED,
# FIELD_KERNEL. A CNI named NAME+kube-proxy-MODE is NAME with kube-proxy in MODE (iptables,
# nftables; lib.sh cni_load, README.md): its own entry, directory and row.
set -euo pipefail
export _t0=$(date +%s.%N)
BIN=$(realpath "${1:?usage: field.sh CNIBENCH OUTDIR [CNI...]}")
OUT=${2:?usage: field.sh CNIBENCH OUTDIR [CNI...]}; shift 2
LCD=$(cd "$(dirname "$0")" && pwd)
source "$LCD/lib.sh"
[ "$(id -u)" -eq 0 ] || die "needs root (the local cluster)"
# seed 002's field as far as this machine can build and run it (cni/README.md)
# (the WireGuard and GENEVE modes: recorded as not measured where the kernel lacks the link type)
FIELD_CNIS=${FIELD_CNIS:-flannel-vxlan calico-vxlan calico-nftables calico-bgp canal cilium120-vxlan cilium120-native kube-router flannel-wireguard cilium120-geneve cilium120-wireguard}
# name|mode|reason, one per line: CNIs of seed 002 no build of which the Go module proxy serves here
FIELD_NOT_SERVED=${FIELD_NOT_SERVED:-'weave|fastdp|Weave Net: the Go module proxy refuses every version (403), so it cannot be built here
antrea||Antrea: the Go module proxy refuses every version (403); it also needs Open vSwitch, which this kernel lacks'}
# name|mode|probe|what: configurations of seed 002's CNIs that the harness has no mode for because
# this kernel lacks what they need; probed (link:TYPE creates one in a scratch namespace,
# path:FILE looks for a file the kernel makes) and recorded as not measured with the probe's answer
FIELD_KERNEL=${FIELD_KERNEL:-'calico-ipip|ipip|link:ipip|Calico'"'"'s default encapsulation (manifests/calico.yaml: CALICO_IPV4POOL_IPIP Always) needs IPIP tunnels
kube-router-ipvs|ipvs service proxy|path:/proc/net/ip_vs|kube-router'"'"'s own service proxy (--run-service-proxy) needs IPVS'}
list=${*:-$FIELD_CNIS}
SUITE_ARGS=(${FIELD_SUITE_ARGS:---tests tcp_stream,udp_stream,tcp_rr,tcp_crr,http --paths same-node,cross-node --flows 1,8 --repeat 5 --duration 1s --warmup 250ms --seed 4242})
mkdir -p "$OUT"; OUT=$(realpath "$OUT")
# what measured: the harness's commit and the binary's version, as they were at the start (the tree
# may move on while the field runs)
START_COMMIT=$(git -C "$LCD" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$LCD" diff --quiet HEAD 2>/dev/null || START_COMMIT="$START_COMMIT (with uncommitted changes)"
BIN_VERSION=$("$BIN" version 2>/dev/null | head -1 || echo "cnibench: version unknown")
LOCK=/var/lock/cnibench-cluster.lock
REF=cnibench.local/cnibench:field
"$BIN" image build --binary "$BIN" --ref "$REF" --out "$OUT/image.tar" >/dev/null
"$LCD/deps.sh"

# not_measured NAME MODE REASON : OUTDIR/NAME/results.json, no runs, one skipped entry labelled
# with the CNI (docs/results.md, "A CNI that could not run").
not_measured() {
  mkdir -p "$OUT/$1"
  python3 - "$OUT/$1/results.json" "$1" "$2" "$3" "$("$BIN" version 2>/dev/null | awk '{print $2; exit}')" <<'PY'
import json, os, platform, socket, sys, datetime
path, cni, mode, reason, version = sys.argv[1:6]
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
cpu = ""
for line in open("/proc/cpuinfo"):
    if line.startswith("model name"):
        cpu = line.split(":", 1)[1].strip(); break
labels = {"cni": cni}
if mode:
    labels["cni_mode"] = mode
doc = {"schema": "cnibench/results/v1", "tool": {"name": "cnibench", "version": version or "unknown"},
       "start": now, "end": now,
       "host": {"hostname": socket.gethostname(), "kernel": platform.release(), "os": "linux", "cpu_model": cpu, "cores": os.cpu_count()},
       "config": {"backend": "kubernetes", "cluster": "local-2node", "cni": cni},
       "runs": [], "skipped": [{"labels": labels, "reason": "skipped: " + reason}]}
json.dump(doc, open(path, "w"), indent=2)
PY
  echo "field: $1: not measured: $3"
}

# row NAME LINE : NAME's line of field-summary.md, kept in OUTDIR/.rows so that a field measured
# in several invocations into one OUTDIR (`field.sh BIN OUT canal`, later) is summed up whole.
mkdir -p "$OUT/.rows"
row() { printf '%s\n' "$2" >"$OUT/.rows/$1"; }
failed=0
while IFS='|' read -r name mode reason; do
  [ -n "$name" ] && not_measured "$name" "$mode" "$reason" && row "$name" "| $name | not measured: $reason | 0 | — |"
done <<<"$FIELD_NOT_SERVED"
# kernel_lacks PROBE : prints why the kernel lacks what PROBE names (exit 0), or exit 1 if it has it
kernel_lacks() {
  local ns=${NS_PREFIX}fprobe$$ err
  case $1 in
    link:*)
      ip netns add "$ns" || { echo "cannot create the probe namespace $ns"; return 0; }
      err=$(ip -n "$ns" link add p0 type "${1#link:}" 2>&1); local rc=$?
      ip netns del "$ns"
      [ $rc -ne 0 ] || return 1
      echo "no ${1#link:} link type in this kernel (ip link add type ${1#link:}: $err)" ;;
    path:*) [ ! -e "${1#path:}" ] || return 1; echo "not in this kernel (no ${1#path:}; no loadable modules)" ;;
    *) echo "unknown probe $1"; return 0 ;;
  esac
}
while IFS='|' read -r name mode probe what; do
  [ -n "$name" ] || continue
  if why=$(kernel_lacks "$probe"); then
    not_measured "$name" "$mode" "$what: $why"; row "$name" "| $name | not measured: $what: $why | 0 | — |"
  else
    echo "field: $name: this kernel has what it needs ($probe), but the harness has no mode for it yet"
  fi
done <<<"$FIELD_KERNEL"
for c in $list; do
  t=$SECONDS
  if ! cni_known "$c"; then
    not_measured "$c" "" "$c: the local cluster's harness cannot install it yet (hack/local-cluster/cni/README.md)"
    row "$c" "| $c | not measured: not in the harness | 0 | — |"; continue
  fi
  cni_load "$c"
  if ! why=$(cni_supported); then
    not_measured "$c" "" "$c: $why"; row "$c" "| $c | not measured: $why | 0 | — |"; continue
  fi
  log=$OUT/$c.log rc=0
  rm -rf "${OUT:?}/$c" "$OUT/$c".*   # measured again: nothing of an earlier run stays
  # one cluster at a time on this machine: the whole up -> measure -> down under the lock
  flock -w 7200 "$LOCK" bash -c '
    set -euo pipefail
    source "$1/lib.sh"; cni_load "$2"
    OUT=$3 BIN=$4 REF=$5 c=$2; shift 5
    clear_stale_cluster "field: $c"   # before the snapshot: leftovers of an interrupted run are not host state
    "$LC_DIR/hoststate.sh" snapshot "$OUT/$c.host-before"
    trap '"'"'"$LC_DIR/down.sh" >"$OUT/$c.down.log" 2>&1 || echo "field: $c: down.sh failed (see $OUT/$c.down.log)";
          "$LC_DIR/hoststate.sh" snapshot "$OUT/$c.host-after";
          "$LC_DIR/hoststate.sh" compare "$OUT/$c.host-before" "$OUT/$c.host-after" >"$OUT/$c.host.txt" 2>&1; tail -1 "$OUT/$c.host.txt";
          rm -rf "$OUT/$c.host-before" "$OUT/$c.host-after"'"'"' EXIT
    IMAGES="$OUT/image.tar" "$LC_DIR/up.sh" --cni "$c" >"$OUT/$c.up.log" 2>&1 || { tail -30 "$OUT/$c.up.log"; echo "field: $c: the cluster did not come up"; exit 4; }
    cni_verify >"$OUT/$c.verify.txt" 2>&1 || { cat "$OUT/$c.verify.txt"; echo "field: $c: does not run as configured"; exit 5; }
    # the egress scenario filters traffic to the two servers outside the cluster (lib.sh outside_serve)
    # --load-balancer: lb-addresses.sh gives the LoadBalancer service its address (lib.sh lb_serve);
    # --load-balancer-external: cnibench runs in the outside (its external client there, the API
    # reached through n1), not in n1
    where=n1
    if [[ " $* " == *" --load-balancer "* ]]; then lb_serve >/dev/null; fi
    if [[ " $* " == *" --load-balancer-external "* ]]; then where=$OUTSIDE; fi
    if [[ " $* " == *" egress-filter "* || " $* " == *"=egress-filter "* ]]; then
      outside_serve "$BIN" >/dev/null
      set -- "$@" --egress-denied "$OUTSIDE_DENIED" --egress-allowed "$OUTSIDE_ALLOWED"
    fi
    innet "$where" "$BIN" suite --backend kubernetes --kubeconfig "$KUBECONFIG_ADMIN" --image "$REF" --image-pull-policy Never \
      --cni-conf-dir "$LC_STATE/{node}/cni" --kube-proxy-cgroup "$KUBE_PROXY_CGROUP" --cluster-name local-2node "$@" --out "$OUT/$c" >"$OUT/$c.suite.log" 2>&1 ||
      { tail -20 "$OUT/$c.suite.log"; echo "field: $c: the suite failed"; exit 6; }
  ' field "$LCD" "$c" "$OUT" "$BIN" "$REF" "${SUITE_ARGS[@]}" >"$log" 2>&1 || rc=$?
  s=$((SECONDS - t))
  host=$(grep -m1 -oE 'host state: (unchanged|CHANGED.*)' "$log" || echo "host state: not compared")
  case $rc in
    0) row "$c" "| $c | measured at $(date -u +%H:%M) | $s | ${host#host state: } |"; echo "field: $c: measured in $s s (${host})" ;;
    4|5) why=$(grep -m1 -oE 'field: .*' "$log" | sed 's/^field: //')
       [ -s "$OUT/$c/results.json" ] || not_measured "$c" "" "${why:-the cluster did not come up}"
       row "$c" "| $c | FAILED: $why | $s | ${host#host state: } |"; failed=1; echo "field: $c: $why" ;;
    *) row "$c" "| $c | FAILED (exit $rc; $c.log) | $s | ${host#host state: } |"; failed=1; echo "field: $c: FAILED (exit $rc; $log)" ;;
  esac
done
rm -f "$OUT/image.tar"

# the side-by-side report: every CNI's directory, measured or not
dirs=(); for d in "$OUT"/*/; do [ -s "$d/results.json" ] && dirs+=("$d"); done
if [ ${#dirs[@]} -ge 2 ]; then
  ok=1
  for f in html md txt; do "$BIN" report "${dirs[@]}" -o "$OUT/field.$f" || ok=0; done
  if [ $ok = 1 ]; then echo "field: report in $OUT/field.{html,md,txt}"; else echo "field: the side-by-side report failed (above)"; failed=1; fi
else
  echo "field: fewer than two results files, no side-by-side report"
fi
{
  echo "# field.sh on $(date -u +%Y-%m-%d): the harness at commit $START_COMMIT, $BIN_VERSION"
  echo
  echo "Machine: $(nproc) cores, kernel $(uname -r); Kubernetes $K8S_VERSION. Suite: ${SUITE_ARGS[*]}"
  echo
  echo "| CNI | result | s | host unchanged |"
  echo "|---|---|---|---|"
  cat "$OUT"/.rows/*
} >"$OUT/field-summary.md"
cat "$OUT/field-summary.md"
exit "$failed"
