# cni/calico.sh: Calico $CALICO_VERSION as its own manifests install it (the Kubernetes datastore,
# calico-ipam; calico-node as a DaemonSet in kube-system, configured by the calico-config ConfigMap
# and its environment), built here from the Go module proxy (build-cni.sh calico, calico-bpf).
# Modes:
#   calico-vxlan     manifests/calico-vxlan.yaml: VXLAN (Always), no BGP daemon, felix's iptables
#                    dataplane (iptables' nft backend)
#   calico-nftables  the same with felix's nftables dataplane (FELIX_NFTABLESMODE=Enabled)
#   calico-bgp       manifests/calico.yaml without its IPIP (the kernel has none): BGP between the
#                    nodes (the bird backend: confd renders BIRD's configuration, Debian's BIRD 1.6
#                    runs it; a node-to-node mesh), no encapsulation, routes to the other node's
#                    blocks via its address; felix's iptables dataplane
#   calico-ebpf      manifests/calico-bpf.yaml: felix's eBPF dataplane (calico-node built with cgo
#                    against libbpf, its BPF programs compiled by clang), which replaces kube-proxy,
#                    with the same BGP routing as calico-bgp
# kube-proxy stays (iptables mode) except with the eBPF dataplane. What differs from the
# manifests, and why:
# - the IP pool is the cluster's 10.244.0.0/16 in blocks of /26, the node address from eth0 (each
#   node also has ext0, its link to the outside); VXLAN Always (calico-vxlan.yaml's CrossSubnet would
#   route the nodes' pods unencapsulated: both nodes are on one subnet); IPIP Never;
# - no init containers: upgrade-ipam (fresh clusters only), install-cni (cni_node_conf writes the
#   CNI configuration, up.sh links the plugins), ebpf-bootstrap (it mounts bpffs and cgroup2 on the
#   host, with Bidirectional propagation: the eBPF mode's entry script mounts its own, below). No
#   calico-kube-controllers (IPAM garbage collection and node clean-up: nothing a two-node
#   cluster of minutes needs);
# - the image has no runit: its entry script (cnb-entry) does what calico-node's rc.local and the
#   runit services do (-startup, -allocate-tunnel-addrs, then felix, -complete-startup,
#   -monitor-addresses, -monitor-token; with the bird backend confd, bird and bird6), and an `sv`
#   that does the two things calico-node asks of runit (`sv hup bird`, confd's reload command;
#   `sv status`, calico-node -bird-live);
# - BIRD: Calico's fork is not in the module; Debian's bird 1.6.8 (unpacked into the image, never
#   installed on the host) runs the configuration confd renders from the module's templates. One
#   construct there is the fork's own: `krt_tunnel = "…";` in the kernel export filter (the IPIP
#   device of a route; stock BIRD: "You may set only variables"). The image's copy of
#   bird_ipam.cfg.template has `accept;` in its place: every branch there accepts right after it,
#   and no pool here has IPIP (which the kernel lacks anyway);
# - both nodes share one host filesystem: calico-node's /var/lib/calico, /var/run/calico (BIRD's
#   control sockets too) and the CNI configuration directory are per node (subPathExpr on hostPaths
#   of $LC_STATE/$LC_RUN), and the CNI plugin (run by the node's containerd, on the host's
#   filesystem) is given every path it would otherwise take host-wide: its log, nodename file, IPAM
#   lock and kubeconfig. It cannot be given the MTU file (/var/lib/calico/mtu, hard-coded), so its
#   MTU is the one felix detects and writes there (eth0's 1500, less VXLAN's 50 under VXLAN;
#   cni_verify compares);
# - the eBPF dataplane's host-wide side effects, confined as cni/cilium.sh confines Cilium's: the
#   entry script makes the container's mounts private and mounts its own bpffs (felix's pins go with
#   the container), gives felix the node's own cgroup v2 subtree (/cnbk8s-<node>, where runc mirrors
#   the node's pod cgroups) as its cgroup root (CALICO_CGROUP_PATH: where felix attaches its
#   connect-time load balancer, or removes it, never at the host's root; off here: v3.31.0's does
#   not load on this kernel, see cni_install), and binds kernel.unprivileged_bpf_disabled
#   read-only (felix would set it to 1 host-wide, which cannot be undone until reboot; its own
#   switch FELIX_BPFDISABLEUNPRIVILEGED=false keeps it from trying);
# - the manifest's /lib/modules, /run/xtables.lock, bpffs and policysync mounts are left out (no
#   module support in this kernel; the image's iptables is the nft backend, which takes no xtables
#   lock; no policy sync clients).
# RBAC and CRDs are the manifest's own (taken from the module's calico-vxlan.yaml; calico.yaml's and
# calico-bpf.yaml's are the same). Sourced by up.sh (interface: cni/README.md), and by cni/canal.sh
# for its calico_* functions (the image, the manifests' documents, the proxy-ARP route, felix's rule
# check): CNI=canal selects nothing here.
CNI_KUBE_PROXY=yes
CNI_VERSION=$CALICO_VERSION
# LAB_MODEL: the lab's Calico-style routed veth (/32 pods, proxy ARP); the lab has no routed VXLAN
# model, so under VXLAN the encapsulation is the difference (as with cilium-vxlan's model)
LAB_MODEL=veth-routing
CALICO_NFTABLES=Disabled CALICO_BPF=false CALICO_BACKEND=vxlan CALICO_VXLAN=Always CNI_NEEDS=vxlan
case $CNI in
  calico-vxlan) ;;
  calico-nftables) CALICO_NFTABLES=Enabled ;;
  canal) ;;   # cni/canal.sh: felix's default, the iptables dataplane
  calico-bgp) CALICO_BACKEND=bird CALICO_VXLAN=Never CNI_NEEDS= ;;
  calico-ebpf) CALICO_BPF=true CALICO_BACKEND=bird CALICO_VXLAN=Never CNI_NEEDS= CNI_KUBE_PROXY=no LAB_MODEL=ebpf-host-routing
    # build-cni.sh calico-bpf's C toolchain and libraries (its clang: CALICO_CLANG)
    CNI_DEPS="gcc make pkg-config $CALICO_CLANG llvm-${CALICO_CLANG#clang-} libelf-dev zlib1g-dev libpcap-dev" ;;
  *) die "unknown Calico mode $CNI (want calico-vxlan, calico-nftables, calico-bgp or calico-ebpf)" ;;
esac
CALICO_DATAPLANE=iptables
[ "$CALICO_NFTABLES" = Enabled ] && CALICO_DATAPLANE=nftables
[ "$CALICO_BPF" = true ] && CALICO_DATAPLANE=eBPF
CALICO_IMAGE=cnibench.local/calico/node:$CALICO_VERSION
# felix's own detection: eth0 (1500), less the VXLAN overhead (50) under VXLAN
CALICO_MTU=1500; [ "$CALICO_VXLAN" = Always ] && CALICO_MTU=1450
# CNI_MODE: the configuration in a few words (make e2e-all's summary)
CNI_MODE="$([ "$CALICO_BACKEND" = bird ] && echo "BGP (BIRD mesh), no encapsulation" || echo "VXLAN (Always, no BGP)"), felix $CALICO_DATAPLANE dataplane, calico-ipam, $([ "$CNI_KUBE_PROXY" = yes ] && echo "kube-proxy iptables" || echo "felix replaces kube-proxy")"
# calico_bird : Debian's bird package ($BIRD_VERSION), downloaded with apt and unpacked into the
# cache (never installed: its services would start on the host)
calico_bird() {
  local d; d=$(cni_cache bird)
  [ -x "$d/usr/sbin/bird" ] && return 0
  local t; t=$(mktemp -d)
  (cd "$t" && { apt-get download -q "bird=$BIRD_VERSION" >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get download -q "bird=$BIRD_VERSION" >/dev/null; }; }) ||
    { rm -rf "$t"; die "apt-get download bird=$BIRD_VERSION failed (apt-cache policy bird: $(apt-cache policy bird 2>/dev/null | awk '/Candidate/ {print $2}'))"; }
  rm -rf "$d.new"; dpkg-deb -x "$t"/bird_*.deb "$d.new" && rm -rf "$t" && mv "$d.new" "$d" || die "unpacking bird $BIRD_VERSION failed"
  echo "bird $BIRD_VERSION: unpacked in $d"
}
cni_build() { calico_build; }
# calico_build: the calico build (build-cni.sh calico, and calico-bpf for eBPF) and calico-node's
# image; sets CNI_PLUGINS (the calico CNI plugin, also as calico-ipam) and CNI_IMAGES (the image's tarball)
calico_build() {
  "$LC_DIR/build-cni.sh" calico | tail -1
  local c cb="" bd="" cd="" variant=vxlan; c=$(cni_cache calico)
  CNI_PLUGINS="$c/bin/calico $c/bin/calico-ipam"
  if [ "$CALICO_BPF" = true ]; then "$LC_DIR/build-cni.sh" calico-bpf | tail -1; cb=$(cni_cache calico-bpf); fi
  if [ "$CALICO_BACKEND" = bird ]; then
    calico_bird; bd=$(cni_cache bird); variant=bird
    cd=$(calico_pins "$CALICO_VERSION") || exit 1; cd=$GOMODCACHE/github.com/projectcalico/calico@${cd%% *}/confd/etc/calico/confd
    [ -d "$cd/templates" ] || die "no confd templates in $cd (the Calico module build-cni.sh downloads)"
  fi
  [ -z "$cb" ] || variant=$variant-bpf
  # one image per variant (vxlan: what calico-vxlan and calico-nftables run; bird; bird-bpf), tagged
  # alike (cnibench reads the version from the tag): a cluster imports only its own; built again
  # when the binaries or this script (its entry script) change
  local tar=$c/image-$variant.tar stamp root f
  stamp="$(cat "$c/bin/.complete")${cb:+ $(cat "$cb/bin/.complete")}${bd:+ bird=$BIRD_VERSION} $CALICO_IMAGE script=$(sha256sum "$LC_DIR/cni/calico.sh" | cut -c1-12)"
  if [ ! -f "$tar" ] || [ "$(cat "$tar.stamp" 2>/dev/null)" != "$stamp" ]; then
    root=$(mktemp -d); stage_busybox "$root"; stage_iptables "$root"
    # felix runs ip, ipset (iptables dataplane), nft (knftables: nftables dataplane) and conntrack
    stage_bins "$root" /usr/sbin/ip /usr/sbin/ipset /usr/sbin/nft /usr/sbin/conntrack
    mkdir -p "$root/etc/calico" "$root/var/lib/calico" "$root/var/run/calico" "$root/var/log/calico"
    cp "$c/bin/felix.cfg" "$root/etc/calico/felix.cfg"
    if [ -n "$cb" ]; then
      # the cgo build (libbpf static; libelf, zlib and libpcap from Debian), felix's BPF programs
      # where felix loads them, and the tools felix runs in eBPF mode
      cp "$cb/bin/calico-node" "$root/usr/bin/calico-node"; stage_libs "$root" "$cb/bin/calico-node"
      mkdir -p "$root/usr/lib/calico/bpf"; cp "$cb/bin/bpf/"*.o "$root/usr/lib/calico/bpf/"
      stage_bins "$root" /usr/sbin/bpftool /usr/sbin/tc
    else
      cp "$c/bin/calico-node" "$root/usr/bin/calico-node"
    fi
    if [ -n "$bd" ]; then
      # BIRD (Debian's 1.6) and its clients; calico-node's health checks run /bin/birdcl, which
      # Debian does not build (birdc answers the same commands)
      for f in bird bird6 birdc birdc6; do cp "$bd/usr/sbin/$f" "$root/usr/sbin/$f"; stage_libs "$root" "$bd/usr/sbin/$f"; done
      ln -s ../sbin/birdc "$root/usr/bin/birdcl"
      # confd's templates (the module's, which build-cni.sh downloaded), with stock BIRD's
      # `accept;` for the fork's krt_tunnel (header above)
      mkdir -p "$root/etc/calico/confd/config"; cp -a "$cd/conf.d" "$cd/templates" "$root/etc/calico/confd/"; chmod -R u+w "$root/etc/calico/confd"
      f=$root/etc/calico/confd/templates/bird_ipam.cfg.template
      grep -q 'krt_tunnel = "' "$f" || die "calico $CALICO_VERSION: bird_ipam.cfg.template has no krt_tunnel any more: check the patch in cni/calico.sh"
      sed -i -E 's/krt_tunnel = "[^"]*";/accept;/' "$f"
      ! grep -rq krt_tunnel "$root/etc/calico/confd/templates" || die "calico $CALICO_VERSION: krt_tunnel left in confd's templates (BIRD 1.6 refuses it)"
      rm -f "$root/usr/bin/sv"   # (were it a busybox applet link, cat would overwrite busybox)
      cat >"$root/usr/bin/sv" <<'SH'
#!/bin/sh
# sv: what calico-node asks of runit, which this image has not, for the services cnb-entry runs:
# `sv hup NAME` (confd's reload command: BIRD rereads its configuration) and
# `sv status /etc/service/enabled/NAME` (calico-node -bird-live)
n=${2:?usage: sv hup|status NAME}; n=${n##*/}; p=$(cat "/run/cnb-svc/$n.pid" 2>/dev/null)
case $1 in
  hup) [ -n "$p" ] && kill -HUP "$p" ;;
  status) if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then echo "run: /etc/service/enabled/$n: (pid $p)"; else echo "down: /etc/service/enabled/$n"; fi ;;
  *) echo "sv: $1: not supported here (hup, status)" >&2; exit 1 ;;
esac
SH
      chmod +x "$root/usr/bin/sv"
    fi
    cat >"$root/usr/bin/cnb-entry" <<'SH'
#!/bin/sh
# cnb-entry: what calico-node's rc.local and runit services do (this image has no runit): start-up
# (node resource, IP pool, /var/lib/calico/nodename), the tunnel addresses, then felix and the
# services beside it (with the bird backend confd, bird and bird6; with none, policy only as in
# Canal, no BGP daemon and no address monitor), each restarted when it exits (as runit does; its
# pid in /run/cnb-svc for sv).
mkdir -p /run/cnb-svc
if [ "${FELIX_BPFENABLED:-false}" = true ]; then
  # The eBPF dataplane's host-wide side effects, confined to this container (cni/calico.sh):
  # its own mounts (private: nothing propagates to the host), its own bpffs for felix's pins, the
  # node's own cgroup v2 subtree as felix's cgroup root, kernel.unprivileged_bpf_disabled read-only.
  die() { echo "cnb-entry: $*: not starting calico-node" >&2; exit 1; }
  mount --make-rprivate / || die "cannot make the container's mounts private"
  s=/proc/sys/kernel/unprivileged_bpf_disabled
  mount --bind "$s" "$s" && mount -o remount,bind,ro "$s" || die "cannot make $s read-only"
  # (the value it has, written back: a no-op where the write goes through; busybox's test -w
  # ignores read-only mounts)
  v=$(cat "$s"); ! (echo "$v" >"$s") 2>/dev/null || die "$s is still writable"
  mkdir -p /sys/fs/bpf && mount -t bpf bpffs /sys/fs/bpf || die "cannot mount bpffs"
  [ -n "${CNB_CGROUP_PARENT:-}" ] || die "no CNB_CGROUP_PARENT (the node's pod cgroups)"
  t=/tmp/cgroup2-all cg=${CALICO_CGROUP_PATH:-/run/calico/cgroup}; mkdir -p "$t" "$cg"
  mount -t cgroup2 none "$t" || die "cannot mount cgroup2"
  [ -d "$t/$CNB_CGROUP_PARENT" ] || { umount "$t"; die "no cgroup2 $CNB_CGROUP_PARENT"; }
  mount --bind "$t/$CNB_CGROUP_PARENT" "$cg" && umount "$t" || die "cannot confine the cgroup root"
  echo "cnb-entry: mounts private, own bpffs, cgroup v2 root $cg = the node's /$CNB_CGROUP_PARENT, $s read-only"
fi
calico-node -startup || exit 1
[ -s /var/lib/calico/nodename ] || { echo "cnb-entry: /var/lib/calico/nodename does not exist" >&2; exit 1; }
NODENAME=$(cat /var/lib/calico/nodename); export NODENAME
calico-node -allocate-tunnel-addrs -allocate-tunnel-addrs-run-once || exit 1
svc() { n=$1; shift; ( while :; do "$@" & p=$!; echo "$p" >"/run/cnb-svc/$n.pid"; wait "$p"; echo "cnb-entry: $n exited (status $?), restarting in 2s"; sleep 2; done ) & }
# svc_once NAME CMD... : a service that does its work once and then only waits, forever (runit would
# restart it if it exited). Built without cgo, Go ends such a wait, where nothing else runs, with
# "fatal error: all goroutines are asleep - deadlock!" (status 2): its work is done then, it is not
# restarted (a start-up without the API connection whose idle goroutines hid it: Canal's)
svc_once() { n=$1; shift; ( set -o pipefail; mkdir -p /tmp; while :; do "$@" 2>&1 | tee /tmp/$n.out; rc=$?
  if [ $rc = 2 ] && grep -q 'all goroutines are asleep' /tmp/$n.out; then echo "cnb-entry: $n done (its wait ended as a deadlock in this build)"; break; fi
  echo "cnb-entry: $n exited (status $rc), restarting in 2s"; sleep 2; done ) & }
svc_once complete-startup calico-node -complete-startup
if [ "${CALICO_NETWORKING_BACKEND:-}" = none ]; then
  echo "cnb-entry: CALICO_NETWORKING_BACKEND is none - no address monitor"
else
  svc monitor-addresses calico-node -monitor-addresses
fi
if [ "${USE_POD_CIDR:-}" = true ]; then
  # host-local IPAM from the podCIDR: no tunnel address to allocate (it would only wait)
  echo "cnb-entry: USE_POD_CIDR is true - no tunnel address allocator"
else
  svc allocate-tunnel-addrs calico-node -allocate-tunnel-addrs
fi
svc cni calico-node -monitor-token
case ${CALICO_NETWORKING_BACKEND:-} in
  none|vxlan) echo "cnb-entry: CALICO_NETWORKING_BACKEND is ${CALICO_NETWORKING_BACKEND:-unset}: no BGP daemon" ;;
  *)
    svc confd calico-node -confd
    # BIRD once confd has rendered its configuration (runit would restart it until then)
    for v in "" 6; do
      svc "bird$v" sh -c "trap : HUP; until [ -s /etc/calico/confd/config/bird$v.cfg ]; do sleep 0.5; done; exec bird$v -R -s /var/run/calico/bird$v.ctl -d -c /etc/calico/confd/config/bird$v.cfg"
    done ;;
esac
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
  # the manifest's calico-config, service accounts and RBAC of calico-node and the CNI plugin;
  # calico_backend as calico.yaml and calico-bpf.yaml have it in the BGP modes (bird)
  local cfg; cfg=$(calico_docs '^(ConfigMap|ServiceAccount|ClusterRole|ClusterRoleBinding)$' '^(calico-config|calico-node|calico-cni-plugin|calico-tier-getter)$')
  grep -q '^  calico_backend: "vxlan"$' <<<"$cfg" || die "calico-vxlan.yaml's calico-config has no calico_backend \"vxlan\" any more: check cni/calico.sh"
  sed 's/^  calico_backend: "vxlan"$/  calico_backend: "'"$CALICO_BACKEND"'"/' <<<"$cfg" | kc apply -f -
  # calico-node's probes: BIRD's too with the bird backend (as calico.yaml has them)
  local live=-felix-live ready=-felix-ready bpfenv=""
  [ "$CALICO_BACKEND" = bird ] && live="-felix-live, -bird-live" ready="-felix-ready, -bird-ready"
  if [ "$CALICO_BPF" = true ]; then
    # the eBPF dataplane (calico-bpf.yaml's FELIX_BPFENABLED), without its host-wide side effects
    # (cnb-entry: own mounts and bpffs, the node's cgroup v2 subtree, the sysctl read-only; felix's
    # own switch keeps it from writing kernel.unprivileged_bpf_disabled at all)
    bpfenv="        - {name: FELIX_BPFENABLED, value: \"true\"}
        - {name: FELIX_BPFDISABLEUNPRIVILEGED, value: \"false\"}
        # v3.31.0's connect-time load balancer does not load on this kernel (6.17+ refuses tail
        # calls through one program array from programs of different attach types, which its
        # connect6 and sendmsg6 programs share: EINVAL after the verifier passed; fixed upstream
        # in v3.31.3, Split program maps used for ctlb): off, felix's TC programs translate
        # services per packet, host-networked clients' too (BPFHostNetworkedNATWithoutCTLB)
        - {name: FELIX_BPFCONNECTTIMELOADBALANCING, value: Disabled}
        # with TCX (felix's default) its BPF endpoint manager never turned ready here; likely the
        # same kernel check: felix loads its TC preamble as tcx_ingress or tcx_egress, the
        # programs it tail-calls without that attach type. Attached the classic way (clsact
        # qdisc) they all have none
        - {name: FELIX_BPFATTACHTYPE, value: TC}
        - {name: CALICO_CGROUP_PATH, value: /run/calico/cgroup}
        - {name: CNB_CGROUP_PARENT, value: \"${CGROOT#/}-\$(NODENAME)\"}"
  fi
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
        - {name: CALICO_IPV4POOL_VXLAN, value: $CALICO_VXLAN}
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
$bpfenv
        securityContext: {privileged: true}
        resources: {requests: {cpu: 250m}}
        livenessProbe:
          exec: {command: [/bin/calico-node, $live]}
          periodSeconds: 10
          initialDelaySeconds: 10
          failureThreshold: 6
          timeoutSeconds: 10
        readinessProbe:
          exec: {command: [/bin/calico-node, $ready]}
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
  # (with the bird backend the readiness probe is -bird-ready too: BGP sessions established)
  kc -n kube-system rollout status ds/calico-node --timeout="${CNI_TIMEOUT:-240}s" || { cni_logs; return 1; }
  for n in $NODES; do
    # the CNI plugin's credentials (calico-node -monitor-token); under VXLAN felix's device (BGP
    # has no route to wait for yet: a node's first IPAM block comes with its first pod)
    waitfor "calico CNI kubeconfig of $n" 60 test -s "$LC_STATE/$n/cni/calico-kubeconfig" || { cni_logs; return 1; }
    if [ "$CALICO_VXLAN" = Always ]; then
      waitfor "vxlan.calico on $n" 60 ip -n "$(netns $n)" link show vxlan.calico || { cni_logs; return 1; }
    fi
  done
}
# bird_routed N BLOCK : node N routes BLOCK via the other node's address, by BIRD
bird_routed() { local o=n1; [ "$1" = n1 ] && o=n2; grep -q "via $(node_ip $o) dev eth0 proto bird" <<<"$(ip -n "$(netns $1)" route show "$2")"; }
# calico_probe_pods create|delete : a pause pod on each node (kube-system/calico-verify-<node>):
# without a tunnel address (BGP, no encapsulation) a node has no IPAM block until its first pod
calico_probe_pods() {
  local n
  if [ "$1" = delete ]; then
    kc -n kube-system delete pod $(for n in $NODES; do echo calico-verify-$n; done) --ignore-not-found --wait --timeout=60s >/dev/null
    return
  fi
  for n in $NODES; do
    kc apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: calico-verify-$n, namespace: kube-system, labels: {app: calico-verify}}
spec:
  nodeName: $n
  terminationGracePeriodSeconds: 0
  tolerations: [{operator: Exists}]
  containers: [{name: pause, image: cnibench.local/pause:1, imagePullPolicy: Never}]
YAML
  done
  kc -n kube-system wait --for=condition=Ready pod -l app=calico-verify --timeout=60s >/dev/null
}
cni_logs() {
  kc -n kube-system get pods -l k8s-app=calico-node -o wide >&2 || true
  local p; for p in $(kc -n kube-system get pods -l k8s-app=calico-node -o name 2>/dev/null); do
    echo "--- $p (last 40 lines)" >&2; kc -n kube-system logs "$p" --tail=40 >&2 || true
    echo "--- $p: its errors and BPF load failures (last 20)" >&2
    grep -E 'libbpf:|\[(ERROR|PANIC|FATAL)\]|panic:|Failed to (attach|load)' <<<"$(kc -n kube-system logs "$p" 2>&1)" | cut -c1-400 | tail -20 >&2 || true
    if [ "$CALICO_BACKEND" = bird ]; then
      echo "--- $p: BIRD's protocols; the configuration confd rendered (its first lines)" >&2
      kc -n kube-system exec "$p" -- birdc -s /var/run/calico/bird.ctl show protocols >&2 || true
      kc -n kube-system exec "$p" -- sh -c 'ls -l /etc/calico/confd/config; head -40 /etc/calico/confd/config/bird.cfg' >&2 || true
    fi
  done
  for p in $NODES; do [ -f "$LC_STATE/$p/calico-cni/cni.log" ] && { echo "--- CNI plugin log of $p (last 10 lines)" >&2; tail -10 "$LC_STATE/$p/calico-cni/cni.log" >&2; }; done
  return 0
}
# cni_verify: the dataplane is the one configured, by calico-node's own account: felix ready (and
# BIRD, with its BGP peer Established, calico-node -show-status) and the dataplane felix parsed from
# its configuration (its log); with eBPF, felix's interface state and its NAT table (the kubernetes
# service: kube-proxy's work) from its BPF maps (calico-node -bpf), and no program of its on the
# node's own cgroup v2 subtree (the connect-time load balancer is off). Then per node: the MTU felix
# detected; the other node's blocks routed through vxlan.calico (VXLAN) or via the other node's
# address by BIRD (proto bird, no VXLAN device); felix's rules in nftables' "calico" table
# (nftables) or in cali- iptables chains (iptables), not the other. Without VXLAN a node has no
# block before its first pod: a pause pod on each node while it checks (calico_probe_pods).
# (Whole outputs first, then grep: grep -q would end a pipe early, and pipefail fail it.)
cni_verify() {
  [ "$CALICO_VXLAN" = Always ] && { calico_verify; return; }
  local rc=0
  calico_probe_pods create || { echo "the probe pods (an IPAM block on each node) did not become Ready" >&2; calico_probe_pods delete; return 1; }
  calico_verify || rc=$?
  calico_probe_pods delete
  return $rc
}
calico_verify() {
  local p n o log line blocks b rt st want how what ready=-felix-ready
  [ "$CALICO_BACKEND" = bird ] && ready="-felix-ready -bird-ready"
  for p in $(kc -n kube-system get pods -l k8s-app=calico-node -o name); do
    n=$(kc -n kube-system get "$p" -o jsonpath='{.spec.nodeName}')
    o=n1; [ $n = n1 ] && o=n2
    kc -n kube-system exec "$p" -- calico-node $ready >/dev/null 2>&1 || { echo "$p ($n): not ready (calico-node $ready)" >&2; return 1; }
    log=$(kc -n kube-system logs "$p")
    line=$(grep -m1 -o 'Parsed value for NFTablesMode: [A-Za-z]*' <<<"$log" || true)
    [ "$line" = "Parsed value for NFTablesMode: $CALICO_NFTABLES" ] || { echo "$p ($n): felix did not report NFTablesMode $CALICO_NFTABLES (${line:-no such log line})" >&2; return 1; }
    if [ "$CALICO_BPF" = true ]; then
      grep -q 'Parsed value for BPFEnabled: true' <<<"$log" || { echo "$p ($n): felix did not report BPFEnabled true" >&2; return 1; }
      line="$line, BPFEnabled: true"
      st=$(kc -n kube-system exec "$p" -- calico-node -bpf ifstate dump 2>&1) || { echo "$p ($n): calico-node -bpf ifstate dump failed: $st" >&2; return 1; }
      grep -q 'name: eth0' <<<"$st" || { echo "$p ($n): eth0 not in felix's BPF interface state: $(echo $st | head -c 400)" >&2; return 1; }
      st=$(kc -n kube-system exec "$p" -- calico-node -bpf nat dump 2>&1) || { echo "$p ($n): calico-node -bpf nat dump failed: $st" >&2; return 1; }
      grep -q '10\.96\.0\.1 port 443' <<<"$st" && grep -q "$(node_ip n1):6443" <<<"$st" ||
        { echo "$p ($n): the kubernetes service (10.96.0.1:443 -> $(node_ip n1):6443) not in felix's BPF NAT table: $(echo $st | head -c 400)" >&2; return 1; }
      line="$line; felix's BPF state has eth0 and the kubernetes service"
    fi
    if [ "$CALICO_BACKEND" = bird ]; then
      st=$(kc -n kube-system exec "$p" -- calico-node -show-status 2>&1) || { echo "$p ($n): calico-node -show-status failed: $st" >&2; return 1; }
      line="$line; BGP: $(grep -m1 "$(node_ip $o)" <<<"$st" | tr -s ' |' ' ')"
      grep "$(node_ip $o)" <<<"$st" | grep -q Established || { echo "$p ($n): no Established BGP session with $(node_ip $o): $st" >&2; return 1; }
    fi
    echo "$p ($n): ready ($ready); $line"
  done
  blocks=$(kc get blockaffinities.crd.projectcalico.org -o jsonpath='{range .items[*]}{.spec.node}{" "}{.spec.cidr}{" "}{.spec.state}{"\n"}{end}')
  for n in $NODES; do
    o=n1; [ $n = n1 ] && o=n2
    [ "$(cat "$LC_STATE/$n/calico/mtu" 2>/dev/null)" = "$CALICO_MTU" ] || { echo "$n: felix detected MTU $(cat "$LC_STATE/$n/calico/mtu" 2>/dev/null), the CNI configuration has $CALICO_MTU" >&2; return 1; }
    st=$(ip -n "$(netns $n)" -d link show vxlan.calico 2>/dev/null || true)
    if [ "$CALICO_VXLAN" = Always ]; then
      grep -q 'vxlan id 4096' <<<"$st" || { echo "$n: no vxlan.calico VXLAN device (VNI 4096)" >&2; return 1; }
      want='dev vxlan.calico' how="through vxlan.calico"
    else
      [ -z "$st" ] || { echo "$n: a vxlan.calico device without VXLAN: $st" >&2; return 1; }
      want="via $(node_ip $o) dev eth0 proto bird" how="via $(node_ip $o) by BIRD (proto bird)"
    fi
    rt=0
    for b in $(echo "$blocks" | awk -v o=$o '$1 == o && $3 == "confirmed" {print $2}'); do
      # (BIRD's routes come within seconds of the block: bounded wait)
      [ "$CALICO_VXLAN" = Always ] || waitfor "$n: BIRD's route to $o's block $b" 30 bird_routed $n "$b" >/dev/null || true
      grep -q "$want" <<<"$(ip -n "$(netns $n)" route show "$b")" || { echo "$n: $o's block $b not routed $how: $(ip -n "$(netns $n)" route show "$b")" >&2; return 1; }
      rt=$((rt + 1))
    done
    [ $rt -gt 0 ] || { echo "$n: $o has no confirmed IPAM block (blockaffinities: $(echo $blocks))" >&2; return 1; }
    what=$(calico_rules $n) || return 1
    echo "$n: $rt block(s) of $o routed $how; $what"
  done
  echo "calico $CNI: $([ "$CALICO_VXLAN" = Always ] && echo VXLAN || echo "BGP, no encapsulation"), felix $CALICO_DATAPLANE dataplane, MTU $CALICO_MTU, as configured"
}
# calico_rules N : felix's rules are where its dataplane puts them on node N, and not elsewhere:
# eBPF programs and no connect-time load balancer on the node's cgroup subtree (eBPF mode),
# nftables' "calico" table (nftables mode) or cali- chains in iptables (iptables mode); says which
calico_rules() {
  local n=$1 tables chains st
  # (whole outputs first: grep -q would end the pipe early, and pipefail fail it)
  tables=$(innet $n nft list tables) chains=$(innet $n iptables-save | grep -c '^:cali-' || true)
  if [ "$CALICO_BPF" = true ]; then
    # (felix's programs on eth0 are in its own account above: TCX links, which Debian's bpftool
    # 7.1 does not list)
    # no connect-time load balancer (off, see cni_install) on the node's cgroup subtree either
    st=$(bpftool cgroup show "/sys/fs/cgroup/unified${CGROOT}-$n")
    ! grep -q 'calico' <<<"$st" || { echo "$n: a Calico program on the node's cgroup subtree with the connect-time load balancer off: $st" >&2; return 1; }
    echo "felix's eBPF programs (its interface state above), no connect-time load balancer (off)"
  elif [ "$CALICO_NFTABLES" = Enabled ]; then
    grep -qx 'table ip calico' <<<"$tables" || { echo "$n: no nftables table ip calico (nft list tables: $(echo $tables))" >&2; return 1; }
    [ "$chains" -eq 0 ] || { echo "$n: $chains cali- chains in iptables in nftables mode" >&2; return 1; }
    echo "felix's rules in nftables table ip calico (no cali- chain in iptables)"
  else
    [ "$chains" -gt 0 ] || { echo "$n: no cali- chain in iptables" >&2; return 1; }
    ! grep -q 'calico' <<<"$tables" || { echo "$n: an nftables calico table in iptables mode ($(echo $tables))" >&2; return 1; }
    echo "felix's rules in $chains iptables cali- chains (no nftables calico table)"
  fi
}
