#!/usr/bin/env bash
# lb-addresses.sh: the local cluster's load-balancer address controller, started by lib.sh
# lb_serve (a daemon, stopped by down.sh). It does what a cloud's controller does for a Service of
# type LoadBalancer, less the load balancer: it writes an address into the service's
# status.loadBalancer.ingress, from LB_POOL (lib.sh: 198.19.0.1 to .254, RFC 2544's benchmark
# range, used nowhere else here), the next one each time, and nothing else. kube-proxy (iptables
# and nftables) and Cilium's kube-proxy replacement then program that address as the service's
# LoadBalancer frontend, as they would a cloud's; Cilium's own LB IPAM stays dormant (no
# CiliumLoadBalancerIPPool exists), so one controller serves every CNI.
# A service with spec.loadBalancerClass is another controller's and is left alone; a service that
# has an address keeps it. It reads the services through one watch (no polling: idle between
# events), re-opened when the API server ends it; the first line it reads writes
# $LOGS/lb-addresses.ready.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
next=1
# down.sh's SIGTERM reaches this shell only: take the watching kubectl along (lib.sh start runs the
# daemon as its own process group's leader)
trap 'trap - TERM INT; kill -- -$$ 2>/dev/null; exit 0' TERM INT
assign() {
  local ns=$1 name=$2 ip try
  ip="$LB_POOL.$next"
  next=$(( next % 254 + 1 ))
  for try in 1 2 3 4 5; do
    if kc -n "$ns" patch service "$name" --subresource=status --type=merge --request-timeout=10s \
        -p "{\"status\":{\"loadBalancer\":{\"ingress\":[{\"ip\":\"$ip\"}]}}}" >/dev/null; then
      echo "$(date -u +%FT%TZ) $ns/$name: $ip"
      return 0
    fi
    sleep "$try"
  done
  echo "$(date -u +%FT%TZ) $ns/$name: the status patch failed 5 times; left without an address" >&2
}
fields='{.metadata.namespace}|{.metadata.name}|{.spec.type}|{.spec.loadBalancerClass}|{.status.loadBalancer.ingress[*].ip}{"\n"}'
while :; do
  while IFS='|' read -r ns name type class ips; do
    # the first line (the list always holds default/kubernetes): the watch is open (lib.sh lb_serve)
    [ -e "$LOGS/lb-addresses.ready" ] || echo watching >"$LOGS/lb-addresses.ready"
    [ "$type" = LoadBalancer ] && [ -z "$class" ] && [ -z "$ips" ] || continue
    assign "$ns" "$name"
  done < <(kc get services --all-namespaces --watch --request-timeout=0 -o "jsonpath=$fields" || true)
  sleep 1
done
