# cni/flannel.sh: flannel $FLANNEL_VERSION (flanneld as a DaemonSet in kube-flannel, as upstream's
# kube-flannel.yml installs it: kube subnet manager, --ip-masq, iptables in the image) and the
# `flannel` CNI plugin delegating to Debian's bridge + host-local. Modes: flannel-vxlan,
# flannel-host-gw, flannel-wireguard (needs the kernel's WireGuard: skipped without it).
# FLANNEL_DELEGATE_MTU=N sets the pods' MTU by hand (a deliberately wrong MTU, for the MTU check). Sourced by up.sh (interface: cni/README.md),
# and by cni/canal.sh for its flannel_* functions (the image, the leases, the routes' check): CNI=canal is flannel's VXLAN.
CNI_KUBE_PROXY=yes
CNI_VERSION=$FLANNEL_VERSION
case $CNI in
  flannel-vxlan) FLANNEL_BACKEND=vxlan LAB_MODEL=vxlan ;;
  flannel-host-gw) FLANNEL_BACKEND=host-gw LAB_MODEL=bridge ;;
  flannel-wireguard) FLANNEL_BACKEND=wireguard LAB_MODEL=bridge CNI_NEEDS=wireguard ;;
  canal) FLANNEL_BACKEND=vxlan LAB_MODEL=vxlan ;;   # cni/canal.sh: canal-config's net-conf.json
  *) die "unknown flannel mode $CNI (want flannel-vxlan, flannel-host-gw or flannel-wireguard)" ;;
esac
FLANNEL_IMAGE=cnibench.local/flannel/flannel:$FLANNEL_VERSION
CNI_MODE="$FLANNEL_BACKEND backend, kube-proxy iptables"   # in a few words (make e2e-all's summary)
cni_build() { flannel_build; }
# flannel_build: the flannel build (build-cni.sh flannel) and flanneld's image; sets CNI_PLUGINS
# (the flannel CNI plugin) and CNI_IMAGES (the image's tarball)
flannel_build() {
  "$LC_DIR/build-cni.sh" flannel | tail -1
  local c; c=$(cni_cache flannel)
  CNI_PLUGINS="$c/bin/flannel"
  local tar=$c/image.tar stamp; stamp="$(cat "$c/bin/.complete") $FLANNEL_IMAGE"
  if [ ! -f "$tar" ] || [ "$(cat "$tar.stamp" 2>/dev/null)" != "$stamp" ]; then
    local root; root=$(mktemp -d); stage_busybox "$root"; stage_iptables "$root"
    mkdir -p "$root/usr/bin"; cp "$c/bin/flanneld" "$root/usr/bin/flanneld"
    "$TOOLS_BIN/mkimage" -o "$tar.new" -t "$FLANNEL_IMAGE" -root "$root" -entrypoint /usr/bin/flanneld
    rm -rf "$root"; mv "$tar.new" "$tar"; echo "$stamp" >"$tar.stamp"
  fi
  CNI_IMAGES="$tar"
}
cni_net() { :; }
cni_node_conf() {
  local N=$1 D=$LC_STATE/$1 S=$LC_RUN/$1
  mkdir -p "$S/flannel"
  # upstream's cni-conf.json, with this node's subnet file and IPAM/scratch dirs (both nodes share
  # one host filesystem)
  cat >"$D/cni/10-flannel.conflist" <<CNI
{"name": "cbr0", "cniVersion": "0.3.1", "plugins": [
  {"type": "flannel", "subnetFile": "$S/flannel/subnet.env", "dataDir": "$S/flannel-data",
   "ipam": {"type": "host-local", "dataDir": "$S/ipam"},
   "delegate": {"hairpinMode": true, "isDefaultGateway": true${FLANNEL_DELEGATE_MTU:+, \"mtu\": $FLANNEL_DELEGATE_MTU}}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
CNI
}
cni_containerd_env() { :; }
cni_install() {
  kc apply -f - <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: kube-flannel, labels: {pod-security.kubernetes.io/enforce: privileged}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: flannel, namespace: kube-flannel}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: flannel}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get]}
- {apiGroups: [""], resources: [nodes], verbs: [get, list, watch]}
- {apiGroups: [""], resources: [nodes/status], verbs: [patch]}
- {apiGroups: [""], resources: [events], verbs: [create, patch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: flannel}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: flannel}
subjects: [{kind: ServiceAccount, name: flannel, namespace: kube-flannel}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: kube-flannel-cfg, namespace: kube-flannel, labels: {app: flannel, tier: node}}
data:
  net-conf.json: |
    {"Network": "$CLUSTER_CIDR", "EnableIPv6": false, "Backend": {"Type": "$FLANNEL_BACKEND"}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: kube-flannel-ds, namespace: kube-flannel, labels: {app: flannel, k8s-app: flannel, tier: node}}
spec:
  selector: {matchLabels: {app: flannel}}
  template:
    metadata: {labels: {app: flannel, k8s-app: flannel, tier: node}}
    spec:
      hostNetwork: true
      priorityClassName: system-node-critical
      tolerations: [{operator: Exists, effect: NoSchedule}]
      serviceAccountName: flannel
      terminationGracePeriodSeconds: 2
      containers:
      - name: kube-flannel
        image: $FLANNEL_IMAGE
        imagePullPolicy: Never
        command: [/usr/bin/flanneld]
        args: [--ip-masq, --kube-subnet-mgr, --iface=eth0, --subnet-file=/run/flannel/subnet.env, --net-config-path=/etc/kube-flannel/net-conf.json]
        env:
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        - {name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
        - {name: EVENT_QUEUE_DEPTH, value: "5000"}
        - {name: KUBERNETES_SERVICE_HOST, value: "$(node_ip n1)"}
        - {name: KUBERNETES_SERVICE_PORT, value: "6443"}
        resources: {requests: {cpu: 100m, memory: 50Mi}}
        securityContext: {privileged: false, capabilities: {add: [NET_ADMIN, NET_RAW]}}
        volumeMounts:
        - {name: run, mountPath: /run/flannel, subPathExpr: \$(NODE_NAME)/flannel}
        - {name: flannel-cfg, mountPath: /etc/kube-flannel/}
      volumes:
      - {name: run, hostPath: {path: $LC_RUN, type: Directory}}
      - {name: flannel-cfg, configMap: {name: kube-flannel-cfg}}
YAML
}
cni_wait() {
  flannel_leases || { cni_logs; return 1; }
  kc -n kube-flannel rollout status ds/kube-flannel-ds --timeout="${CNI_TIMEOUT:-120}s" || { cni_logs; return 1; }
}
# flannel_leases: bounded wait for each node's subnet lease (flanneld's subnet file)
flannel_leases() {
  local n
  for n in $NODES; do
    waitfor "flannel subnet lease of $n" "${CNI_TIMEOUT:-120}" test -s "$LC_RUN/$n/flannel/subnet.env" || return 1
  done
}
cni_logs() {
  kc -n kube-flannel get pods -o wide >&2 || true
  local p; for p in $(kc -n kube-flannel get pods -o name 2>/dev/null); do echo "--- $p (last 30 lines)" >&2; kc -n kube-flannel logs "$p" --tail=30 >&2 || true; done
}
# cni_verify: the datapath is the one configured (a VXLAN device, or routes via the other node)
cni_verify() { flannel_verify; }
flannel_verify() {
  local n o
  for n in $NODES; do
    o=n1; [ $n = n1 ] && o=n2
    if [ "$FLANNEL_BACKEND" = wireguard ]; then
      grep -q wireguard <<<"$(ip -n "$(netns $n)" -d link show flannel-wg 2>/dev/null)" || { echo "$n: no flannel-wg WireGuard device" >&2; return 1; }
    elif [ "$FLANNEL_BACKEND" = vxlan ]; then
      grep -q 'vxlan id 1' <<<"$(ip -n "$(netns $n)" -d link show flannel.1 2>/dev/null)" || { echo "$n: no flannel.1 VXLAN device" >&2; return 1; }
      grep -q 'dev flannel.1' <<<"$(ip -n "$(netns $n)" route show "$(pod_cidr $o)")" || { echo "$n: $(pod_cidr $o) not routed via flannel.1" >&2; return 1; }
    else
      grep -q "via $(node_ip $o) dev eth0" <<<"$(ip -n "$(netns $n)" route show "$(pod_cidr $o)")" || { echo "$n: $(pod_cidr $o) not routed via $(node_ip $o)" >&2; return 1; }
    fi
  done
  echo "flannel $FLANNEL_BACKEND: the nodes route each other's pod subnets as configured"
}
