# cni/calico.sh: Calico $CALICO_VERSION as its own manifests/calico-vxlan.yaml installs it (the
# Kubernetes datastore, calico-ipam, VXLAN, no BGP daemon; calico-node as a DaemonSet in
# kube-system, configured by the calico-config ConfigMap and its environment), built here from the
# Go module proxy (build-cni.sh calico). Modes:
#   calico-vxlan     VXLAN (Always), felix's iptables dataplane (iptables' nft backend)
#   calico-nftables  the same with felix's nftables dataplane (FELIX_NFTABLESMODE=Enabled)
# kube-proxy stays (iptables mode). What differs from the manifest, and why:
# - the IP pool is the cluster's 10.244.0.0/16 with VXLAN Always (the manifest's CrossSubnet would
#   route the nodes' pods unencapsulated: both nodes are on one subnet), blocks of /26, the node
#   address from eth0 (each node also has ext0, its link to the outside);
# - no init containers: upgrade-ipam (fresh clusters only), install-cni (cni_node_conf writes the
#   CNI configuration, up.sh links the plugins), ebpf-bootstrap (eBPF dataplane only; it would
#   mount bpffs and cgroup2 on the host). No calico-kube-controllers (IPAM garbage collection and
#   node clean-up: nothing a two-node cluster of minutes needs);
# - the image has no runit: its entry script (cnb-entry) does what calico-node's rc.local and the
#   runit services do for the vxlan backend (-startup, -allocate-tunnel-addrs, then felix,
#   -complete-startup, -monitor-addresses, -monitor-token);
# - both nodes share one host filesystem: calico-node's /var/lib/calico, /var/run/calico and the
#   CNI configuration directory are per node (subPathExpr on hostPaths of $LC_STATE/$LC_RUN), and
#   the CNI plugin (run by the node's containerd, on the host's filesystem) is given every path it
#   would otherwise take host-wide: its log, nodename file, IPAM lock and kubeconfig. It cannot be
#   given the MTU file (/var/lib/calico/mtu, hard-coded), so its MTU is the one felix detects and
#   writes there (eth0's 1500 minus VXLAN's 50; cni_verify compares);
# - the manifest's /lib/modules, /run/xtables.lock, bpffs and policysync mounts are left out (no
#   module support in this kernel; the image's iptables is the nft backend, which takes no xtables
#   lock; no eBPF dataplane; no policy sync clients).
# RBAC and CRDs are the manifest's own (taken from the module's copy of it). Sourced by up.sh
# (interface: cni/README.md), and by cni/canal.sh for its calico_* functions (the image, the
# manifests' documents, the proxy-ARP route, felix's rule check): CNI=canal selects nothing here.
CNI_KUBE_PROXY=yes
CNI_VERSION=$CALICO_VERSION
CNI_NEEDS=vxlan
# LAB_MODEL: the lab's Calico-style routed veth (/32 pods, proxy ARP); the lab has no routed VXLAN
# model, so the encapsulation is the difference (as with cilium-vxlan's model)
LAB_MODEL=veth-routing
case $CNI in
  calico-vxlan) CALICO_NFTABLES=Disabled ;;
  calico-nftables) CALICO_NFTABLES=Enabled ;;
  canal) CALICO_NFTABLES=Disabled ;;   # cni/canal.sh: felix's default, the iptables dataplane
  *) die "unknown Calico mode $CNI (want calico-vxlan or calico-nftables)" ;;
esac
CALICO_DATAPLANE=iptables; [ "$CALICO_NFTABLES" = Enabled ] && CALICO_DATAPLANE=nftables
CALICO_IMAGE=cnibench.local/calico/node:$CALICO_VERSION
CALICO_MTU=1450   # felix's own detection: eth0 (1500) minus the VXLAN overhead (50)
# CNI_MODE: the configuration in a few words (make e2e-all's summary)
CNI_MODE="VXLAN (Always, no BGP), felix $CALICO_DATAPLANE dataplane, calico-ipam, kube-proxy iptables"
cni_build() { calico_build; }
# calico_build: the calico build (build-cni.sh calico) and calico-node's image; sets CNI_PLUGINS
# (the calico CNI plugin, also as calico-ipam) and CNI_IMAGES (the image's tarball)
calico_build() {
  "$LC_DIR/build-cni.sh" calico | tail -1
  local c; c=$(cni_cache calico)
  CNI_PLUGINS="$c/bin/calico $c/bin/calico-ipam"
  local tar=$c/image.tar stamp root
  stamp="$(cat "$c/bin/.complete") $CALICO_IMAGE entry=3"
  if [ ! -f "$tar" ] || [ "$(cat "$tar.stamp" 2>/dev/null)" != "$stamp" ]; then
    root=$(mktemp -d); stage_busybox "$root"; stage_iptables "$root"
    # felix runs ip, ipset (iptables dataplane), nft (knftables: nftables dataplane) and conntrack
    stage_bins "$root" /usr/sbin/ip /usr/sbin/ipset /usr/sbin/nft /usr/sbin/conntrack
    cp "$c/bin/calico-node" "$root/usr/bin/calico-node"
    mkdir -p "$root/etc/calico" "$root/var/lib/calico" "$root/var/run/calico" "$root/var/log/calico"
    cp "$c/bin/felix.cfg" "$root/etc/calico/felix.cfg"
    cat >"$root/usr/bin/cnb-entry" <<'SH'
#!/bin/sh
# cnb-entry: what calico-node's rc.local and runit services do for the vxlan backend and for none
# (policy only: Canal) (this image has no runit): start-up (node resource, IP pool,
# /var/lib/calico/nodename), the tunnel addresses, then felix and the services beside it, each
# restarted when it exits (as runit does); no BGP daemon.
calico-node -startup || exit 1
[ -s /var/lib/calico/nodename ] || { echo "cnb-entry: /var/lib/calico/nodename does not exist" >&2; exit 1; }
NODENAME=$(cat /var/lib/calico/nodename); export NODENAME
calico-node -allocate-tunnel-addrs -allocate-tunnel-addrs-run-once || exit 1
svc() { n=$1; shift; ( while :; do "$@"; echo "cnb-entry: $n exited (status $?), restarting in 2s"; sleep 2; done ) & }
# svc_once NAME CMD... : a service that does its work once and then only waits, forever (runit would
# restart it if it exited). This build has no cgo, and Go ends such a wait, where nothing else runs,
# with "fatal error: all goroutines are asleep - deadlock!" (status 2): its work is done then, it
# is not restarted (a start-up without the API connection whose idle goroutines hid it: Canal's)
svc_once() { n=$1; shift; ( set -o pipefail; mkdir -p /tmp; while :; do "$@" 2>&1 | tee /tmp/$n.out; rc=$?
  if [ $rc = 2 ] && grep -q 'all goroutines are asleep' /tmp/$n.out; then echo "cnb-entry: $n done (its wait ended as a deadlock in this build)"; break; fi
  echo "cnb-entry: $n exited (status $rc), restarting in 2s"; sleep 2; done ) & }
svc_once complete-startup calico-node -complete-startup
if [ "$CALICO_NETWORKING_BACKEND" = none ]; then
  echo "cnb-entry: CALICO_NETWORKING_BACKEND is none - no BGP daemon running, no address monitor"
else
  svc monitor-addresses calico-node -monitor-addresses
fi
if [ "$USE_POD_CIDR" = true ]; then
  # host-local IPAM from the podCIDR: no tunnel address to allocate (it would only wait)
  echo "cnb-entry: USE_POD_CIDR is true - no tunnel address allocator"
else
  svc allocate-tunnel-addrs calico-node -allocate-tunnel-addrs
fi
svc cni calico-node -monitor-token
FELIX_FELIXHOSTNAME=$NODENAME FELIX_DATASTORETYPE=$DATASTORE_TYPE; export FELIX_FELIXHOSTNAME FELIX_DATASTORETYPE
svc felix calico-node -felix
echo "cnb-entry: calico-node started on $NODENAME"
# this script is the container's init: when it exits, the kernel ends every process of the container
trap 'exit 0' TERM INT
while :; do wait; sleep 1; done
SH
    chmod +x "$root/usr/bin/cnb-entry"
    "$TOOLS_BIN/mkimage" -o "$tar.new" -t "$CALICO_IMAGE" -root "$root" -entrypoint /usr/bin/cnb-entry
    rm -rf "$root"; mv "$tar.new" "$tar"; echo "$stamp" >"$tar.stamp"
  fi
  CNI_IMAGES="$tar"
}
# Calico's pods route everything to the link-local 169.254.1.1, which the node answers by proxy
# ARP on the pod's cali* interface; the kernel does that only for an address it has a route to
# through another interface, and these nodes have no default route (no link to the host's
# network): one host route on lo, as the lab's Calico-style datapath has.
cni_net() { calico_net; }
calico_net() {
  local n; for n in $NODES; do ip -n "$(netns $n)" route add 169.254.1.1/32 dev lo; done
}
# The manifest's cni_network_config as install-cni writes it, with this node's paths.
cni_node_conf() {
  local N=$1 D=$LC_STATE/$1 S=$LC_RUN/$1
  mkdir -p "$D/calico" "$D/calico-cni" "$S/calico"
  cat >"$D/cni/10-calico.conflist" <<CNI
{
  "name": "k8s-pod-network",
  "cniVersion": "0.3.1",
  "plugins": [
    {
      "type": "calico",
      "log_level": "info",
      "log_file_path": "$D/calico-cni/cni.log",
      "datastore_type": "kubernetes",
      "nodename": "$N",
      "nodename_file": "$D/calico/nodename",
      "ipam_lock_file": "$S/calico/ipam.lock",
      "mtu": $CALICO_MTU,
      "ipam": {"type": "calico-ipam"},
      "policy": {"type": "k8s"},
      "kubernetes": {"kubeconfig": "$D/cni/calico-kubeconfig"}
    },
    {"type": "portmap", "snat": true, "capabilities": {"portMappings": true}}
  ]
}
CNI
}
cni_containerd_env() { :; }
# calico_docs KIND_RE NAME_RE [MANIFEST] : the documents of the module's MANIFEST (default
# calico-vxlan.yaml; build-cni.sh copies it into the cache) of those kinds and (metadata) names
calico_docs() {
  awk -v k="$1" -v n="$2" '
    function flush() { if (doc != "" && kind ~ k && name ~ n) printf "---\n%s", doc; doc = ""; kind = ""; name = ""; meta = 0 }
    /^---/ { flush(); next }
    { doc = doc $0 "\n" }
    /^kind: / { kind = $2 }
    /^metadata:/ { meta = 1; next }
    /^[^ #]/ { meta = 0 }
    meta && /^  name: / && name == "" { name = $2 }
    END { flush() }' "$(cni_cache calico)/bin/manifests/${3:-calico-vxlan.yaml}"
}
cni_install() {
  # the manifest's CRDs (server-side: some are too large for the last-applied annotation)
  calico_docs '^CustomResourceDefinition$' . | kc apply --server-side --force-conflicts -f - >/dev/null
  kc wait --for condition=established --timeout=60s crd --all >/dev/null
  # the manifest's calico-config, service accounts and RBAC of calico-node and the CNI plugin
  calico_docs '^(ConfigMap|ServiceAccount|ClusterRole|ClusterRoleBinding)$' '^(calico-config|calico-node|calico-cni-plugin|calico-tier-getter)$' | kc apply -f -
  kc apply -f - <<YAML
# the manifest's way to give calico-node the API server's address (there is no kube-proxy rule for
# the kubernetes service before the node is up)
apiVersion: v1
kind: ConfigMap
metadata: {name: kubernetes-services-endpoint, namespace: kube-system}
data:
  KUBERNETES_SERVICE_HOST: "$(node_ip n1)"
  KUBERNETES_SERVICE_PORT: "6443"
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: calico-node, namespace: kube-system, labels: {k8s-app: calico-node}}
spec:
  selector: {matchLabels: {k8s-app: calico-node}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1}}
  template:
    metadata: {labels: {k8s-app: calico-node}}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      hostNetwork: true
      tolerations:
      - {effect: NoSchedule, operator: Exists}
      - {key: CriticalAddonsOnly, operator: Exists}
      - {effect: NoExecute, operator: Exists}
      serviceAccountName: calico-node
      terminationGracePeriodSeconds: 0
      priorityClassName: system-node-critical
      containers:
      - name: calico-node
        image: $CALICO_IMAGE
        imagePullPolicy: Never
        command: [/usr/bin/cnb-entry]
        envFrom: [{configMapRef: {name: kubernetes-services-endpoint, optional: true}}]
        env:
        - {name: DATASTORE_TYPE, value: kubernetes}
        - {name: WAIT_FOR_DATASTORE, value: "true"}
        - {name: NODENAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
        - {name: CALICO_NETWORKING_BACKEND, valueFrom: {configMapKeyRef: {name: calico-config, key: calico_backend}}}
        - {name: CLUSTER_TYPE, value: "k8s,bgp"}
        - {name: IP, value: autodetect}
        - {name: IP_AUTODETECTION_METHOD, value: "interface=eth0"}
        - {name: CALICO_IPV4POOL_CIDR, value: "$CLUSTER_CIDR"}
        - {name: CALICO_IPV4POOL_BLOCK_SIZE, value: "26"}
        - {name: CALICO_IPV4POOL_IPIP, value: Never}
        - {name: CALICO_IPV4POOL_VXLAN, value: Always}
        - {name: CALICO_IPV6POOL_VXLAN, value: CrossSubnet}
        - {name: FELIX_IPINIPMTU, valueFrom: {configMapKeyRef: {name: calico-config, key: veth_mtu}}}
        - {name: FELIX_VXLANMTU, valueFrom: {configMapKeyRef: {name: calico-config, key: veth_mtu}}}
        - {name: FELIX_WIREGUARDMTU, valueFrom: {configMapKeyRef: {name: calico-config, key: veth_mtu}}}
        - {name: CALICO_DISABLE_FILE_LOGGING, value: "true"}
        - {name: FELIX_DEFAULTENDPOINTTOHOSTACTION, value: ACCEPT}
        - {name: FELIX_IPV6SUPPORT, value: "false"}
        - {name: FELIX_HEALTHENABLED, value: "true"}
        # the image's iptables is the nft backend only (felix's auto-detection would also look for
        # iptables-legacy); the dataplane this mode configures
        - {name: FELIX_IPTABLESBACKEND, value: nft}
        - {name: FELIX_NFTABLESMODE, value: $CALICO_NFTABLES}
        # felix's iptables/nftables modes clean up an eBPF dataplane's leftovers when they start
        # (connect-time load balancer: bpffs mount, pinned maps, links on the cgroup v2 root);
        # without cgo its libbpf is a stub that panics there, and there is nothing to clean up
        # on this host: skip it (felix's own switch, used by its functional tests)
        - {name: FELIX_DebugSkipCTLBCleanup, value: "true"}
        securityContext: {privileged: true}
        resources: {requests: {cpu: 250m}}
        livenessProbe:
          exec: {command: [/bin/calico-node, -felix-live]}
          periodSeconds: 10
          initialDelaySeconds: 10
          failureThreshold: 6
          timeoutSeconds: 10
        readinessProbe:
          exec: {command: [/bin/calico-node, -felix-ready]}
          periodSeconds: 2
          timeoutSeconds: 10
        volumeMounts:
        - {name: state, mountPath: /host/etc/cni/net.d, subPathExpr: \$(NODENAME)/cni}
        - {name: run, mountPath: /var/run/calico, subPathExpr: \$(NODENAME)/calico}
        - {name: state, mountPath: /var/lib/calico, subPathExpr: \$(NODENAME)/calico}
        - {name: state, mountPath: /var/log/calico/cni, subPathExpr: \$(NODENAME)/calico-cni, readOnly: true}
      volumes:
      - {name: run, hostPath: {path: $LC_RUN, type: Directory}}
      - {name: state, hostPath: {path: $LC_STATE, type: Directory}}
YAML
}
cni_wait() {
  local n
  kc -n kube-system rollout status ds/calico-node --timeout="${CNI_TIMEOUT:-240}s" || { cni_logs; return 1; }
  for n in $NODES; do
    # the CNI plugin's credentials (calico-node -monitor-token) and felix's VXLAN device
    waitfor "calico CNI kubeconfig of $n" 60 test -s "$LC_STATE/$n/cni/calico-kubeconfig" || { cni_logs; return 1; }
    waitfor "vxlan.calico on $n" 60 ip -n "$(netns $n)" link show vxlan.calico || { cni_logs; return 1; }
  done
}
cni_logs() {
  kc -n kube-system get pods -l k8s-app=calico-node -o wide >&2 || true
  local p; for p in $(kc -n kube-system get pods -l k8s-app=calico-node -o name 2>/dev/null); do
    echo "--- $p (last 40 lines)" >&2; kc -n kube-system logs "$p" --tail=40 >&2 || true
  done
  for p in $NODES; do [ -f "$LC_STATE/$p/calico-cni/cni.log" ] && { echo "--- CNI plugin log of $p (last 10 lines)" >&2; tail -10 "$LC_STATE/$p/calico-cni/cni.log" >&2; }; done
  return 0
}
# cni_verify: the dataplane is the one configured: felix ready and its dataplane mode by its own
# log; its MTU; the vxlan.calico device on each node, routes to the other node's blocks through
# it; felix's rules in nftables' "calico" table (nftables mode) or in cali- iptables chains
# (iptables mode), not the other.
cni_verify() {
  local p n o line blocks b rt rules
  for p in $(kc -n kube-system get pods -l k8s-app=calico-node -o name); do
    n=$(kc -n kube-system get "$p" -o jsonpath='{.spec.nodeName}')
    kc -n kube-system exec "$p" -- calico-node -felix-ready >/dev/null 2>&1 || { echo "$p ($n): felix is not ready (calico-node -felix-ready)" >&2; return 1; }
    line=$(kc -n kube-system logs "$p" | grep -m1 -o 'Parsed value for NFTablesMode: [A-Za-z]*' || true)
    [ "$line" = "Parsed value for NFTablesMode: $CALICO_NFTABLES" ] || { echo "$p ($n): felix did not report NFTablesMode $CALICO_NFTABLES (${line:-no such log line})" >&2; return 1; }
    echo "$p ($n): felix ready; $line"
  done
  blocks=$(kc get blockaffinities.crd.projectcalico.org -o jsonpath='{range .items[*]}{.spec.node}{" "}{.spec.cidr}{" "}{.spec.state}{"\n"}{end}')
  for n in $NODES; do
    o=n1; [ $n = n1 ] && o=n2
    [ "$(cat "$LC_STATE/$n/calico/mtu" 2>/dev/null)" = "$CALICO_MTU" ] || { echo "$n: felix detected MTU $(cat "$LC_STATE/$n/calico/mtu" 2>/dev/null), the CNI configuration has $CALICO_MTU" >&2; return 1; }
    grep -q 'vxlan id 4096' <<<"$(ip -n "$(netns $n)" -d link show vxlan.calico 2>/dev/null)" || { echo "$n: no vxlan.calico VXLAN device (VNI 4096)" >&2; return 1; }
    rt=0
    for b in $(echo "$blocks" | awk -v o=$o '$1 == o && $3 == "confirmed" {print $2}'); do
      grep -q 'dev vxlan.calico' <<<"$(ip -n "$(netns $n)" route show "$b")" || { echo "$n: $o's block $b not routed via vxlan.calico" >&2; return 1; }
      rt=$((rt + 1))
    done
    [ $rt -gt 0 ] || { echo "$n: $o has no confirmed IPAM block (blockaffinities: $(echo $blocks))" >&2; return 1; }
    rules=$(calico_rules $n) || return 1
    echo "$n: vxlan.calico up, $rt block(s) of $o routed through it, felix's rules in $rules"
  done
  echo "calico $CNI: VXLAN, felix $CALICO_DATAPLANE dataplane, MTU $CALICO_MTU, as configured"
}
# calico_rules N : felix's rules are where its dataplane puts them on node N, and not in the other:
# nftables' "calico" table (nftables mode) or cali- chains in iptables (iptables mode); says which
calico_rules() {
  local n=$1 tables chains
  # (whole outputs first: grep -q would end the pipe early, and pipefail fail it)
  tables=$(innet $n nft list tables) chains=$(innet $n iptables-save | grep -c '^:cali-' || true)
  if [ "$CALICO_NFTABLES" = Enabled ]; then
    grep -qx 'table ip calico' <<<"$tables" || { echo "$n: no nftables table ip calico (nft list tables: $(echo $tables))" >&2; return 1; }
    [ "$chains" -eq 0 ] || { echo "$n: $chains cali- chains in iptables in nftables mode" >&2; return 1; }
    echo "nftables table ip calico (no cali- chain in iptables)"
  else
    [ "$chains" -gt 0 ] || { echo "$n: no cali- chain in iptables" >&2; return 1; }
    ! grep -q 'calico' <<<"$tables" || { echo "$n: an nftables calico table in iptables mode ($(echo $tables))" >&2; return 1; }
    echo "$chains iptables cali- chains (no nftables calico table)"
  fi
}
