#!/usr/bin/env bash
# scale-on-cnis.sh CNIBENCH OUTDIR : the data of docs/findings.md section 12's scale part, on the real
# CNIs of the local cluster, one CNI up at a time, nothing else running:
#   cilium-native-legacy (kube-proxy replacement): the egress-filter scenario with the cluster's own
#     policy objects (NetworkPolicy, CiliumClusterwideNetworkPolicy) from 10 to 100 000 CIDRs
#     (seed 004), and the services scenario at 1, 1 000 and 10 000 services (seed 003);
#   cilium-native-kube-proxy (the same but kube-proxy in iptables mode): the services scenario;
#   flannel-vxlan: the egress-filter scenario's NetworkPolicy (not enforced: recorded with evidence).
# Output: OUTDIR/<cni>-<scenario>/ (results.json, report.md), OUTDIR/compare-*.txt.
set -euo pipefail
export _t0=$(date +%s.%N)
BIN=$(realpath "${1:?usage: scale-on-cnis.sh CNIBENCH OUTDIR}")
OUT=${2:?usage: scale-on-cnis.sh CNIBENCH OUTDIR}
source "$(dirname "$0")/lib.sh"
mkdir -p "$OUT"; OUT=$(realpath "$OUT")
REF=cnibench.local/cnibench:scale
"$BIN" image build --binary "$BIN" --ref "$REF" --out "$OUT/image.tar" >/dev/null
COMMON=(--repeat 3 --duration 1s --warmup 0.25s --seed 4242 --checks none --cluster-scale)
EGRESS=(--scenario egress-filter --rules "${RULES:-10,1000,10000,100000}" --policy-wait 3m)
SERVICES=(--scenario services --services "${SERVICES:-1,1000,10000}")
measure() { # CNI NAME ARGS...
  local c=$1 name=$2 rc=0; shift 2
  innet n1 "$BIN" suite --backend kubernetes --kubeconfig "$KUBECONFIG_ADMIN" --image "$REF" --image-pull-policy Never \
    --cni-conf-dir "$LC_STATE/{node}/cni" --cluster-name local-2node "${COMMON[@]}" "$@" --out "$OUT/$c-$name" >"$OUT/$c-$name.log" 2>&1 || rc=$?
  ts "$c $name (exit $rc)"; [ $rc -eq 0 ] || tail -5 "$OUT/$c-$name.log"
}
for c in ${CNIS_RUN:-cilium-native-legacy cilium-native-kube-proxy flannel-vxlan}; do
  cni_load "$c"
  "$LC_DIR/hoststate.sh" snapshot "$OUT/host-before"
  IMAGES="$OUT/image.tar" "$LC_DIR/up.sh" --cni "$c" >"$OUT/up-$c.log" 2>&1 || { tail -30 "$OUT/up-$c.log"; "$LC_DIR/down.sh"; die "$c did not come up"; }
  cni_verify >"$OUT/verify-$c.txt" 2>&1 || { cat "$OUT/verify-$c.txt"; "$LC_DIR/down.sh"; die "$c does not run as configured"; }
  case $c in
    cilium-native-legacy) measure "$c" egress "${EGRESS[@]}" --mechanisms none,networkpolicy,cilium-policy
                          measure "$c" services "${SERVICES[@]}" ;;
    cilium-native-kube-proxy) measure "$c" services "${SERVICES[@]}" ;;
    flannel-vxlan) measure "$c" egress "${EGRESS[@]}" --rules 10,1000 --mechanisms none,networkpolicy --policy-wait 20s ;;
  esac
  "$LC_DIR/down.sh" >"$OUT/down-$c.log" 2>&1
  "$LC_DIR/hoststate.sh" snapshot "$OUT/host-after"
  "$LC_DIR/hoststate.sh" compare "$OUT/host-before" "$OUT/host-after" | tail -1
  rm -rf "$OUT/host-before" "$OUT/host-after"
done
[ -f "$OUT/cilium-native-legacy-egress/results.json" ] &&
  "$BIN" compare --by mechanism --baseline none "$OUT/cilium-native-legacy-egress/results.json" >"$OUT/compare-egress-by-mechanism.txt" || true
[ -f "$OUT/cilium-native-legacy-services/results.json" ] && [ -f "$OUT/cilium-native-kube-proxy-services/results.json" ] &&
  "$BIN" compare --match scenario,implementation,services,test,flows "$OUT/cilium-native-kube-proxy-services/results.json" \
    "$OUT/cilium-native-legacy-services/results.json" >"$OUT/compare-services-kube-proxy-vs-replacement.txt" || true
rm -f "$OUT/image.tar"
ts "done: $OUT"
