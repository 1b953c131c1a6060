#!/usr/bin/env bash
# e2e.sh: host snapshot -> up.sh -> smoke test (two pods on different nodes: pod-to-pod TCP over
# the pod IP, and through a ClusterIP service) -> down.sh -> host-state comparison.
# Exit status non-zero on any failure. Logs: $E2E_OUT (default /tmp/cnibench-local-cluster-e2e).
set -euo pipefail
export _t0=$(date +%s.%N)
source "$(dirname "$0")/lib.sh"
OUT=${E2E_OUT:-/tmp/cnibench-local-cluster-e2e}
rm -rf "$OUT"; mkdir -p "$OUT"
exec > >(tee "$OUT/e2e.log") 2>&1
result=1
clear_stale_cluster "e2e"   # before the snapshot: an interrupted run's leftovers are not this run's host state
"$LC_DIR/hoststate.sh" snapshot "$OUT/host-before"
trap "e2e_teardown 'e2e'" EXIT
"$LC_DIR/up.sh"
ts "cluster up"

# ---------- smoke test ----------
kc apply -f - <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: server, labels: {app: server}}
spec:
  nodeSelector: {kubernetes.io/hostname: n2}
  terminationGracePeriodSeconds: 1
  containers:
  - name: httpd
    image: cnibench.local/busybox:1
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "mkdir -p /www && echo hello-from-$(hostname) > /www/index.html && (tcpbench -l :9000 &) && exec httpd -f -p 8080 -h /www"]
    ports: [{containerPort: 8080}, {containerPort: 9000}]
    readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: server}
spec: {selector: {app: server}, ports: [{name: http, port: 80, targetPort: 8080}, {name: bench, port: 9000, targetPort: 9000}]}
---
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  nodeSelector: {kubernetes.io/hostname: n1}
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: cnibench.local/busybox:1
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "exec sleep 3600"]
YAML
kc wait --for=condition=Ready pod/server pod/client --timeout=90s || { kc describe pods; die "TIMEOUT (90s): pods not Ready"; }
kc get pods -o wide
ts "pods Ready"
sn=$(kc get pod server -o jsonpath='{.spec.nodeName}'); cn=$(kc get pod client -o jsonpath='{.spec.nodeName}')
[ "$sn" = n2 ] && [ "$cn" = n1 ] || die "pods not on different nodes (server $sn, client $cn)"
SIP=$(kc get pod server -o jsonpath='{.status.podIP}')
CIP=$(kc get svc server -o jsonpath='{.spec.clusterIP}')
# retry CMD for up to T seconds (bounded); busybox wget -T segfaults, so `timeout N wget`
retry() { local t=$1 start=$SECONDS; shift; until "$@"; do (( SECONDS - start < t )) || { echo "TIMEOUT (${t}s): $*"; return 1; }; sleep 1; done; }
check() { echo "== $1"; shift; "$@"; }
check "client(n1) -> server pod $SIP:8080 (HTTP, cross-node)" \
  retry 20 kc exec client -- timeout 5 wget -qO- "http://$SIP:8080/" | tee "$OUT/http-pod.txt"
grep -q hello-from-server "$OUT/http-pod.txt" || die "unexpected HTTP reply via pod IP"
check "client(n1) -> server pod $SIP:9000 (bulk TCP, 200 MiB)" kc exec client -- timeout 60 tcpbench -c "$SIP:9000" -mb 200
eps() { kc get endpointslices -l kubernetes.io/service-name=server -o jsonpath='{.items[0].endpoints[0].addresses[0]}' | grep -q .; }
check "service endpoints" waitfor "endpoints of service server" 30 eps
check "client(n1) -> ClusterIP $CIP:80 (HTTP)" \
  retry 30 kc exec client -- timeout 5 wget -qO- "http://$CIP/" | tee "$OUT/http-svc.txt"
grep -q hello-from-server "$OUT/http-svc.txt" || die "unexpected HTTP reply via ClusterIP"
check "client(n1) -> ClusterIP $CIP:9000 (bulk TCP, 200 MiB)" kc exec client -- timeout 60 tcpbench -c "$CIP:9000" -mb 200
check "client(n1) -> kubernetes service 10.96.0.1:443 (TCP connect)" \
  kc exec client -- sh -c 'echo | timeout 5 nc 10.96.0.1 443 && echo tcp-connect-ok'
kc logs server | grep '^server:' || true
ts "smoke test passed"
result=0
