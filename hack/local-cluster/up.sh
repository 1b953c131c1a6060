#!/usr/bin/env bash
# up.sh: a two-node Kubernetes cluster on this machine, each node in its own network namespace.
#   deps (Debian) -> k8s binaries (built once per version, cached) -> PKI -> images -> netns
#   -> etcd + apiserver + controller-manager + scheduler (in n1) -> containerd + kubelet +
#   kube-proxy on n1 and n2 -> both nodes Ready (bounded).
# Usage: up.sh [--cni NAME]   (NAME: bridge (default), bridge-dual (IPv4 and IPv6 nodes, pods and
#   services), flannel-vxlan, flannel-host-gw, cilium-vxlan, cilium-native, cilium-native-legacy,
#   cilium-native-kube-proxy, the same with cilium120- (Cilium 1.20), calico-vxlan, calico-nftables,
#   canal, kube-router; or CNI=NAME; lib.sh CNIS lists them all; see cni/README.md; NAME+kube-proxy-MODE
#   runs kube-proxy in MODE, iptables or nftables, as KUBE_PROXY_MODE=MODE does for every NAME: README.md)
# Env: K8S_VERSION, LC_CACHE, LC_STATE, LC_RUN (lib.sh); IMAGES="a.tar b.tar" extra image
# tarballs to import on both nodes; READY_TIMEOUT (s, default 120) per node; CNI_TIMEOUT (s) for
# the CNI's agents to be ready.
# On failure it leaves the partial cluster for inspection; down.sh removes it.
set -euo pipefail
export _t0=$(date +%s.%N)
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, mounts, cgroups)"
READY_TIMEOUT=${READY_TIMEOUT:-120}
CNI=${CNI:-bridge}
while [ $# -gt 0 ]; do
  case $1 in
    --cni) CNI=${2:?--cni needs a name}; shift 2 ;;
    --cni=*) CNI=${1#--cni=}; shift ;;
    *) die "unknown argument $1 (usage: up.sh [--cni NAME])" ;;
  esac
done
cni_load "$CNI"
if ! why=$(cni_supported); then echo "skipped: --cni $CNI_NAME: $why"; exit $SKIP_EXIT; fi
clear_stale_cluster up.sh
mkdir -p "$LC_RUN" "$LC_STATE" "$LOGS"
# Record host state that up.sh or the daemons change, for down.sh.
for p in $HOST_PATHS; do [ -e "$p" ] || echo "$p"; done >"$LC_RUN/absent-host-paths"
sysctl $KUBELET_SYSCTLS 2>/dev/null | sed 's/ = /=/' >"$LC_RUN/sysctl.orig"

# ---------- deps + binaries ----------
"$LC_DIR/deps.sh" $CNI_DEPS; ts deps
"$LC_DIR/build-k8s.sh" 2>&1 | tee "$LOGS/build-k8s.log" | grep -E '^k8s '; ts "k8s binaries ($K8S_VERSION)"
mkdir -p "$TOOLS_BIN"
(cd "$LC_DIR/tools" && CGO_ENABLED=0 "$GO" build -trimpath -o "$TOOLS_BIN/" ./mkimage ./pause ./tcpbench) ||
  die "building hack/local-cluster/tools failed"
ts tools
cni_build; ts "CNI $CNI ($CNI_VERSION)"
# the cluster's CNI plugin directory: Debian's plugins plus the CNI's own
CNI_BIN=$LC_STATE/cni-bin; mkdir -p "$CNI_BIN"
for p in /usr/lib/cni/* $CNI_PLUGINS; do ln -sf "$p" "$CNI_BIN/"; done
printf 'CNI=%s\nCNI_FAMILY=%s\nCNI_VERSION=%s\n' "$CNI" "$CNI_FAMILY" "$CNI_VERSION" >"$LC_RUN/cni.env"

# ---------- PKI (openssl) ----------
mkdir -p "$PKI"; cd "$PKI"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 365 -subj "/CN=cnibench-local-ca" 2>/dev/null
openssl genrsa -out sa.key 2048 2>/dev/null; openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
cert() { # name CN O [SANs] -> name.crt/name.key
  local n=$1 cn=$2 o=$3 san=${4:-} subj
  { echo "basicConstraints=CA:FALSE"; echo "keyUsage=digitalSignature,keyEncipherment"
    if [ -n "$san" ]; then echo "extendedKeyUsage=serverAuth,clientAuth"; echo "subjectAltName=$san"
    else echo "extendedKeyUsage=clientAuth"; fi; } >"$n.ext"
  subj="/CN=$cn"; [ -n "$o" ] && subj="/O=$o/CN=$cn"
  openssl req -newkey rsa:2048 -nodes -keyout "$n.key" -out "$n.csr" -subj "$subj" 2>/dev/null
  openssl x509 -req -in "$n.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$n.crt" -days 365 -extfile "$n.ext" 2>/dev/null
  rm -f "$n.csr" "$n.ext"
}
kubeconfig() { # file cert user
  cat >"$1.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: cnibench-local
  cluster: {certificate-authority: $PKI/ca.crt, server: "https://$(node_ip n1):6443"}
users:
- name: $3
  user: {client-certificate: $PKI/$2.crt, client-key: $PKI/$2.key}
contexts:
- name: cnibench-local
  context: {cluster: cnibench-local, user: $3}
current-context: cnibench-local
KC
}
cert apiserver kube-apiserver "" "IP:10.96.0.1,IP:$(node_ip n1),IP:127.0.0.1${DUAL_STACK:+,IP:$(node_ip6 n1)},DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost"
cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters
cert admin kubernetes-admin system:masters
cert controller-manager system:kube-controller-manager ""
cert scheduler system:kube-scheduler ""
cert kube-proxy system:kube-proxy ""
kubeconfig admin admin admin
kubeconfig controller-manager controller-manager cm
kubeconfig scheduler scheduler sched
kubeconfig kube-proxy kube-proxy kp
for n in $NODES; do
  cert kubelet-$n system:node:$n system:nodes "IP:$(node_ip $n)${DUAL_STACK:+,IP:$(node_ip6 $n)},DNS:$n"
  kubeconfig kubelet-$n kubelet-$n kubelet
done
cd "$LC_DIR"
ts pki

# ---------- images (no registry: tarballs built here) ----------
IMG=$LC_STATE/images; mkdir -p "$IMG"
"$TOOLS_BIN/mkimage" -o "$IMG/pause.tar" -t cnibench.local/pause:1 -entrypoint /pause "$TOOLS_BIN/pause=/pause"
links=(); for a in $(/bin/busybox --list); do [ "$a" = busybox ] || links+=(-link "/bin/$a=busybox"); done
"$TOOLS_BIN/mkimage" -o "$IMG/busybox.tar" -t cnibench.local/busybox:1 -entrypoint /bin/sh "${links[@]}" \
  /bin/busybox=/bin/busybox "$TOOLS_BIN/tcpbench=/bin/tcpbench"
ts images

# ---------- network: two node netns joined by a veth pair, no link to the host; the outside (lib.sh) ----------
for n in $NODES; do
  ip netns add "$(netns $n)"
  ip -n "$(netns $n)" link set lo up
done
ip link add cnbk8s-v1 netns "$(netns n1)" type veth peer name cnbk8s-v2 netns "$(netns n2)"
ip -n "$(netns n1)" link set cnbk8s-v1 name eth0
ip -n "$(netns n2)" link set cnbk8s-v2 name eth0
for n in $NODES; do
  ip -n "$(netns $n)" addr add "$(node_ip $n)/24" dev eth0
  [ -z "$DUAL_STACK" ] || ip -n "$(netns $n)" addr add "$(node_ip6 $n)/64" dev eth0 nodad
  ip -n "$(netns $n)" link set eth0 up
  # per-netns sysctls (net.* in a fresh netns; the host's are not touched)
  innet $n sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1
  [ -z "$DUAL_STACK" ] || innet $n sysctl -qw net.ipv6.conf.all.forwarding=1 net.bridge.bridge-nf-call-ip6tables=1
done
outside_net
cni_net
ts network

# ---------- control plane in n1 ----------
mkdir -p "$LC_STATE/etcd"; chmod 700 "$LC_STATE/etcd"
start etcd n1 etcd --name n1 --data-dir "$LC_STATE/etcd" --listen-client-urls http://127.0.0.1:2379 \
  --advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 \
  --initial-advertise-peer-urls http://127.0.0.1:2380 --initial-cluster n1=http://127.0.0.1:2380
waitup etcd etcd 30 innet n1 etcdctl --endpoints http://127.0.0.1:2379 endpoint health
start kube-apiserver n1 "$K8S_BIN/kube-apiserver" --advertise-address="$(node_ip n1)" --bind-address=0.0.0.0 --secure-port=6443 \
  --etcd-servers=http://127.0.0.1:2379 --service-cluster-ip-range="$(service_cidrs)" \
  --client-ca-file="$PKI/ca.crt" --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
  --kubelet-client-certificate="$PKI/apiserver-kubelet-client.crt" --kubelet-client-key="$PKI/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority="$PKI/ca.crt" --kubelet-preferred-address-types=InternalIP \
  --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction --allow-privileged=true
waitup kube-apiserver "kube-apiserver /readyz" 90 kc get --raw /readyz
start kube-controller-manager n1 "$K8S_BIN/kube-controller-manager" --kubeconfig="$PKI/controller-manager.kubeconfig" \
  --authentication-kubeconfig="$PKI/controller-manager.kubeconfig" --authorization-kubeconfig="$PKI/controller-manager.kubeconfig" \
  --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
  --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
  --use-service-account-credentials=true --service-cluster-ip-range="$(service_cidrs)" --leader-elect=false \
  --bind-address=127.0.0.1 --flex-volume-plugin-dir="$LC_STATE/flexvolume"
start kube-scheduler n1 "$K8S_BIN/kube-scheduler" --kubeconfig="$PKI/scheduler.kubeconfig" \
  --authentication-kubeconfig="$PKI/scheduler.kubeconfig" --authorization-kubeconfig="$PKI/scheduler.kubeconfig" \
  --leader-elect=false --bind-address=127.0.0.1
waitup kube-controller-manager "default serviceaccount" 60 kc get serviceaccount default
ts control-plane

# ---------- nodes ----------
# bash -c script: CGROUP CMD... : move this shell into cgroup CGROUP below the v1 cpu, cpuacct and
# memory hierarchies where the node's root exists (below the v2 root on a v2 host), then exec CMD
# (the same pid: the pid file stays right). Best effort: a cgroup that cannot be joined is said in
# the log, and kube-proxy runs all the same (its usage is then not measured).
KUBE_PROXY_IN_CGROUP='cg=$1; shift
if [ -e /sys/fs/cgroup/cgroup.controllers ]; then dirs=/sys/fs/cgroup/; else dirs=$(ls -d /sys/fs/cgroup/*/); fi
for h in $dirs; do
  case $h in /sys/fs/cgroup/|*/cpu/|*/cpuacct/|*/cpu,cpuacct/|*/cpuacct,cpu/|*/memory/) ;; *) continue ;; esac
  [ -d "$h${cg%/*}" ] || continue
  { mkdir -p "$h$cg" && echo $$ >"$h$cg/cgroup.procs"; } 2>/dev/null || echo "kube-proxy: could not join cgroup $h$cg" >&2
done
exec "$@"'
sysctls_changed() { [ "$(sysctl $KUBELET_SYSCTLS 2>/dev/null | sed 's/ = /=/')" != "$(cat "$LC_RUN/sysctl.orig")" ]; }
# Ready, and the node controller has lifted the taints it set while the node
# was not (node.kubernetes.io/not-ready:NoExecute outlives the condition by
# up to one node-monitor period: a run started then finds the node unusable).
node_ready() {
  kc get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' | grep -qx True &&
    ! kc get node "$1" -o jsonpath='{range .spec.taints[*]}{.key}{"\n"}{end}' | grep -q '^node\.kubernetes\.io/'
}
start_node() {
  local N=$1 D=$LC_STATE/$1 S=$LC_RUN/$1 CG=$CGROOT-$1
  mkdir -p "$D/containerd" "$D/kubelet" "$D/cni" "$D/pod-logs" "$D/opt" "$S"
  # cgroup root for this node's pods in every v1 hierarchy (the kubelet checks them all);
  # cpuset needs cpus/mems copied from the parent. Top level: removed by down.sh.
  for h in /sys/fs/cgroup/*/; do
    case $h in */unified/) continue ;; esac
    mkdir -p "$h${CG#/}"
  done
  for f in cpuset.cpus cpuset.mems; do
    [ -n "$(cat "/sys/fs/cgroup/cpuset$CG/$f")" ] || cat "/sys/fs/cgroup/cpuset/$f" >"/sys/fs/cgroup/cpuset$CG/$f"
  done
  cni_node_conf "$N"
  cat >"$D/containerd.toml" <<TOML
version = 2
root = "$D/containerd"
state = "$S/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$S/containerd.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "$D/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "cnibench.local/pause:1"
  # this VM lacks CAP_SYS_RESOURCE: runc must never lower oom_score_adj below containerd's own
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$S/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$D/cni"
TOML
  start containerd-$N $N env $(cni_containerd_env "$N") containerd --config "$D/containerd.toml"
  waitup containerd-$N "containerd $N" 30 ctr --address "$S/containerd.sock" version
  for t in "$IMG/pause.tar" "$IMG/busybox.tar" $CNI_IMAGES ${IMAGES:-}; do "$LC_DIR/import-image.sh" "$t" $N; done
  cat >"$D/kubelet.yaml" <<KL
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
address: $(node_ip $N)
tlsCertFile: $PKI/kubelet-$N.crt
tlsPrivateKeyFile: $PKI/kubelet-$N.key
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
cgroupDriver: cgroupfs
cgroupRoot: $CG
containerRuntimeEndpoint: unix://$S/containerd.sock
failSwapOn: false
clusterDomain: cluster.local
clusterDNS: [10.96.0.10]
resolvConf: ""
podLogsDir: $D/pod-logs
volumePluginDir: $D/volume-plugins
serializeImagePulls: false
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
maxPods: 110
KL
  start kubelet-$N $N "$K8S_BIN/kubelet" --config="$D/kubelet.yaml" --kubeconfig="$PKI/kubelet-$N.kubeconfig" \
    --root-dir="$D/kubelet" --node-ip="$(node_ips $N)" --hostname-override=$N
  waitup kubelet-$N "node $N registered" 60 kc get node $N
  # the node's pod CIDR, as controller-manager --allocate-node-cidrs would set it (the CNIs with
  # Kubernetes IPAM read it); fixed per node so that the layout is the same on every run
  kc patch node $N --type merge -p "{\"spec\":{\"podCIDR\":\"$(pod_cidr $N)\",\"podCIDRs\":[$(pod_cidrs_json $N)]}}" >/dev/null
  # the kubelet rewrites a few host-wide sysctls when it starts; put the host's values back
  # (its "Updating kernel flag" log is at -v=2, so watch the values instead; bounded, 10 s)
  waitfor "kubelet $N kernel-flag writes" 10 sysctls_changed || echo "(the kubelet changed no host sysctl)"
  sysctl -qw $(cat "$LC_RUN/sysctl.orig")
  cat >"$D/kube-proxy.yaml" <<KP
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $PKI/kube-proxy.kubeconfig}
hostnameOverride: $N
mode: $KUBE_PROXY_MODE
clusterCIDR: $(cluster_cidrs)
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
# 0 = leave the (host-wide) nf_conntrack sysctls alone
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
KP
  # kube-proxy in a cgroup of its own below the node's (lib.sh KUBE_PROXY_CGROUP), so that its
  # CPU and memory can be read apart from everything else up.sh started
  [ "$CNI_KUBE_PROXY" = yes ] && start kube-proxy-$N $N bash -c "$KUBE_PROXY_IN_CGROUP" kube-proxy \
    "${KUBE_PROXY_CGROUP//\{node\}/$N}" "$K8S_BIN/kube-proxy" --config="$D/kube-proxy.yaml"
  return 0
}
for n in $NODES; do start_node $n; ts "node $n started"; done
cni_install; ts "CNI $CNI installed"
for n in $NODES; do waitup kubelet-$n "node $n Ready" "$READY_TIMEOUT" node_ready $n || { cni_logs; exit 1; }; done
cni_wait; ts "CNI $CNI ready"
sysctl -qw $(cat "$LC_RUN/sysctl.orig")
ts "nodes Ready"
kc get nodes -o wide
cat <<EOM
cluster up with CNI $CNI_NAME ($CNI_VERSION) in $(echo "$(date +%s.%N) - $_t0" | bc | cut -d. -f1)s
  kubeconfig: $KUBECONFIG_ADMIN   (the API is at https://$(node_ip n1):6443 inside netns $(netns n1) only)
  kubectl:    $LC_DIR/kubectl.sh get pods -A      (= nsenter --net=/run/netns/$(netns n1) $K8S_BIN/kubectl --kubeconfig $KUBECONFIG_ADMIN ...)
  images:     $LC_DIR/import-image.sh IMAGE.tar   (then imagePullPolicy: Never)
  logs:       $LOGS
  stop:       $LC_DIR/down.sh
EOM
