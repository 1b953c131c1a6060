# cni/cilium.sh: Cilium $CILIUM_VERSION as upstream's chart installs it (agent DaemonSet and
# operator Deployment in kube-system, configured by the cilium-config ConfigMap), built here from
# the Go module proxy; the agent compiles its BPF datapath with Debian's clang at start.
# Two versions: 1.15.19 (lib.sh CILIUM_VERSION; names cilium-*, CI's) and 1.20.2 (cni/cilium120.sh
# sets CILIUM_VERSION and sources this file; names cilium120-*, the same modes). What differs
# between them is guarded here by version: the clang (clang-14 / clang-19), how cilium-dbg status
# reports the routing (cni_verify); the ConfigMap keys are the same (1.15 already has
# routing-mode/tunnel-protocol and kube-proxy-replacement true/false), and so are the host side
# effects (the two sysctls below, still IgnoreErr in 1.20). build-cni.sh: the /proc/modules patch
# (1.15 only) and the dependencies the Go module proxy refuses (1.20.2).
# Modes (the configurations the seeds compare; the name's family prefix, cilium- or cilium120-,
# then the mode):
#   cilium-vxlan              VXLAN tunnel, kube-proxy replacement, eBPF host routing
#   cilium-native             native routing, kube-proxy replacement, eBPF host routing
#   cilium-native-legacy      native routing, kube-proxy replacement, legacy host routing (seed 000)
#   cilium-native-kube-proxy  native routing, kube-proxy kept (iptables), legacy host routing
#                             (seed 003: against cilium-native-legacy, kube-proxy is the one change)
#   cilium-geneve, cilium-wireguard  GENEVE tunnel; native routing with WireGuard encryption
#                             (seed 000): skipped on a kernel without those link types
# Both nodes share one kernel, so each agent runs in its own container mount namespace (its own
# bpffs and cgroup2 mounts, gone with the container), state dir $LC_RUN/<node>/cilium (the CNI
# plugin reaches the agent there: CILIUM_SOCK in the node's containerd), and the two host-wide
# sysctls the agent writes (kernel.unprivileged_bpf_disabled, kernel.timer_migration; both
# IgnoreErr in the agent) are bound read-only in its mount namespace before it starts: the writes
# fail, the agent logs a warning, the host keeps its values (hoststate.sh proves it).
# Socket-level load balancing (part of kube-proxy replacement) attaches to the cgroup v2 root: the
# agent's is this node's pod subtree (cnb-entry), never the host's root. The L7 proxy (no
# cilium-envoy), Hubble and health checking stay off. Sourced by up.sh (cni/README.md).
CNI_VERSION=$CILIUM_VERSION
CILIUM_IMAGE=cnibench.local/cilium/cilium:$CILIUM_VERSION
CILIUM_OPERATOR_IMAGE=cnibench.local/cilium/operator-generic:$CILIUM_VERSION
# CILIUM_DEVICES: the agent's devices (its BPF programs: NodePort, masquerading, host routing),
# eth0 unless set (space-separated); "eth0 ext0" adds the link to the outside, which traffic from
# the outside to a LoadBalancer address enters by (lib.sh lb_serve)
CILIUM_DEVICES=${CILIUM_DEVICES:-eth0}
CILIUM_KPR=true CILIUM_ROUTING=native CILIUM_LEGACY_HOST_ROUTING=false CNI_KUBE_PROXY=no CILIUM_TUNNEL=vxlan CILIUM_WIREGUARD=false
# LAB_MODEL: the lab datapath that models it (the lab has no eBPF-routed VXLAN: cilium-vxlan's
# model is the eBPF host routing one, and the encapsulation is the difference)
LAB_MODEL=ebpf-host-routing
# the mode: the name after the family (cilium-vxlan, cilium120-vxlan: vxlan)
case ${CNI#*-} in
  vxlan) CILIUM_ROUTING=tunnel ;;
  geneve) CILIUM_ROUTING=tunnel CILIUM_TUNNEL=geneve CNI_NEEDS=geneve ;;
  wireguard) CILIUM_WIREGUARD=true CNI_NEEDS=wireguard ;;
  native) ;;
  native-legacy) CILIUM_LEGACY_HOST_ROUTING=true LAB_MODEL=veth-routing ;;
  native-kube-proxy) CILIUM_KPR=false CILIUM_LEGACY_HOST_ROUTING=true CNI_KUBE_PROXY=yes LAB_MODEL=veth-routing ;;
  *) die "unknown Cilium mode $CNI (want ${CNI%%-*}- and vxlan, geneve, native, native-legacy, native-kube-proxy or wireguard)" ;;
esac
# CNI_MODE: the configuration in a few words (make e2e-all's summary)
CNI_MODE="$([ "$CILIUM_ROUTING" = tunnel ] && echo "tunnel $CILIUM_TUNNEL" || echo "native routing")$([ "$CILIUM_WIREGUARD" = true ] && echo ", WireGuard"), $([ "$CILIUM_KPR" = true ] && echo "kube-proxy replacement" || echo "kube-proxy"), $([ "$CILIUM_LEGACY_HOST_ROUTING" = true ] && echo legacy || echo eBPF) host routing"
# The clang the agent compiles its datapath with (Debian 12's): 1.15's needs clang >= 10 (clang-14
# and clang-16 compile it; clang-19 does not: -Wshorten-64-to-32 as an error), later ones >= 18.1
# (clang-19). CNI_DEPS: the Debian package deps.sh installs for it beside its own list.
case $CILIUM_VERSION in
  v1.15.*) CILIUM_LEGACY_STATUS=yes CLANG=clang-14 ;;
  *) CILIUM_LEGACY_STATUS=no CLANG=clang-19 ;;
esac
CNI_DEPS=$CLANG
cni_build() {
  command -v "$CLANG" >/dev/null || die "$CLANG not found (deps.sh installs it)"
  CILIUM_VERSION=$CILIUM_VERSION "$LC_DIR/build-cni.sh" cilium | tail -1
  local c; c=$(cni_cache cilium)
  CNI_PLUGINS="$c/bin/cilium-cni"
  local tar=$c/image.tar otar=$c/operator-image.tar stamp root
  stamp="$(cat "$c/bin/.complete") $CILIUM_IMAGE $("$CLANG" --version | head -1) entry=6"
  if [ ! -f "$tar" ] || [ "$(cat "$tar.stamp" 2>/dev/null)" != "$stamp" ]; then
    root=$(mktemp -d); stage_busybox "$root"; stage_iptables "$root"
    stage_bins "$root" "$(command -v "$CLANG")" /usr/sbin/ip /usr/sbin/tc /usr/sbin/ipset /usr/sbin/bpftool
    ln -sf "$(readlink -f "$(command -v "$CLANG")")" "$root/usr/bin/clang"
    cp "$c/bin/cilium-agent" "$c/bin/cilium-dbg" "$root/usr/bin/"
    ln -s cilium-dbg "$root/usr/bin/cilium"
    mkdir -p "$root/var/lib/cilium"; cp -a "$c/bin/bpf" "$root/var/lib/cilium/bpf"
    cat >"$root/usr/bin/cnb-entry" <<'SH'
#!/bin/sh
# Bind the host-wide sysctls the agent writes read-only in this container's mount namespace, then
# run the agent: its writes fail (it ignores the error, with a warning); the host is unchanged.
for s in kernel/unprivileged_bpf_disabled kernel/timer_migration; do
  mount --bind "/proc/sys/$s" "/proc/sys/$s" && mount -o remount,bind,ro "/proc/sys/$s" ||
    { echo "cnb-entry: cannot make /proc/sys/$s read-only: not starting the agent" >&2; exit 1; }
  echo 0 2>/dev/null >"/proc/sys/$s" && { echo "cnb-entry: /proc/sys/$s is still writable" >&2; exit 1; }
done
echo "cnb-entry: kernel.unprivileged_bpf_disabled and kernel.timer_migration are read-only here"
# A kernel without module support has no /proc/modules and no /lib/modules: tell the agent which of
# the modules it looks for are built in, from the kernel's own configuration.
if [ ! -e /proc/modules ] && [ -e /proc/config.gz ]; then
  d=/lib/modules/$(uname -r); mkdir -p "$d"; : >"$d/modules.builtin"
  for m in ip_tables:IP_NF_IPTABLES iptable_nat:IP_NF_NAT iptable_mangle:IP_NF_MANGLE iptable_raw:IP_NF_RAW \
    iptable_filter:IP_NF_FILTER ip6_tables:IP6_NF_IPTABLES ip6table_mangle:IP6_NF_MANGLE ip6table_raw:IP6_NF_RAW \
    ip6table_filter:IP6_NF_FILTER xt_socket:NETFILTER_XT_MATCH_SOCKET; do
    zcat /proc/config.gz | grep -qx "CONFIG_${m#*:}=y" && echo "kernel/${m%%:*}.ko" >>"$d/modules.builtin"
  done
  echo "cnb-entry: built-in modules: $(tr '\n' ' ' <"$d/modules.builtin")"
fi
# Socket-level load balancing (on with kube-proxy replacement) attaches to the cgroup v2 root the
# agent finds mounted at /run/cilium/cgroupv2. The host's cgroup v2 hierarchy is one for the whole
# machine, so the agent gets this node's subtree instead (runc mirrors the node's pod cgroups into
# it): the programs act on this node's pods only, never on the host's other processes.
if [ -n "${CNB_CGROUP_PARENT:-}" ]; then
  t=/tmp/cgroup2-all; mkdir -p "$t" /run/cilium/cgroupv2
  mount -t cgroup2 none "$t" || { echo "cnb-entry: cannot mount cgroup2" >&2; exit 1; }
  [ -d "$t/$CNB_CGROUP_PARENT" ] || { echo "cnb-entry: no cgroup2 $CNB_CGROUP_PARENT (the node's pod cgroups)" >&2; umount "$t"; exit 1; }
  mount --bind "$t/$CNB_CGROUP_PARENT" /run/cilium/cgroupv2 && umount "$t" || { echo "cnb-entry: cannot confine the cgroup root" >&2; exit 1; }
  echo "cnb-entry: the agent's cgroup v2 root is the node's /$CNB_CGROUP_PARENT"
fi
exec "$@"
SH
    chmod +x "$root/usr/bin/cnb-entry"
    "$TOOLS_BIN/mkimage" -o "$tar.new" -t "$CILIUM_IMAGE" -root "$root" -entrypoint "/usr/bin/cnb-entry /usr/bin/cilium-agent"
    rm -rf "$root"; mv "$tar.new" "$tar"; echo "$stamp" >"$tar.stamp"
  fi
  if [ ! -f "$otar" ] || [ "$(cat "$otar.stamp" 2>/dev/null)" != "$stamp" ]; then
    "$TOOLS_BIN/mkimage" -o "$otar.new" -t "$CILIUM_OPERATOR_IMAGE" -entrypoint /usr/bin/cilium-operator-generic \
      "$c/bin/cilium-operator-generic=/usr/bin/cilium-operator-generic"
    mv "$otar.new" "$otar"; echo "$stamp" >"$otar.stamp"
  fi
  CNI_IMAGES="$tar $otar"
}
cni_net() { :; }
# The agent writes its CNI configuration into the node's directory once it is ready
# (write-cni-conf-when-ready), as with the chart: the node turns Ready with the agent.
cni_node_conf() { mkdir -p "$LC_RUN/$1/cilium"; }
cni_containerd_env() { echo "CILIUM_SOCK=$LC_RUN/$1/cilium/cilium.sock"; }
cni_install() {
  # the agent's and the operator's environment: the API server directly (kube-proxy replacement
  # has no kube-proxy to reach the kubernetes service through)
  local env="        - {name: K8S_NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
        - {name: CILIUM_K8S_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        - {name: KUBERNETES_SERVICE_HOST, value: \"$(node_ip n1)\"}
        - {name: KUBERNETES_SERVICE_PORT, value: \"6443\"}"
  local routing
  if [ "$CILIUM_ROUTING" = tunnel ]; then
    routing="routing-mode: tunnel
  tunnel-protocol: $CILIUM_TUNNEL"
  else
    routing="routing-mode: native
  ipv4-native-routing-cidr: $CLUSTER_CIDR
  auto-direct-node-routes: \"true\""
  fi
  kc apply -f - <<YAML
apiVersion: v1
kind: ServiceAccount
metadata: {name: cilium, namespace: kube-system}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: cilium-operator, namespace: kube-system}
---
# (the chart's ClusterRoles are long; this local harness binds cluster-admin)
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: cnibench-local-cilium}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects:
- {kind: ServiceAccount, name: cilium, namespace: kube-system}
- {kind: ServiceAccount, name: cilium-operator, namespace: kube-system}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cilium-config, namespace: kube-system}
data:
  cluster-name: default
  identity-allocation-mode: crd
  ipam: kubernetes
  k8s-require-ipv4-pod-cidr: "true"
  enable-ipv4: "true"
  enable-ipv6: "false"
  $routing
  devices: $CILIUM_DEVICES
  kube-proxy-replacement: "$CILIUM_KPR"
  enable-host-legacy-routing: "$CILIUM_LEGACY_HOST_ROUTING"
  enable-bpf-masquerade: "$CILIUM_KPR"
  enable-ipv4-masquerade: "true"
  cgroup-root: /run/cilium/cgroupv2
  enable-l7-proxy: "false"
  enable-hubble: "false"
  enable-health-checking: "false"
  enable-endpoint-health-checking: "false"
  enable-policy: default
  enable-wireguard: "$CILIUM_WIREGUARD"
  cni-exclusive: "false"
  write-cni-conf-when-ready: /host/etc/cni/net.d/05-cilium.conflist
  operator-api-serve-addr: "127.0.0.1:9234"
  enable-metrics: "true"
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: cilium, namespace: kube-system, labels: {k8s-app: cilium, app.kubernetes.io/part-of: cilium}}
spec:
  selector: {matchLabels: {k8s-app: cilium}}
  template:
    metadata: {labels: {k8s-app: cilium, app.kubernetes.io/name: cilium-agent, app.kubernetes.io/part-of: cilium}}
    spec:
      hostNetwork: true
      priorityClassName: system-node-critical
      tolerations: [{operator: Exists}]
      serviceAccountName: cilium
      terminationGracePeriodSeconds: 2
      containers:
      - name: cilium-agent
        image: $CILIUM_IMAGE
        imagePullPolicy: Never
        command: [/usr/bin/cnb-entry, /usr/bin/cilium-agent]
        args: [--config-dir=/tmp/cilium/config-map]
        env:
$env
        - {name: CNB_CGROUP_PARENT, value: "${CGROOT#/}-\$(K8S_NODE_NAME)"}
        readinessProbe:
          httpGet: {host: 127.0.0.1, path: /healthz, port: 9879, httpHeaders: [{name: brief, value: "true"}]}
          periodSeconds: 2
          failureThreshold: 3
        resources: {requests: {cpu: 100m, memory: 100Mi}}
        securityContext: {privileged: true}
        volumeMounts:
        - {name: config, mountPath: /tmp/cilium/config-map, readOnly: true}
        - {name: run, mountPath: /var/run/cilium, subPathExpr: \$(K8S_NODE_NAME)/cilium}
        - {name: cni-conf, mountPath: /host/etc/cni/net.d, subPathExpr: \$(K8S_NODE_NAME)/cni}
      volumes:
      - {name: config, configMap: {name: cilium-config}}
      - {name: run, hostPath: {path: $LC_RUN, type: Directory}}
      - {name: cni-conf, hostPath: {path: $LC_STATE, type: Directory}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: cilium-operator, namespace: kube-system, labels: {io.cilium/app: operator, name: cilium-operator, app.kubernetes.io/part-of: cilium}}
spec:
  replicas: 1
  selector: {matchLabels: {io.cilium/app: operator, name: cilium-operator}}
  template:
    metadata: {labels: {io.cilium/app: operator, name: cilium-operator, app.kubernetes.io/part-of: cilium, app.kubernetes.io/name: cilium-operator}}
    spec:
      hostNetwork: true
      priorityClassName: system-cluster-critical
      tolerations: [{operator: Exists}]
      nodeSelector: {kubernetes.io/hostname: n1}
      serviceAccountName: cilium-operator
      terminationGracePeriodSeconds: 2
      containers:
      - name: cilium-operator
        image: $CILIUM_OPERATOR_IMAGE
        imagePullPolicy: Never
        command: [/usr/bin/cilium-operator-generic]
        args: [--config-dir=/tmp/cilium/config-map]
        env:
$env
        readinessProbe: {httpGet: {host: 127.0.0.1, path: /healthz, port: 9234}, periodSeconds: 2}
        volumeMounts: [{name: config, mountPath: /tmp/cilium/config-map, readOnly: true}]
      volumes: [{name: config, configMap: {name: cilium-config}}]
YAML
}
cni_wait() {
  kc -n kube-system rollout status deploy/cilium-operator --timeout="${CNI_TIMEOUT:-240}s" || { cni_logs; return 1; }
  kc -n kube-system rollout status ds/cilium --timeout="${CNI_TIMEOUT:-240}s" || { cni_logs; return 1; }
}
cni_logs() {
  kc -n kube-system get pods -o wide >&2 || true
  local p; for p in $(kc -n kube-system get pods -l k8s-app=cilium -o name 2>/dev/null) $(kc -n kube-system get pods -l name=cilium-operator -o name 2>/dev/null); do
    echo "--- $p (last 40 lines)" >&2; kc -n kube-system logs "$p" --tail=40 >&2 || true
  done
}
sock_lb_on() { grep -q cil_sock4_connect <<<"$(bpftool cgroup show "/sys/fs/cgroup/unified${CGROOT}-$1")"; }
# cni_verify: each agent runs as configured, by its own account (cilium-dbg status): host routing,
# kube-proxy replacement, the routing between nodes (1.16 and later report it), the tunnel device;
# socket LB programs on the node's cgroup subtree only.
# Status lines: 1.15 "Host Routing: BPF"; later "Routing: Network: Tunnel [vxlan]  Host: BPF".
cni_verify() {
  local p st want_hr=BPF want_kpr=True want_net=Native n hr net
  [ "$CILIUM_LEGACY_HOST_ROUTING" = true ] && want_hr=Legacy
  [ "$CILIUM_KPR" = true ] || want_kpr=False
  [ "$CILIUM_ROUTING" = tunnel ] && want_net="Tunnel [$CILIUM_TUNNEL]"
  for p in $(kc -n kube-system get pods -l k8s-app=cilium -o name); do
    st=$(kc -n kube-system exec "$p" -- cilium-dbg status 2>&1) || { echo "$p: cilium-dbg status failed: $st" >&2; return 1; }
    grep -E '^(KubeProxyReplacement|Host Routing|Routing|Masquerading|Cilium):' <<<"$st" | sed "s|^|$p: |" || true
    # the host-wide sysctls it could not write (read-only here, cnb-entry): warned, not fatal
    grep -E 'kernel\.(unprivileged_bpf_disabled|timer_migration)' <<<"$(kc -n kube-system logs "$p" 2>&1)" | sed "s|^|$p: |" | cut -c1-300 || true
    hr=$(sed -nE 's/^Host Routing:[[:space:]]+([A-Za-z]+).*/\1/p; s/^Routing:.*Host:[[:space:]]+([A-Za-z]+).*/\1/p' <<<"$st")
    [ "$hr" = "$want_hr" ] || { echo "$p: host routing is ${hr:-not reported}, not $want_hr" >&2; return 1; }
    grep -Eq "^KubeProxyReplacement:[[:space:]]+$want_kpr" <<<"$st" || { echo "$p: kube-proxy replacement is not $want_kpr" >&2; return 1; }
    if [ "$CILIUM_LEGACY_STATUS" = no ]; then
      net=$(sed -nE 's/^Routing:[[:space:]]+Network:[[:space:]]+([A-Za-z]+( \[[a-z]+\])?).*/\1/p' <<<"$st")
      [ "$net" = "$want_net" ] || { echo "$p: routing between nodes is ${net:-not reported}, not $want_net" >&2; return 1; }
    fi
  done
  for n in $NODES; do
    if [ "$CILIUM_ROUTING" = tunnel ]; then
      grep -q "$CILIUM_TUNNEL" <<<"$(ip -n "$(netns $n)" -d link show "cilium_$CILIUM_TUNNEL" 2>/dev/null)" || { echo "$n: no cilium_$CILIUM_TUNNEL device" >&2; return 1; }
    fi
    if [ "$CILIUM_KPR" = true ]; then
      # attached shortly after the agent turns ready: bounded wait
      waitfor "socket LB programs on $n's cgroup subtree" 60 sock_lb_on "$n" ||
        { echo "$n: no socket LB program on the node's cgroup subtree" >&2; return 1; }
    fi
  done
  echo "cilium $CILIUM_VERSION $CNI: host routing $want_hr, kube-proxy replacement $want_kpr, routing $CILIUM_ROUTING, as configured"
}
