# cni/bridge.sh: the plain bridge plugin (Debian's containernetworking-plugins): a Linux bridge
# per node, host-local IPAM with a static subnet, static routes between the nodes. No agent, no
# NetworkPolicy. Sourced by up.sh (interface: cni/README.md).
CNI_KUBE_PROXY=yes
LAB_MODEL=bridge   # the lab datapath that models it: pods on a bridge, pod subnets routed over the wire
CNI_VERSION=$(dpkg-query -W -f='${Version}' containernetworking-plugins 2>/dev/null || echo unknown)
# bridge-dual: the same, dual-stack (IPv4 first): nodes, pods and services of both families, a
# second host-local range and routes for IPv6
if [ "$CNI" = bridge-dual ]; then DUAL_STACK=1; fi
# CNI_MODE: the configuration in a few words (make e2e-all's summary)
CNI_MODE="Linux bridge, static routes${DUAL_STACK:+, dual-stack (IPv4 first)}, kube-proxy iptables"
cni_build() { :; }
cni_net() {
  ip -n "$(netns n1)" route add "$(pod_cidr n2)" via "$(node_ip n2)"
  ip -n "$(netns n2)" route add "$(pod_cidr n1)" via "$(node_ip n1)"
  if [ -n "$DUAL_STACK" ]; then
    ip -n "$(netns n1)" -6 route add "$(pod_cidr6 n2)" via "$(node_ip6 n2)"
    ip -n "$(netns n2)" -6 route add "$(pod_cidr6 n1)" via "$(node_ip6 n1)"
  fi
}
cni_node_conf() {
  local N=$1 D=$LC_STATE/$1 S=$LC_RUN/$1
  cat >"$D/cni/10-cnibench-local.conflist" <<CNI
{"cniVersion": "0.4.0", "name": "cnibench-local", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$(pod_cidr $N)"}]${DUAL_STACK:+, [{\"subnet\": \"$(pod_cidr6 $N)\"\}]}],
            "routes": [{"dst": "0.0.0.0/0"}${DUAL_STACK:+, {\"dst\": \"::/0\"\}}], "dataDir": "$S/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
CNI
}
cni_containerd_env() { :; }
cni_install() { :; }
cni_wait() { :; }
cni_logs() { :; }
cni_verify() { :; }
