# cni/kube-router.sh: kube-router $KUBE_ROUTER_VERSION as a DaemonSet in kube-system, configured as
# its daemonset/kubeadm-kuberouter.yaml configures it: --run-router=true (the pods' subnets
# routed between the nodes over iBGP by its embedded GoBGP: a full mesh of the nodes, AS 64512;
# no BIRD), --run-firewall=true (NetworkPolicy through iptables and ipset),
# --run-service-proxy=false (its proxy needs IPVS, which this kernel lacks: kube-proxy stays,
# iptables mode), --bgp-graceful-restart=true; the CNI configuration the manifest installs (the
# bridge plugin, bridge "kube-bridge", host-local IPAM), into which kube-router inserts the node's
# podCIDR. Built here from the Go module proxy (build-cni.sh kube-router) with the gobgp CLI its
# Makefile pins. One mode: kube-router.
#
# A TEST FIXTURE OF THIS LOCAL CLUSTER ONLY: nothing ships it. v2.1.0 is the only version the Go
# module proxy serves, and security advisories are reported against it; it runs only inside the
# node network namespaces of hack/local-cluster, for minutes.
#
# What differs from the manifest, and why:
# - no install-cni init container: cni_node_conf writes the manifest's cni-conf.json (with this
#   node's host-local dataDir: both nodes share one filesystem) into the node's CNI directory,
#   which the agent gets at /etc/cni/net.d through subPathExpr (it rewrites the file there:
#   the podCIDR as an IPAM range, the MTU of eth0);
# - "hairpinMode": true in that configuration, as kube-router's docs/user-guide.md ("Hairpin Mode")
#   says hairpin traffic needs: without it a pod does not reach itself through its Service's
#   ClusterIP (kube-proxy's DNAT back out of the bridge port it came in by; the e2e suite's hairpin
#   path failed with "connect: operation now in progress" when the manifest's configuration was
#   used as it is);
# - no hostPID (here it would be the host's PID namespace; the router and the firewall do not use
#   it); no /lib/modules (the kernel has no module support: the agent's `modprobe br_netfilter`
#   fails with an error line in its log, harmlessly: br_netfilter is built in), no
#   /run/xtables.lock (the image's iptables is the nft backend, which takes no xtables lock), no
#   kubeconfig hostPath (in-cluster credentials, with the API server's address in
#   KUBERNETES_SERVICE_HOST/PORT as flannel.sh does: before kube-proxy's rules the kubernetes
#   service is not reachable);
# - the image has /etc/iproute2/rt_tables (the overlay's policy routing adds its table there, in
#   the container's own filesystem).
# Host state: the agent writes only per-netns sysctls (net/bridge/bridge-nf-call-ip{,6}tables, per
# network namespace on this kernel: /proc/sys/net/bridge exists in every netns); its iptables
# rules, ipsets, routes, ip rules and kube-bridge are the node netns'. Sourced by up.sh and
# suite-e2e.sh (interface: cni/README.md).
CNI_KUBE_PROXY=yes
CNI_VERSION=$KUBE_ROUTER_VERSION
# the lab datapath that models it: pods on a bridge, pod subnets routed over the wire (as
# flannel-host-gw and bridge: only who installs the routes differs)
LAB_MODEL=bridge
case $CNI in
  kube-router) ;;
  *) die "unknown kube-router mode $CNI (want kube-router)" ;;
esac
# named as upstream's image (docker.io/cloudnativelabs/kube-router): cnibench tells the CNI and its
# version from the image
KUBE_ROUTER_IMAGE=cnibench.local/cloudnativelabs/kube-router:$KUBE_ROUTER_VERSION
# CNI_MODE: the configuration in a few words (make e2e-all's summary)
CNI_MODE="BGP routes (iBGP, GoBGP), iptables/ipset policy, kube-proxy iptables"
cni_build() {
  "$LC_DIR/build-cni.sh" kube-router | tail -1
  local c; c=$(cni_cache kube-router)
  CNI_PLUGINS=""   # Debian's bridge and host-local
  local tar=$c/image.tar stamp root
  stamp="$(cat "$c/bin/.complete") $KUBE_ROUTER_IMAGE image=1"
  if [ ! -f "$tar" ] || [ "$(cat "$tar.stamp" 2>/dev/null)" != "$stamp" ]; then
    root=$(mktemp -d); stage_busybox "$root"; stage_iptables "$root"
    # kube-router runs ip (routes, rules, tunnels), ipset and iptables(-save/-restore); modprobe
    # is busybox's (it fails: no module support); conntrack only for its service proxy (off)
    stage_bins "$root" /usr/sbin/ip /usr/sbin/ipset
    mkdir -p "$root/usr/local/bin" "$root/etc"
    cp "$c/bin/kube-router" "$c/bin/gobgp" "$root/usr/local/bin/"
    cp -a /etc/iproute2 "$root/etc/iproute2"
    echo "hosts: files dns" >"$root/etc/nsswitch.conf"
    "$TOOLS_BIN/mkimage" -o "$tar.new" -t "$KUBE_ROUTER_IMAGE" -root "$root" -entrypoint /usr/local/bin/kube-router
    rm -rf "$root"; mv "$tar.new" "$tar"; echo "$stamp" >"$tar.stamp"
  fi
  CNI_IMAGES="$tar"
}
cni_net() { :; }
# the manifest's cni-conf.json (kube-router inserts the node's podCIDR and the MTU), with this
# node's host-local data directory and hairpinMode (docs/user-guide.md "Hairpin Mode")
cni_node_conf() {
  local N=$1 D=$LC_STATE/$1 S=$LC_RUN/$1
  cat >"$D/cni/10-kuberouter.conflist" <<CNI
{
   "cniVersion":"0.3.0",
   "name":"mynet",
   "plugins":[
      {
         "name":"kubernetes",
         "type":"bridge",
         "bridge":"kube-bridge",
         "isDefaultGateway":true,
         "hairpinMode":true,
         "ipam":{
            "type":"host-local",
            "dataDir":"$S/ipam"
         }
      }
   ]
}
CNI
}
cni_containerd_env() { :; }
cni_install() {
  kc apply -f - <<YAML
apiVersion: v1
kind: ServiceAccount
metadata: {name: kube-router, namespace: kube-system}
---
kind: ClusterRole
apiVersion: rbac.authorization.k8s.io/v1
metadata: {name: kube-router}
rules:
- {apiGroups: [""], resources: [namespaces, pods, services, nodes, endpoints], verbs: [list, get, watch]}
- {apiGroups: [networking.k8s.io], resources: [networkpolicies], verbs: [list, get, watch]}
- {apiGroups: [extensions], resources: [networkpolicies], verbs: [get, list, watch]}
- {apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get, create, update]}
- {apiGroups: [""], resources: [services/status], verbs: [update]}
- {apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [get, list, watch]}
---
kind: ClusterRoleBinding
apiVersion: rbac.authorization.k8s.io/v1
metadata: {name: kube-router}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kube-router}
subjects: [{kind: ServiceAccount, name: kube-router, namespace: kube-system}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: kube-router, namespace: kube-system, labels: {k8s-app: kube-router, tier: node}}
spec:
  selector: {matchLabels: {k8s-app: kube-router, tier: node}}
  template:
    metadata: {labels: {k8s-app: kube-router, tier: node}}
    spec:
      priorityClassName: system-node-critical
      serviceAccountName: kube-router
      hostNetwork: true
      terminationGracePeriodSeconds: 5
      tolerations:
      - {effect: NoSchedule, operator: Exists}
      - {key: CriticalAddonsOnly, operator: Exists}
      - {effect: NoExecute, operator: Exists}
      containers:
      - name: kube-router
        image: $KUBE_ROUTER_IMAGE
        imagePullPolicy: Never
        command: [/usr/local/bin/kube-router]
        args:
        - --run-router=true
        - --run-firewall=true
        - --run-service-proxy=false
        - --bgp-graceful-restart=true
        env:
        - {name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: KUBE_ROUTER_CNI_CONF_FILE, value: /etc/cni/net.d/10-kuberouter.conflist}
        - {name: KUBERNETES_SERVICE_HOST, value: "$(node_ip n1)"}
        - {name: KUBERNETES_SERVICE_PORT, value: "6443"}
        livenessProbe:
          httpGet: {path: /healthz, port: 20244}
          initialDelaySeconds: 10
          periodSeconds: 3
          failureThreshold: 10   # the manifest's 3 is too few on a loaded 2-core machine
        resources: {requests: {cpu: 250m, memory: 250Mi}}
        securityContext: {privileged: true}
        volumeMounts:
        - {name: state, mountPath: /etc/cni/net.d, subPathExpr: \$(NODE_NAME)/cni}
      volumes:
      - {name: state, hostPath: {path: $LC_STATE, type: Directory}}
YAML
}
# kr_route N : node N routes the other node's pod CIDR via the other node, in a route kube-router
# injected (its protocol number 0x11 = 17, learned over BGP)
# (outputs are read whole before grep: `cmd | grep -q` fails under pipefail when grep exits first)
kr_route() {
  local n=$1 o=n1 r; [ "$1" = n1 ] && o=n2
  r=$(ip -n "$(netns $n)" route show "$(pod_cidr $o)" proto 17) && [[ $r == *"via $(node_ip $o) dev eth0"* ]]
}
# kr_chain N TABLE CHAIN : the chain exists in node N's iptables (TABLE)
kr_chain() { local r; r=$(innet $1 iptables-save -t $2) && grep -q "^:$3 " <<<"$r"; }
cni_wait() {
  local n
  kc -n kube-system rollout status ds/kube-router --timeout="${CNI_TIMEOUT:-180}s" || { cni_logs; return 1; }
  for n in $NODES; do
    waitfor "kube-router's podCIDR in $n's CNI configuration" 60 grep -q "\"$(pod_cidr $n)\"" "$LC_STATE/$n/cni/10-kuberouter.conflist" || { cni_logs; return 1; }
    waitfor "kube-bridge on $n" 60 ip -n "$(netns $n)" link show kube-bridge || { cni_logs; return 1; }
    waitfor "$n's BGP route to the other node's pods" "${CNI_TIMEOUT:-120}" kr_route $n || { cni_logs; return 1; }
    waitfor "kube-router's firewall chains on $n" 60 kr_chain $n filter KUBE-ROUTER-FORWARD || { cni_logs; return 1; }
  done
}
cni_logs() {
  kc -n kube-system get pods -l k8s-app=kube-router -o wide >&2 || true
  local p; for p in $(kc -n kube-system get pods -l k8s-app=kube-router -o name 2>/dev/null); do
    echo "--- $p (last 40 lines)" >&2; kc -n kube-system logs "$p" --tail=40 >&2 || true
  done
  return 0
}
# cni_verify: the datapath is the one configured: on each node kube-bridge (a bridge), the other
# node's pod CIDR routed via the other node by a route kube-router injected from BGP (proto 17),
# the iBGP session with the other node established by GoBGP's own account (the gobgp CLI in the
# agent's pod), kube-router's firewall chains in iptables, and no IPVS service proxy (kube-proxy's
# KUBE-SERVICES chain instead).
cni_verify() {
  local p n o st l
  for p in $(kc -n kube-system get pods -l k8s-app=kube-router -o name); do
    n=$(kc -n kube-system get "$p" -o jsonpath='{.spec.nodeName}')
    o=n1; [ $n = n1 ] && o=n2
    l=$(ip -n "$(netns $n)" -d link show kube-bridge 2>/dev/null || true)
    grep -qw bridge <<<"$l" || { echo "$n: no kube-bridge bridge device" >&2; return 1; }
    kr_route $n || { echo "$n: $(pod_cidr $o) not routed via $(node_ip $o) by kube-router (proto 17): $(ip -n "$(netns $n)" route show "$(pod_cidr $o)")" >&2; return 1; }
    l=$(kc -n kube-system exec "$p" -- /usr/local/bin/gobgp neighbor "$(node_ip $o)" 2>&1 || true)
    st=$(grep -m1 -o 'BGP state = [A-Za-z]*' <<<"$l" || true)
    [ "$st" = "BGP state = ESTABLISHED" ] || [ "$st" = "BGP state = established" ] || { echo "$p ($n): BGP session with $(node_ip $o) not established (gobgp neighbor: ${st:-no state})" >&2; return 1; }
    kr_chain $n filter KUBE-ROUTER-FORWARD || { echo "$n: no KUBE-ROUTER-FORWARD iptables chain (kube-router's firewall)" >&2; return 1; }
    kr_chain $n nat KUBE-SERVICES || { echo "$n: no kube-proxy KUBE-SERVICES chain" >&2; return 1; }
    echo "$p ($n): kube-bridge up; route $(ip -n "$(netns $n)" route show "$(pod_cidr $o)"); iBGP with $(node_ip $o): $st; KUBE-ROUTER-FORWARD chain present"
  done
  echo "kube-router $KUBE_ROUTER_VERSION: pod routes by BGP, iptables/ipset policy, kube-proxy services, as configured"
}
