# cni/cilium120.sh: the current Cilium (1.20) beside 1.15.19 (cilium-*, the default, which CI
# runs): cilium120-vxlan, cilium120-native, cilium120-native-legacy, cilium120-native-kube-proxy,
# and cilium120-geneve, cilium120-wireguard (skipped on a kernel without those link types). The
# modes, manifests and checks are cilium.sh's; the version differences are guarded there and in
# build-cni.sh (clang-19 for the datapath, two dependencies the Go module proxy refuses, no
# /proc/modules patch). Sourced by up.sh (cni/README.md).
CILIUM_VERSION=v1.20.2
source "$LC_DIR/cni/cilium.sh"
