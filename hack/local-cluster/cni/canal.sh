# cni/canal.sh: Canal as Calico $CALICO_VERSION's own manifests/canal.yaml installs it: flannel's
# VXLAN network (flanneld, kube subnet manager, --ip-masq; the node's podCIDR, net-conf.json of the
# canal-config ConfigMap) with Calico's felix enforcing policy only (calico-node with
# CALICO_NETWORKING_BACKEND=none: no BGP, no Calico IP pool in use, no tunnel of its own), both
# containers of one DaemonSet `canal` in kube-system; the `calico` CNI plugin with host-local IPAM
# from the node's podCIDR (`"subnet": "usePodCidr"`). kube-proxy stays (iptables mode). One mode:
# canal.
# Nothing is built for it: calico-node (felix) and the calico CNI plugin are the calico family's
# (cni/calico.sh, its image), flanneld the flannel family's (cni/flannel.sh, its image); both are
# sourced for their calico_* and flannel_* functions.
# What differs from the manifest, and why:
# - canal-config: canal_iface "eth0" (the manifest's "" takes the default route's interface; the
#   nodes have none, and each also has ext0, its link to the outside) and veth_mtu "1450", flannel
#   VXLAN's MTU (eth0's 1500 less 50) as Calico's MTU guide says for flannel VXLAN: the manifest's
#   "0" lets the CNI plugin read felix's detected MTU, which in policy-only mode is the host's
#   (1500, above flannel.1's 1450; felix has no encapsulation to subtract), and the plugin could
#   not read it anyway (the file is the hard-coded /var/lib/calico/mtu, per node here);
# - no init containers: install-cni (cni_node_conf writes the manifest's cni_network_config, up.sh
#   links the plugins), ebpf-bootstrap (eBPF dataplane only; it would mount bpffs and cgroup2 on
#   the host); no calico-kube-controllers (IPAM garbage collection and node clean-up: nothing a
#   two-node cluster of minutes needs, and policy-only Canal has no Calico IPAM);
# - calico-node: as in cni/calico.sh, the image's entry script (cnb-entry) does what rc.local and
#   the runit services do for CALICO_NETWORKING_BACKEND=none (no BGP daemon, no address monitor);
#   its /var/lib/calico, /var/run/calico and CNI directory are per node (subPathExpr), the CNI
#   plugin gets every host path in its configuration (log, nodename file, kubeconfig; host-local's
#   dataDir), FELIX_IPTABLESBACKEND=nft (the image has iptables' nft backend only) and
#   FELIX_DebugSkipCTLBCleanup=true (cni/calico.sh says why); no preStop `calico-node -shutdown`
#   (as cni/calico.sh); the manifest's /lib/modules, /run/xtables.lock, bpffs and policysync
#   mounts are left out (no module support; no xtables lock with the nft backend; no eBPF; no
#   policy sync clients);
# - kube-flannel: the flannel family's image (flanneld at /usr/bin), its subnet file per node
#   (/run/flannel through subPathExpr, which NODE_NAME names: the manifest leaves it in the
#   container, where nothing reads it: the CNI plugin takes the podCIDR from the API; here
#   cni_wait waits for it and cni_verify reads its MTU), and the API server's address from
#   kubernetes-services-endpoint as calico-node has it (the nodes have no default route: without
#   kube-proxy's rules the kubernetes service is unreachable);
# - Calico pods route everything to 169.254.1.1, answered by proxy ARP on the node's cali*
#   interface: the node needs a route to it elsewhere (cni/calico.sh calico_net).
# Host state: felix writes only per-netns sysctls, flanneld the flannel.1 device, routes and
# iptables rules of the node's netns. Sourced by up.sh and suite-e2e.sh (interface: cni/README.md).
source "$LC_DIR/cni/calico.sh"
source "$LC_DIR/cni/flannel.sh"
CNI_KUBE_PROXY=yes
CNI_VERSION=$CALICO_VERSION   # the canal DaemonSet's calico/node image tag, what cnibench reports
CNI_NEEDS=vxlan
LAB_MODEL=vxlan               # flannel's VXLAN between the nodes (the pods' veths are routed, /32)
CANAL_MTU=1450                # canal-config veth_mtu: flannel.1's MTU (eth0's 1500 less VXLAN's 50)
CNI_MODE="flannel $FLANNEL_VERSION VXLAN, felix policy only (iptables dataplane), host-local IPAM from the podCIDR, kube-proxy iptables"
cni_build() {
  local images plugins
  calico_build; images=$CNI_IMAGES plugins=$CNI_PLUGINS
  flannel_build
  # the calico CNI plugin (its host-local IPAM is Debian's); not the flannel plugin
  CNI_IMAGES="$images $CNI_IMAGES" CNI_PLUGINS="${plugins%% *}"
}
cni_net() { calico_net; }
# The manifest's cni_network_config as install-cni writes it (10-canal.conflist), with this node's
# paths and MTU.
cni_node_conf() {
  local N=$1 D=$LC_STATE/$1 S=$LC_RUN/$1
  mkdir -p "$D/calico" "$D/calico-cni" "$S/calico" "$S/flannel"
  cat >"$D/cni/10-canal.conflist" <<CNI
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
      "mtu": $CANAL_MTU,
      "ipam": {"type": "host-local", "subnet": "usePodCidr", "dataDir": "$S/ipam"},
      "policy": {"type": "k8s"},
      "kubernetes": {"kubeconfig": "$D/cni/calico-kubeconfig"}
    },
    {"type": "portmap", "snat": true, "capabilities": {"portMappings": true}}
  ]
}
CNI
}
cni_containerd_env() { :; }
CANAL_YAML=canal.yaml
cni_install() {
  calico_docs '^CustomResourceDefinition$' . $CANAL_YAML | kc apply --server-side --force-conflicts -f - >/dev/null
  kc wait --for condition=established --timeout=60s crd --all >/dev/null
  # the manifest's canal-config, service accounts and RBAC of calico-node, flannel and the CNI plugin
  calico_docs '^(ConfigMap|ServiceAccount|ClusterRole|ClusterRoleBinding)$' \
    '^(canal-config|canal|calico-cni-plugin|calico-node|flannel|calico-tier-getter|canal-flannel|canal-calico)$' $CANAL_YAML | kc apply -f -
  # the net-conf.json the manifest has must be this cluster's (flannel's network is the podCIDRs')
  grep -q "\"Network\": \"$CLUSTER_CIDR\"" <<<"$(kc -n kube-system get configmap canal-config -o jsonpath='{.data.net-conf\.json}')" ||
    die "canal-config's net-conf.json is not for the cluster CIDR $CLUSTER_CIDR"
  kc -n kube-system patch configmap canal-config --type merge -p "{\"data\":{\"canal_iface\":\"eth0\",\"veth_mtu\":\"$CANAL_MTU\"}}"
  kc apply -f - <<YAML
apiVersion: v1
kind: ConfigMap
metadata: {name: kubernetes-services-endpoint, namespace: kube-system}
data:
  KUBERNETES_SERVICE_HOST: "$(node_ip n1)"
  KUBERNETES_SERVICE_PORT: "6443"
---
kind: DaemonSet
apiVersion: apps/v1
metadata: {name: canal, namespace: kube-system, labels: {k8s-app: canal}}
spec:
  selector: {matchLabels: {k8s-app: canal}}
  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1}}
  template:
    metadata: {labels: {k8s-app: canal}}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      hostNetwork: true
      tolerations:
      - {effect: NoSchedule, operator: Exists}
      - {key: CriticalAddonsOnly, operator: Exists}
      - {effect: NoExecute, operator: Exists}
      serviceAccountName: canal
      securityContext: {seccompProfile: {type: RuntimeDefault}}
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
        - {name: USE_POD_CIDR, value: "true"}
        - {name: WAIT_FOR_DATASTORE, value: "true"}
        - {name: NODENAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
        - {name: CALICO_CNI_SERVICE_ACCOUNT, valueFrom: {fieldRef: {fieldPath: spec.serviceAccountName}}}
        - {name: CALICO_NETWORKING_BACKEND, value: none}
        - {name: CLUSTER_TYPE, value: "k8s,canal"}
        - {name: FELIX_IPTABLESREFRESHINTERVAL, value: "60"}
        - {name: IP, value: ""}
        - {name: CALICO_DISABLE_FILE_LOGGING, value: "true"}
        - {name: FELIX_DEFAULTENDPOINTTOHOSTACTION, value: ACCEPT}
        - {name: FELIX_IPV6SUPPORT, value: "false"}
        - {name: FELIX_HEALTHENABLED, value: "true"}
        # not the manifest's (cni/calico.sh says why): the image's iptables backend; no eBPF
        # connect-time load balancer clean-up
        - {name: FELIX_IPTABLESBACKEND, value: nft}
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
          httpGet: {path: /readiness, port: 9099, host: localhost}
          periodSeconds: 10
          timeoutSeconds: 10
        volumeMounts:
        - {name: state, mountPath: /host/etc/cni/net.d, subPathExpr: \$(NODENAME)/cni}
        - {name: run, mountPath: /var/run/calico, subPathExpr: \$(NODENAME)/calico}
        - {name: state, mountPath: /var/lib/calico, subPathExpr: \$(NODENAME)/calico}
        - {name: state, mountPath: /var/log/calico/cni, subPathExpr: \$(NODENAME)/calico-cni, readOnly: true}
      - name: kube-flannel
        image: $FLANNEL_IMAGE
        imagePullPolicy: Never
        command: [/usr/bin/flanneld, --ip-masq, --kube-subnet-mgr]
        securityContext: {privileged: true}
        envFrom: [{configMapRef: {name: kubernetes-services-endpoint, optional: true}}]
        env:
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
        - {name: FLANNELD_IFACE, valueFrom: {configMapKeyRef: {name: canal-config, key: canal_iface}}}
        - {name: FLANNELD_IP_MASQ, valueFrom: {configMapKeyRef: {name: canal-config, key: masquerade}}}
        - {name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
        volumeMounts:
        - {name: flannel-cfg, mountPath: /etc/kube-flannel/}
        - {name: run, mountPath: /run/flannel, subPathExpr: \$(NODE_NAME)/flannel}
      volumes:
      - {name: run, hostPath: {path: $LC_RUN, type: Directory}}
      - {name: state, hostPath: {path: $LC_STATE, type: Directory}}
      - {name: flannel-cfg, configMap: {name: canal-config}}
YAML
}
cni_wait() {
  local n
  kc -n kube-system rollout status ds/canal --timeout="${CNI_TIMEOUT:-240}s" || { cni_logs; return 1; }
  flannel_leases || { cni_logs; return 1; }
  for n in $NODES; do
    # the CNI plugin's credentials (calico-node -monitor-token) and flannel's VXLAN device
    waitfor "calico CNI kubeconfig of $n" 60 test -s "$LC_STATE/$n/cni/calico-kubeconfig" || { cni_logs; return 1; }
    waitfor "flannel.1 on $n" 60 ip -n "$(netns $n)" link show flannel.1 || { cni_logs; return 1; }
  done
}
cni_logs() {
  kc -n kube-system get pods -l k8s-app=canal -o wide >&2 || true
  local p c; for p in $(kc -n kube-system get pods -l k8s-app=canal -o name 2>/dev/null); do
    for c in calico-node kube-flannel; do
      echo "--- $p $c (last 30 lines)" >&2; kc -n kube-system logs "$p" -c $c --tail=30 >&2 || true
    done
  done
  for p in $NODES; do [ -f "$LC_STATE/$p/calico-cni/cni.log" ] && { echo "--- CNI plugin log of $p (last 10 lines)" >&2; tail -10 "$LC_STATE/$p/calico-cni/cni.log" >&2; }; done
  return 0
}
# cni_verify: the datapath is the one configured. Felix ready and in policy-only mode by its own
# account (its dataplane configuration: neither IPIP nor VXLAN; the pod MTU it determined is the
# host's), no Calico tunnel device and no Calico IPAM block; flannel's flannel.1 (VXLAN) on each
# node with the other node's podCIDR routed through it (cni/flannel.sh flannel_verify), its lease's
# MTU and flannel.1's the pods' (canal-config veth_mtu, in the CNI configuration); felix's rules
# in cali- iptables chains, none in nftables (cni/calico.sh calico_rules).
cni_verify() {
  local p n d line cfg rules blocks mtu
  for p in $(kc -n kube-system get pods -l k8s-app=canal -o name); do
    n=$(kc -n kube-system get "$p" -o jsonpath='{.spec.nodeName}')
    kc -n kube-system exec "$p" -c calico-node -- calico-node -felix-ready >/dev/null 2>&1 || { echo "$p ($n): felix is not ready (calico-node -felix-ready)" >&2; return 1; }
    cfg=$(kc -n kube-system logs "$p" -c calico-node | grep -m1 'Creating internal dataplane driver' || true)
    [ -n "$cfg" ] || { echo "$p ($n): felix logged no dataplane configuration (Creating internal dataplane driver)" >&2; return 1; }
    for line in IPIPEnabled:false VXLANEnabled:false; do
      grep -q "$line" <<<"$cfg" || { echo "$p ($n): felix's dataplane configuration has no $line: not policy only" >&2; return 1; }
    done
    line=$(kc -n kube-system logs "$p" -c calico-node | grep -m1 -o 'Determined pod MTU.*' || true)
    echo "$p ($n): felix ready, policy only (its dataplane configuration: IPIPEnabled:false VXLANEnabled:false; ${line:-no pod MTU logged})"
  done
  blocks=$(kc get ipamblocks.crd.projectcalico.org,blockaffinities.crd.projectcalico.org -o name)
  [ -z "$blocks" ] || { echo "Calico IPAM blocks in use in policy-only Canal: $(echo $blocks)" >&2; return 1; }
  flannel_verify || return 1
  for n in $NODES; do
    for d in vxlan.calico tunl0; do
      ! ip -n "$(netns $n)" link show $d >/dev/null 2>&1 || { echo "$n: Calico's tunnel device $d exists in policy-only Canal" >&2; return 1; }
    done
    mtu=$(ip -n "$(netns $n)" -o link show flannel.1 | grep -o 'mtu [0-9]*')
    [ "$mtu" = "mtu $CANAL_MTU" ] || { echo "$n: flannel.1 has $mtu, the pods' MTU (canal-config veth_mtu) is $CANAL_MTU" >&2; return 1; }
    grep -qx "FLANNEL_MTU=$CANAL_MTU" "$LC_RUN/$n/flannel/subnet.env" || { echo "$n: flannel's lease has $(grep MTU "$LC_RUN/$n/flannel/subnet.env"), the pods' MTU is $CANAL_MTU" >&2; return 1; }
    grep -q "\"mtu\": $CANAL_MTU," "$LC_STATE/$n/cni/10-canal.conflist" || { echo "$n: the CNI configuration does not set mtu $CANAL_MTU" >&2; return 1; }
    rules=$(calico_rules $n) || return 1
    echo "$n: no Calico tunnel, flannel.1 and its lease at MTU $CANAL_MTU = the pods' (CNI configuration), $rules"
  done
  echo "canal: no Calico IPAM block; flannel VXLAN between the nodes, felix policy only ($CALICO_DATAPLANE dataplane), pod MTU $CANAL_MTU, as configured"
}
