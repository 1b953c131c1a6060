# Common settings and helpers for hack/local-cluster/*.sh (sourced, not run).
# Everything can be overridden from the environment; see README.md.
LC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
K8S_VERSION=${K8S_VERSION:-v1.33.13}
# Build cache, kept between runs (and between checkouts): binaries per version + Go caches.
LC_CACHE=${LC_CACHE:-/var/cache/cnibench-k8s}
K8S_BIN=$LC_CACHE/$K8S_VERSION/bin
# Real CNIs built from the Go module proxy (build-cni.sh), cached per family and version.
FLANNEL_VERSION=${FLANNEL_VERSION:-v0.28.10}
CNI_PLUGINS_VERSION=${CNI_PLUGINS_VERSION:-v0.9.1}   # its plugins/meta/flannel reads flanneld's subnet.env
CILIUM_VERSION=${CILIUM_VERSION:-v1.15.19}   # cilium-*; cilium120-* set their own (cni/cilium120.sh)
CILIUM_VERSION_BASE=$CILIUM_VERSION          # cni_load puts it back before each family script
CALICO_VERSION=${CALICO_VERSION:-v3.31.0}   # served only by pseudo-version (build-cni.sh pins it)
# calico_pins VERSION : the pseudo-versions of Calico's release commit and of the projectcalico/api
# commit its go.mod replaces with ./api (the release tags are refused: no /v3 suffix)
calico_pins() {
  case $1 in
    v3.31.0) echo "v0.0.0-20251021213802-b1f3c43f8437 v0.0.0-20251022175904-f2ab03771208" ;;
    *) die "calico $1: no pseudo-version pinned in lib.sh calico_pins (the Go module proxy serves Calico only by pseudo-version)" ;;
  esac
}
CALICO_CLANG=${CALICO_CLANG:-clang-19}       # compiles felix's BPF programs (calico-ebpf; upstream uses LLVM 18)
BIRD_VERSION=${BIRD_VERSION:-1.6.8-2.1+b1}   # Debian's bird (1.6), calico-node's BGP daemon (calico-bgp): not installed, unpacked into the image
KUBE_ROUTER_VERSION=${KUBE_ROUTER_VERSION:-v2.1.0}   # the only version the Go module proxy serves (a test fixture: not shipped)
cni_cache() { case $1 in flannel) echo "$LC_CACHE/cni/flannel-$FLANNEL_VERSION" ;; cilium) echo "$LC_CACHE/cni/cilium-$CILIUM_VERSION" ;; calico) echo "$LC_CACHE/cni/calico-$CALICO_VERSION" ;;
  calico-bpf) echo "$LC_CACHE/cni/calico-bpf-$CALICO_VERSION" ;; bird) echo "$LC_CACHE/cni/bird-$BIRD_VERSION" ;;
  kube-router) echo "$LC_CACHE/cni/kube-router-$KUBE_ROUTER_VERSION" ;; esac; }
TOOLS_BIN=$LC_CACHE/tools-bin
# Cluster state (etcd data, containerd roots, kubelet roots, PKI, images, logs): removed by down.sh.
LC_STATE=${LC_STATE:-/var/lib/cnibench-k8s}
# Short runtime paths (sockets, pid files, runc roots): removed by down.sh.
LC_RUN=${LC_RUN:-/run/cnibench-k8s}
PKI=$LC_STATE/pki
LOGS=$LC_STATE/logs
KUBECONFIG_ADMIN=$PKI/admin.kubeconfig
NODES="n1 n2"                 # n1 also runs the control plane
NS_PREFIX=cnbk8s-             # node netns: cnbk8s-n1, cnbk8s-n2 (not cnb-: that is the tests' prefix)
CGROOT=/cnbk8s                # kubelet cgroupRoot = /cnbk8s-<node> in every v1 hierarchy
# kube-proxy's mode on the CNIs that keep it (CNI_KUBE_PROXY=yes): iptables (the default) or nftables
# (GA in Kubernetes 1.33; needs nft, which deps.sh installs). A CNI name with the suffix
# +kube-proxy-MODE sets it for that name only (cni_load: bridge+kube-proxy-nftables); the
# environment's applies to every name without the suffix. README.md, "kube-proxy's mode".
KUBE_PROXY_MODES="iptables nftables"
KUBE_PROXY_MODE_ENV=${KUBE_PROXY_MODE:-iptables}
KUBE_PROXY_SUFFIX=+kube-proxy-
# kube-proxy's cgroup below each v1 hierarchy ({node}: n1, n2), inside the node's cgroup root
# (down.sh removes it with the root): cnibench reads its CPU and memory there
# (--kube-proxy-cgroup, docs/kubernetes.md), as it reads the pods' below the same root.
KUBE_PROXY_CGROUP="${CGROOT#/}-{node}/kube-proxy"
SERVICE_CIDR=10.96.0.0/16
CLUSTER_CIDR=10.244.0.0/16
NODE_NET=10.250.0             # n1 10.250.0.1, n2 10.250.0.2; only inside the node netns
# Host paths the kubelet / containerd's CNI code hard-code (not configurable in 1.33 / containerd
# 1.6): /var/log/containers (log symlinks), /var/lib/kubelet/device-plugins (kubelet.sock),
# /var/lib/cni (CNI result cache), /run/containerd (shim sockets). up.sh records which existed;
# down.sh removes our entries and the directories it created.
HOST_PATHS="/var/log/containers /var/lib/kubelet /var/lib/cni /run/containerd"
# host-wide sysctls the kubelet rewrites at start (protectKernelDefaults=false); saved and restored
KUBELET_SYSCTLS="kernel.panic kernel.panic_on_oops vm.overcommit_memory vm.panic_on_oom kernel.keys.root_maxkeys kernel.keys.root_maxbytes"
export GOTOOLCHAIN=local
export GOMODCACHE=${LC_GOMODCACHE:-$LC_CACHE/go/mod}
export GOCACHE=${LC_GOCACHE:-$LC_CACHE/go/build}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}

# go_or_die WHAT CMD... : run a go command (build, mod download, list) quietly; on failure, die
# with one line: the module the Go module proxy refused, its status, and the versions the proxy
# serves (the one to try, pinned in the build script), or else WHAT and the command's last lines.
go_or_die() {
  local what=$1 out rc=0 m mod ver st vs; shift
  out=$(mktemp)
  "$@" >"$out" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    m=$(grep -oE '[^ :"]+@v[^ :"]+: reading [^ ]+: [0-9]{3}[A-Za-z ]*' "$out" | head -1 || true)
    if [ -n "$m" ]; then
      mod=${m%%@*} ver=${m#*@}; ver=${ver%%:*}; st=${m##*: }
      vs=$(cd / && GOFLAGS= "$GO" list -m -versions "$mod" 2>/dev/null | cut -s -d' ' -f2- | tr ' ' '\n' | tail -4 | tr '\n' ' ' || true)
      rm -f "$out"; vs=${vs% }; st=${st% }
      die "$what: the Go module proxy refused $mod@$ver ($st); it serves ${vs:-no version of it} — pin one of those in ${0##*/} (a replace directive for a dependency)"
    fi
    tail -15 "$out" >&2; rm -f "$out"
    die "$what failed (the go command's last lines are above)"
  fi
  rm -f "$out"
}

node_ip() { echo "$NODE_NET.${1#n}"; }               # n1 -> 10.250.0.1
pod_cidr() { echo "10.244.$(( ${1#n} - 1 )).0/24"; } # n1 -> 10.244.0.0/24
# Dual-stack (up.sh --cni bridge-dual): IPv6 beside IPv4 on the nodes' link, the pods and
# the services, IPv4 first (the primary family). Unique local addresses, inside the netns only.
DUAL_STACK=   # set by cni/bridge.sh for bridge-dual
SERVICE_CIDR6=fd00:10:96::/112
CLUSTER_CIDR6=fd00:10:244::/56
NODE_NET6=fd00:10:250:
node_ip6() { echo "$NODE_NET6:${1#n}"; }                        # n1 -> fd00:10:250::1
pod_cidr6() { local i=$(( ${1#n} - 1 )); if [ $i = 0 ]; then echo "fd00:10:244::/64"; else echo "fd00:10:244:$i::/64"; fi; } # n1 -> fd00:10:244::/64, n2 -> fd00:10:244:1::/64
# the comma-separated lists the components take: IPv4, then IPv6 when dual-stack
service_cidrs() { echo "$SERVICE_CIDR${DUAL_STACK:+,$SERVICE_CIDR6}"; }
cluster_cidrs() { echo "$CLUSTER_CIDR${DUAL_STACK:+,$CLUSTER_CIDR6}"; }
node_ips() { echo "$(node_ip $1)${DUAL_STACK:+,$(node_ip6 $1)}"; }
pod_cidrs_json() { echo "\"$(pod_cidr $1)\"${DUAL_STACK:+,\"$(pod_cidr6 $1)\"}"; }
netns() { echo "$NS_PREFIX$1"; }
# The outside: a network namespace beyond the nodes (cnbk8s-ext), for servers that are no pod and
# no node (the egress scenario's --egress-denied/--egress-allowed: Cilium's CIDR rules select only
# such addresses). Addresses in 198.18.0.0/15, RFC 2544's range for benchmarks. Node nN has a veth
# of its own to it, ext0 198.18.N.1/30 <-> 198.18.N.2/30, and routes 198.18.0.0/24 there; the
# servers' addresses are on the outside's lo, and it routes each node's address and pod CIDR back
# (a pod that is not masqueraded on its way out of ext0 keeps its own address).
OUTSIDE=ext
OUTSIDE_DENIED=198.18.0.10:12870   # the egress scenario's denied server (outside_serve)
OUTSIDE_ALLOWED=198.18.0.11:12870  # and its allowed one
outside_net() {
  local n i o=$(netns $OUTSIDE)
  ip netns add "$o"
  ip -n "$o" link set lo up
  for a in "$OUTSIDE_DENIED" "$OUTSIDE_ALLOWED"; do ip -n "$o" addr add "${a%:*}/32" dev lo; done
  for n in $NODES; do
    i=${n#n}
    ip link add ext0 netns "$(netns $n)" type veth peer name "$n" netns "$o"
    ip -n "$(netns $n)" addr add "198.18.$i.1/30" dev ext0
    ip -n "$(netns $n)" link set ext0 up
    ip -n "$o" addr add "198.18.$i.2/30" dev "$n"
    ip -n "$o" link set "$n" up
    ip -n "$(netns $n)" route add 198.18.0.0/24 via "198.18.$i.2"
    ip -n "$o" route add "$(node_ip $n)/32" via "198.18.$i.1"
    ip -n "$o" route add "$(pod_cidr $n)" via "198.18.$i.1"
  done
}
# outside_serve CNIBENCH : a `cnibench serve` on each outside address (daemons outside-denied and
# outside-allowed; down.sh stops them), waited for.
outside_serve() {
  local bin=$1
  start outside-denied "$OUTSIDE" "$bin" serve --listen "$OUTSIDE_DENIED"
  start outside-allowed "$OUTSIDE" "$bin" serve --listen "$OUTSIDE_ALLOWED"
  waitup outside-denied "the outside's denied server" 20 innet "$OUTSIDE" bash -c "exec 3<>/dev/tcp/${OUTSIDE_DENIED%:*}/${OUTSIDE_DENIED#*:}"
  waitup outside-allowed "the outside's allowed server" 20 innet "$OUTSIDE" bash -c "exec 3<>/dev/tcp/${OUTSIDE_ALLOWED%:*}/${OUTSIDE_ALLOWED#*:}"
}
# The local cluster's LoadBalancer addresses (lb-addresses.sh): 198.19.0.1 to .254, in RFC 2544's
# range like the outside's. lb_serve starts the controller that writes them into LoadBalancer
# services' status (daemon lb-addresses in n1, stopped by down.sh), and routes the pool from the
# outside to n1 (via its ext0: what an L2 or BGP announcement would do; n1 is the client pods'
# node, the endpoint srv-b is on n2, so traffic from the outside crosses the nodes as a cloud
# load balancer's sent to any node does); without it (the default) a LoadBalancer service here
# never gets an address, as on a cluster with no controller.
LB_POOL=198.19.0
lb_serve() {
  start lb-addresses n1 "$LC_DIR/lb-addresses.sh"
  waitup lb-addresses "the load-balancer address controller's watch" 20 grep -q . "$LOGS/lb-addresses.ready"
  ip -n "$(netns $OUTSIDE)" route replace "$LB_POOL.0/24" via 198.18.1.1
}
# network namespace only; the host mount namespace is kept on purpose (kubelet volume mounts and
# containerd rootfs mounts must be in one mount namespace), so not `ip netns exec`.
innet() { local n=$1; shift; nsenter --net=/run/netns/$NS_PREFIX$n -- "$@"; }
kc() { innet n1 "$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" --cache-dir "$LC_STATE/kubectl-cache" "$@"; }
ctrn() { local n=$1; shift; ctr --address "$LC_RUN/$n/containerd.sock" -n k8s.io "$@"; }

_t0=${_t0:-$(date +%s.%N)}
ts() { printf '[%6.1fs] %s\n' "$(echo "$(date +%s.%N) - $_t0" | bc)" "$*"; }
die() { echo "ERROR: $*" >&2; exit 1; }

# waitfor DESC TIMEOUT_S CMD... : poll CMD every 0.2 s until it succeeds or the deadline passes.
waitfor() {
  local d=$1 t=$2; shift 2
  local start=$SECONDS
  until "$@" >/dev/null 2>&1; do
    if (( SECONDS - start >= t )); then
      echo "TIMEOUT after ${t}s waiting for $d (command: $*)" >&2
      return 1
    fi
    sleep 0.2
  done
  echo "$d: ready after $((SECONDS - start))s"
}

# start NAME NODE CMD... : daemon in the node's netns, own session, log + pid file.
start() {
  local name=$1 node=$2; shift 2
  mkdir -p "$LC_RUN/pids" "$LOGS"
  local pf=$LC_RUN/pids/$name.pid
  if [ -f "$pf" ] && kill -0 "$(cat "$pf")" 2>/dev/null; then echo "$name already running"; return; fi
  setsid nsenter --net=/run/netns/$NS_PREFIX$node -- "$@" >"$LOGS/$name.log" 2>&1 </dev/null &
  echo $! >"$pf"
  echo "started $name (pid $!, log $LOGS/$name.log)"
}
# alive NAME : the daemon is still running (used in waits so that a crash fails fast)
alive() { local pf=$LC_RUN/pids/$1.pid; [ -f "$pf" ] && kill -0 "$(cat "$pf")" 2>/dev/null; }
# waitup NAME DESC TIMEOUT CMD... : like waitfor, but give up at once if daemon NAME died.
waitup() {
  local name=$1 d=$2 t=$3; shift 3
  local start=$SECONDS
  until "$@" >/dev/null 2>&1; do
    alive "$name" || { echo "ERROR: $name exited while waiting for $d; last log lines:" >&2; tail -20 "$LOGS/$name.log" >&2; return 1; }
    if (( SECONDS - start >= t )); then
      echo "TIMEOUT after ${t}s waiting for $d; last lines of $LOGS/$name.log:" >&2; tail -20 "$LOGS/$name.log" >&2
      return 1
    fi
    sleep 0.2
  done
  echo "$d: ready after $((SECONDS - start))s"
}
# stop NAME... : SIGTERM by pid file (all at once), up to 15 s, then SIGKILL. Only our own pids.
stop() {
  local n f p start busy pids=() names=()
  for n in "$@"; do
    f=$LC_RUN/pids/$n.pid
    [ -f "$f" ] || continue
    p=$(cat "$f")
    if kill "$p" 2>/dev/null; then pids+=("$p"); names+=("$n($p)"); fi
    rm -f "$f"
  done
  [ ${#pids[@]} -gt 0 ] || return 0
  start=$SECONDS
  while (( SECONDS - start < 15 )); do
    busy=0; for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && busy=1; done
    [ $busy = 1 ] || break; sleep 0.1
  done
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && { kill -9 "$p" 2>/dev/null || true; echo "killed $p after 15s"; }; done
  echo "stopped ${names[*]} in $((SECONDS - start))s"
}

# cluster_here : something of a local cluster is on this machine (state dirs or a node netns).
cluster_here() { [ -e "$LC_RUN" ] || [ -e "$LC_STATE" ] || [ -e "/run/netns/${NS_PREFIX}n1" ] || [ -e "/run/netns/${NS_PREFIX}n2" ]; }
# cluster_live : a process of that cluster still runs: a pid file naming a live process inside one
# of the cluster's network namespaces (after a reboot or on a machine made from a copy of this
# one's disk, a pid file may name an unrelated process), or a process in the pods' cgroups.
cluster_live() {
  local pf p ns n ino
  for pf in "$LC_RUN"/pids/*.pid; do
    [ -f "$pf" ] || continue
    p=$(cat "$pf"); ns=$(readlink "/proc/$p/ns/net" 2>/dev/null) || continue
    for n in $NODES $OUTSIDE; do
      ino=$(stat -L -c %i "/run/netns/$NS_PREFIX$n" 2>/dev/null) || continue
      [ "$ns" = "net:[$ino]" ] && return 0
    done
  done
  cluster_cgroup_pids | grep -q .
}
# cluster_cgroup_pids : the pids in the cluster's cgroups (below /cnbk8s-<node> in every hierarchy).
cluster_cgroup_pids() {
  local f
  for f in /sys/fs/cgroup/*/"${CGROOT#/}"-n*; do
    [ -d "$f" ] && find "$f" -name cgroup.procs -exec cat {} + 2>/dev/null
  done
  return 0
}
# clear_stale_cluster WHO : before a host snapshot or up.sh. Leftovers of a cluster none of whose
# processes runs (a run killed with its machine, or a machine made from a copy of the disk of
# one that was running a cluster) are removed with down.sh, said in one line; a running cluster
# is someone's run: fail, naming it, and touch nothing.
clear_stale_cluster() {
  local who=$1
  cluster_here || return 0
  cluster_live && die "$who: a local cluster is running ($LC_RUN): wait for its run to end, or stop it with $LC_DIR/down.sh"
  echo "$who: leftovers of an interrupted local cluster ($LC_RUN, $LC_STATE, netns ${NS_PREFIX}*), none of its processes running: removing them with down.sh first"
  "$LC_DIR/down.sh" >&2 || die "$who: down.sh could not remove the interrupted cluster's leftovers (its output above)"
}

# e2e_teardown LABEL : the EXIT trap of the e2e scripts (they set OUT and result=0 on success):
# down.sh, host-state snapshot compared with $OUT/host-before, one PASSED/FAILED line.
e2e_teardown() {
  local rc=$? ok=1 label=$1
  trap - EXIT
  ts "teardown (test exit status $rc)"
  KEEP_LOGS=$OUT/cluster-logs "$LC_DIR/down.sh" >"$OUT/down.log" 2>&1 || { ok=0; echo "FAIL: down.sh (see $OUT/down.log)"; tail -5 "$OUT/down.log"; }
  ts down
  "$LC_DIR/hoststate.sh" snapshot "$OUT/host-after"
  "$LC_DIR/hoststate.sh" compare "$OUT/host-before" "$OUT/host-after" || ok=0
  if [ "$rc" -eq 0 ] && [ "$result" -eq 0 ] && [ "$ok" -eq 1 ]; then ts "$label PASSED"; exit 0; fi
  ts "$label FAILED (logs in $OUT)"; exit 1
}

# stage_bins ROOT FILE... : copy each file (symlinks resolved) into the staged image root ROOT at
# its real path, with a symlink at the name given, and every shared library ldd names (and the
# dynamic loader). The root has the usr-merged layout of Debian 12 (/bin -> usr/bin, …).
stage_bins() {
  local root=$1 f real lib; shift
  mkdir -p "$root/usr/bin" "$root/usr/sbin" "$root/usr/lib" "$root/usr/lib64"
  for l in bin sbin lib lib64; do [ -e "$root/$l" ] || ln -s "usr/$l" "$root/$l"; done
  for f in "$@"; do
    real=$(readlink -f "$f") || die "stage_bins: $f: not found"
    [ -e "$real" ] || die "stage_bins: $f: not found"
    # rm first: the name may be a busybox applet link, which cp would follow and overwrite
    mkdir -p "$root$(dirname "$real")"; rm -f "$root$real"; cp -a "$real" "$root$real"
    if [ "$f" != "$real" ] && [ ! -e "$root$f" ] && [ ! -L "$root$f" ]; then mkdir -p "$root$(dirname "$f")"; ln -s "$real" "$root$f"; fi
    stage_libs "$root" "$real"
  done
}
# stage_libs ROOT FILE... : the shared libraries ldd names for each FILE (and the dynamic loader),
# copied into ROOT at their real paths, with a symlink at the name ldd gives.
stage_libs() {
  local root=$1 lib rl; shift
  for lib in $(for f in "$@"; do ldd "$f" 2>/dev/null | grep -oE '/[^ ]+' || true; done | sort -u); do
    rl=$(readlink -f "$lib")
    [ -e "$root$rl" ] || { mkdir -p "$root$(dirname "$rl")"; cp -a "$rl" "$root$rl"; }
    [ "$lib" = "$rl" ] || [ -e "$root$lib" ] || [ -L "$root$lib" ] || { mkdir -p "$root$(dirname "$lib")"; ln -s "$rl" "$root$lib"; }
  done
}
# stage_iptables ROOT : iptables (nft backend), ip6tables and their save/restore, as Debian has
# them (xtables-nft-multi dispatches on its name), with the extensions they dlopen.
stage_iptables() {
  local root=$1 n
  stage_bins "$root" /usr/sbin/xtables-nft-multi
  for n in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore \
    iptables-nft iptables-nft-save iptables-nft-restore ip6tables-nft ip6tables-nft-save ip6tables-nft-restore; do
    ln -sf xtables-nft-multi "$root/usr/sbin/$n"
  done
  mkdir -p "$root/usr/lib/x86_64-linux-gnu"
  cp -a /usr/lib/x86_64-linux-gnu/xtables "$root/usr/lib/x86_64-linux-gnu/"
  stage_libs "$root" /usr/lib/x86_64-linux-gnu/xtables/*.so
}
# stage_busybox ROOT : a static busybox with its applets as /usr/bin/<applet> links (a shell, mount, …).
stage_busybox() {
  local root=$1 a
  mkdir -p "$root/usr/bin"; cp /bin/busybox "$root/usr/bin/busybox"
  for a in $(/bin/busybox --list); do [ -e "$root/usr/bin/$a" ] || [ -e "$root/usr/sbin/$a" ] || ln -s busybox "$root/usr/bin/$a"; done
}

# The CNIs up.sh --cni installs (cni/<family>.sh; interface in cni/README.md).
CNIS="bridge bridge-dual flannel-vxlan flannel-host-gw flannel-wireguard cilium-vxlan cilium-geneve cilium-native cilium-native-legacy cilium-native-kube-proxy cilium-wireguard cilium120-vxlan cilium120-geneve cilium120-native cilium120-native-legacy cilium120-native-kube-proxy cilium120-wireguard calico-vxlan calico-nftables calico-bgp calico-ebpf canal kube-router"
# cni_known NAME : NAME is one of CNIS, with or without a +kube-proxy-MODE suffix.
cni_known() { [[ " $CNIS " == *" ${1%%+*} "* ]]; }
# cni_load NAME : check NAME and source its family's script (sets CNI, CNI_FAMILY, CNI_VERSION, …).
# NAME may end in +kube-proxy-MODE (KUBE_PROXY_MODES): CNI is then the name without it, CNI_NAME
# the whole name, KUBE_PROXY_MODE the mode; without it KUBE_PROXY_MODE is the environment's
# (default iptables). A mode other than iptables on a CNI that runs no kube-proxy is refused.
cni_load() {
  CNI_NAME=$1 CNI=${1%%+*} KUBE_PROXY_MODE=$KUBE_PROXY_MODE_ENV
  local suffix=""
  if [ "$CNI_NAME" != "$CNI" ]; then
    suffix=${CNI_NAME#"$CNI"}
    [[ $suffix == "$KUBE_PROXY_SUFFIX"* ]] || die "--cni $CNI_NAME: unknown suffix $suffix (want ${KUBE_PROXY_SUFFIX}MODE, MODE one of: $KUBE_PROXY_MODES)"
    KUBE_PROXY_MODE=${suffix#"$KUBE_PROXY_SUFFIX"}
  fi
  [[ " $KUBE_PROXY_MODES " == *" $KUBE_PROXY_MODE "* ]] ||
    die "${suffix:+--cni $CNI_NAME: }kube-proxy mode $KUBE_PROXY_MODE: want one of: $KUBE_PROXY_MODES"
  [[ " $CNIS " == *" $CNI "* ]] || die "--cni $CNI: unknown CNI (want one of: $CNIS, optionally with ${KUBE_PROXY_SUFFIX}MODE)"
  # the family: NAME up to its first dash, unless a script is named after the whole NAME (kube-router)
  CNI_FAMILY=${CNI%%-*}; [ -f "$LC_DIR/cni/$CNI.sh" ] && CNI_FAMILY=$CNI
  CNI_IMAGES="" CNI_PLUGINS="" CNI_NEEDS="" CNI_DEPS=""
  CILIUM_VERSION=$CILIUM_VERSION_BASE
  source "$LC_DIR/cni/$CNI_FAMILY.sh"
  if [ "$KUBE_PROXY_MODE" != iptables ]; then
    if [ "$CNI_KUBE_PROXY" != yes ]; then
      [ -z "$suffix" ] || die "--cni $CNI_NAME: $CNI runs no kube-proxy (its CNI replaces it): there is no kube-proxy mode to set"
    else
      # the family's summary names kube-proxy's mode (iptables) or only kube-proxy
      case $CNI_MODE in
        *"kube-proxy iptables"*) CNI_MODE=${CNI_MODE//kube-proxy iptables/kube-proxy $KUBE_PROXY_MODE} ;;
        *) CNI_MODE="$CNI_MODE (kube-proxy $KUBE_PROXY_MODE)" ;;
      esac
    fi
  fi
}
# cni_supported : whether this kernel has the link types the CNI's mode needs (CNI_NEEDS), probed
# by creating one in a scratch network namespace; prints the reason when it has not.
cni_supported() {
  local t ns=${NS_PREFIX}probe$$ err
  for t in $CNI_NEEDS; do
    ip netns add "$ns" || { echo "cannot create the probe namespace $ns"; return 1; }
    case $t in
      vxlan) err=$(ip -n "$ns" link add p0 type vxlan id 1 dstport 0 2>&1) ;;
      geneve) err=$(ip -n "$ns" link add p0 type geneve id 1 remote 192.0.2.1 2>&1) ;;
      *) err=$(ip -n "$ns" link add p0 type "$t" 2>&1) ;;
    esac
    local rc=$?
    ip netns del "$ns"
    [ $rc -eq 0 ] || { echo "the kernel has no $t link type (ip link add type $t: ${err:-failed})"; return 1; }
  done
}
# SKIP_EXIT: the exit status of up.sh and suite-e2e.sh when the CNI cannot run on this kernel.
SKIP_EXIT=3
