#!/usr/bin/env bash
# build-cni.sh FAMILY : build (or reuse) a real CNI's binaries from the Go module proxy into
# $LC_CACHE/cni/<family>-<version>/bin (stamp bin/.complete = family, version, Go version).
#   flannel  flanneld $FLANNEL_VERSION (its main.go minus the tencentvpc backend, whose SDK the
#            proxy refuses) + the `flannel` CNI plugin of containernetworking/plugins v0.9.1
#   cilium   cilium-agent, cilium-cni, cilium-operator-generic, cilium-dbg $CILIUM_VERSION, built in
#            a writable copy of the module (its replace directives apply), and its bpf/ sources, which the
#            agent compiles with Debian's clang when it starts
#   calico   calico-node (felix runs as `calico-node -felix`) and the calico CNI plugin (also
#            calico-ipam, by the name it is run under) $CALICO_VERSION, which the Go module proxy
#            serves only by pseudo-version; built in a writable copy of the module with its three
#            nested modules put back (api, lib/std, a stub lib/httpmachinery), and the module's
#            manifests/calico-vxlan.yaml and canal.yaml (calico.sh and canal.sh take their CRDs,
#            RBAC and ConfigMaps from them; added to a build cached without them); confd's BIRD
#            templates come from the module itself, in the Go module cache
#            (its go builds run under nice -n 19: another test run may be using the CPUs)
#   calico-bpf  the same calico-node built with cgo against libbpf, and felix's BPF programs
#            (felix/bpf-gpl, felix/bpf-apache) compiled by clang (CALICO_CLANG, default clang-19):
#            the eBPF dataplane (calico-ebpf). v3.30+ clone libbpf at build time (no network
#            here); the libbpf source is the one Calico's own v3.29.0 module carries
#            (felix/bpf-gpl/include/libbpf, libbpf 1.5; v3.31 pins 1.4.6 and uses nothing newer).
#            Needs gcc, make, clang and llvm, libelf-dev, zlib1g-dev and libpcap-dev (deps.sh installs them)
#   kube-router  kube-router $KUBE_ROUTER_VERSION (the only version the proxy serves; a test fixture
#            of the local cluster, not shipped) and the gobgp CLI its Makefile pins (v3.23.0), nice'd
# One build at a time per cache (flock); built into bin.new and renamed.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
FAM=${1:?usage: build-cni.sh flannel|cilium|calico|calico-bpf|kube-router}
case $FAM in
  flannel) VER=$FLANNEL_VERSION ;;
  cilium) VER=$CILIUM_VERSION ;;
  calico) VER=$CALICO_VERSION ;;
  calico-bpf) VER=$CALICO_VERSION ;;
  kube-router) VER=$KUBE_ROUTER_VERSION ;;
  *) die "build-cni.sh: unknown CNI family $FAM (want flannel, cilium, calico, calico-bpf or kube-router)" ;;
esac
OUTD=$(cni_cache "$FAM")
STAMP=$OUTD/bin/.complete
want="$FAM=$VER go=$("$GO" env GOVERSION) patches=1"
# Calico: the release commit's pseudo-version, and that of the projectcalico/api commit its go.mod
# replaces with ./api (lib.sh calico_pins; the release tags are refused: the module path has no /v3 suffix)
case $FAM in calico|calico-bpf) pins=$(calico_pins "$VER") || exit 1; read -r mv apiv <<<"$pins" ;; esac
CALICO_MANIFESTS="calico-vxlan.yaml canal.yaml"
# calico_manifests DIR : the module's manifests the family scripts read, copied into DIR
calico_manifests() {
  local m d=$GOMODCACHE/github.com/projectcalico/calico@$mv/manifests
  [ -d "$d" ] || go_or_die "calico $VER ($mv)" "$GO" mod download -json "github.com/projectcalico/calico@$mv"
  mkdir -p "$1"; for m in $CALICO_MANIFESTS; do cp "$d/$m" "$1/"; done
}
if [ "$FAM" = calico-bpf ]; then
  # the C toolchain and libraries: Debian's (llc of the same LLVM as clang)
  "$LC_DIR/deps.sh" gcc make pkg-config "$CALICO_CLANG" "llvm-${CALICO_CLANG#clang-}" libelf-dev zlib1g-dev libpcap-dev
  for t in gcc make pkg-config "$CALICO_CLANG" "llc-${CALICO_CLANG#clang-}" /usr/include/gelf.h /usr/include/zlib.h /usr/include/pcap.h; do
    command -v "$t" >/dev/null || [ -e "$t" ] || die "calico-bpf: $t not found after deps.sh"
  done
  want="$want $("$CALICO_CLANG" --version | head -1)"
fi
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  if [ "$FAM" = calico ] && ! (cd "$OUTD/bin/manifests" 2>/dev/null && ls $CALICO_MANIFESTS >/dev/null 2>&1); then
    exec 9>"$OUTD/.lock"; flock -w 1800 9 || die "timeout (1800s) waiting for another build holding $OUTD/.lock"
    calico_manifests "$OUTD/bin/manifests"; echo "$FAM $VER: added the module's manifests $CALICO_MANIFESTS to the cached build"
  fi
  echo "$FAM $VER: cached in $OUTD/bin"; exit 0
fi
mkdir -p "$OUTD"
exec 9>"$OUTD/.lock"
flock -w 1800 9 || die "timeout (1800s) waiting for another build holding $OUTD/.lock"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then echo "$FAM $VER: built by another run"; exit 0; fi
NEW=$OUTD/bin.new BUILD=$OUTD/build
rm -rf "$NEW" "$BUILD"; mkdir -p "$NEW" "$BUILD"
t0=$SECONDS
export CGO_ENABLED=0   # calico-bpf builds calico-node with cgo
case $FAM in
flannel)
  go_or_die "flannel $VER and containernetworking/plugins $CNI_PLUGINS_VERSION" \
    "$GO" mod download -json "github.com/flannel-io/flannel@$VER" "github.com/containernetworking/plugins@$CNI_PLUGINS_VERSION"
  src=$GOMODCACHE/github.com/flannel-io/flannel@$VER
  gover=$(awk '/^go /{print $2; exit}' "$src/go.mod")
  mkdir -p "$BUILD/flanneld"
  printf 'module cnibench.local/flanneld\n\ngo %s\n\nrequire github.com/flannel-io/flannel %s\n' "$gover" "$VER" >"$BUILD/flanneld/go.mod"
  # tencentvpc: its SDK is refused by the proxy; udp: needs cgo (static binary wanted), deprecated
  grep -Ev 'flannel/pkg/backend/(tencentvpc|udp)"' "$src/main.go" >"$BUILD/flanneld/main.go"
  (cd "$BUILD/flanneld" && GOFLAGS=-mod=mod go_or_die "building flanneld $VER" "$GO" build -trimpath -ldflags "-s -w -X github.com/flannel-io/flannel/pkg/version.Version=$VER" -o "$NEW/flanneld" .)
  echo "flannel $VER: built flanneld at +$((SECONDS - t0))s"
  mkdir -p "$BUILD/plugin"
  printf 'module cnibench.local/flannelcni\n\ngo 1.20\n\nrequire github.com/containernetworking/plugins %s\n' "$CNI_PLUGINS_VERSION" >"$BUILD/plugin/go.mod"
  printf 'package main\n\nimport _ "github.com/containernetworking/plugins/plugins/meta/flannel"\n' >"$BUILD/plugin/tools.go"
  (cd "$BUILD/plugin" && GOFLAGS=-mod=mod "$GO" mod tidy >/dev/null 2>&1 || true
   cd "$BUILD/plugin" && GOFLAGS=-mod=mod go_or_die "building the flannel CNI plugin ($CNI_PLUGINS_VERSION)" "$GO" build -trimpath -ldflags "-s -w" -o "$NEW/flannel" github.com/containernetworking/plugins/plugins/meta/flannel)
  echo "flannel $VER: built the flannel CNI plugin at +$((SECONDS - t0))s"
  ;;
cilium)
  go_or_die "cilium $VER" "$GO" mod download -json "github.com/cilium/cilium@$VER"
  cp -a "$GOMODCACHE/github.com/cilium/cilium@$VER/." "$BUILD/src"; chmod -R u+w "$BUILD/src"
  cd "$BUILD/src"
  # Local patch: a kernel built without module support (CONFIG_MODULES=n, as here) has no
  # /proc/modules; 1.15 makes that fatal at start. Nothing is loaded then: an empty list (the
  # built-in ones come from modules.builtin, which the image's entry script writes from the
  # kernel's own config). Later versions have no such check (pkg/datapath/linux/modules is gone):
  # the patch applies where that file exists; a version that reads /proc/modules elsewhere is
  # refused.
  f=pkg/datapath/linux/modules/modules_linux.go
  if [ ! -f "$f" ]; then
    ! grep -rlq --include='*.go' '/proc/modules' pkg daemon ||
      die "cilium $VER: reads /proc/modules outside $f (absent on this kernel); ${0##*/} has no patch for it"
  else
  grep -q 'fModules, err := os.Open(loadedModulesFilepath)' "$f" || die "cilium $VER: $f changed; the /proc/modules patch does not apply"
  python3 - "$f" <<'PY'
import sys
p = sys.argv[1]; s = open(p).read()
s = s.replace("""	fModules, err := os.Open(loadedModulesFilepath)
	if err != nil {""", """	fModules, err := os.Open(loadedModulesFilepath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // cnibench local patch: no module support, nothing loaded
	}
	if err != nil {""", 1)
open(p, "w").write(s)
PY
  fi
  # Dependencies the Go module proxy refuses, by version (cni/README.md)
  case $VER in
    v1.20.2)
      # gobgp/v4 at a pseudo-version (403): v4.5.0, the release before it (the BGP control
      # plane is off here)
      "$GO" mod edit -replace github.com/osrg/gobgp/v4=github.com/osrg/gobgp/v4@v4.5.0
      # sigs.k8s.io/mcs-api/controllers (404, every version): outside its tests cilium takes one
      # constant from it (MCS-API clustermesh and Gateway API code, both off here): a stub module
      # with upstream's value
      mkdir -p .cnb-stubs/mcs-api-controllers
      printf 'module sigs.k8s.io/mcs-api/controllers\n\ngo 1.24\n' >.cnb-stubs/mcs-api-controllers/go.mod
      cat >.cnb-stubs/mcs-api-controllers/controllers.go <<'GO'
// Package controllers: a cnibench stub of sigs.k8s.io/mcs-api/controllers, which the Go module
// proxy refuses: the one identifier cilium imports outside its tests, with upstream's value.
package controllers

const DerivedServiceAnnotation = "multicluster.kubernetes.io/derived-service"
GO
      "$GO" mod edit -replace sigs.k8s.io/mcs-api/controllers=./.cnb-stubs/mcs-api-controllers
      ;;
  esac
  ld="-s -w -X github.com/cilium/cilium/pkg/version.ciliumVersion=${VER#v}"
  b() { local out=$1 pkg=$2 tags=${3:-}; go_or_die "building $out ($pkg) of cilium $VER" "$GO" build -mod=mod -trimpath ${tags:+-tags $tags} -ldflags "$ld" -o "$NEW/$out" "$pkg"
        echo "cilium $VER: built $out at +$((SECONDS - t0))s"; }
  b cilium-agent ./daemon
  b cilium-cni ./plugins/cilium-cni
  b cilium-operator-generic ./operator ipam_provider_operator
  b cilium-dbg ./cilium-dbg
  cp -a bpf "$NEW/bpf"
  cd "$OUTD"
  ;;
calico|calico-bpf)
  # (the pseudo-versions $mv and $apiv: above)
  go_or_die "calico $VER ($mv), projectcalico/api $apiv and calico/lib/std" \
    "$GO" mod download -json "github.com/projectcalico/calico@$mv" "github.com/projectcalico/api@$apiv" "github.com/projectcalico/calico/lib/std@$mv"
  cp -a "$GOMODCACHE/github.com/projectcalico/calico@$mv/." "$BUILD/src"
  # the nested modules the module zip leaves out, where go.mod's replace directives expect them
  rm -rf "$BUILD/src/api" "$BUILD/src/lib/std"; mkdir -p "$BUILD/src/lib/httpmachinery"
  cp -a "$GOMODCACHE/github.com/projectcalico/api@$apiv/." "$BUILD/src/api"
  cp -a "$GOMODCACHE/github.com/projectcalico/calico/lib/std@$mv/." "$BUILD/src/lib/std"
  chmod -R u+w "$BUILD/src"
  # lib/httpmachinery: 404 at the proxy; only whisker-backend imports it (not built here)
  printf 'module github.com/projectcalico/calico/lib/httpmachinery\n\ngo 1.24\n' >"$BUILD/src/lib/httpmachinery/go.mod"
  cd "$BUILD/src"
  ld="-s -w -X github.com/projectcalico/calico/pkg/buildinfo.Version=$VER -X github.com/projectcalico/calico/pkg/buildinfo.GitRevision=${mv##*-}"
  b() { local out=$1 pkg=$2; go_or_die "building $out ($pkg) of calico $VER" nice -n 19 "$GO" build -mod=mod -trimpath -ldflags "$ld" -o "$NEW/$out" "$pkg"
        echo "$FAM $VER: built $out at +$((SECONDS - t0))s"; }
  if [ "$FAM" = calico ]; then
    b calico-node ./node/cmd/calico-node
    b calico ./cni-plugin/cmd/calico
    ln -s calico "$NEW/calico-ipam"   # the CNI plugin runs as its IPAM plugin under this name
    calico_manifests "$NEW/manifests"
    cp node/filesystem/etc/calico/felix.cfg "$NEW/felix.cfg"
  else
    # libbpf: the source Calico's v3.29.0 module carries (a commit after the v3.29.0 tag, the one
    # projectcalico/vpp-dataplane pins for v3.29.0; the tags' own commits are refused), where
    # felix's cgo directives and bpf-gpl's Makefile expect it, built static as upstream does
    lmv=v0.0.0-20241104220808-b559a703e1c0
    go_or_die "calico v3.29.0 ($lmv), for its libbpf source" "$GO" mod download -json "github.com/projectcalico/calico@$lmv"
    lsrc=$GOMODCACHE/github.com/projectcalico/calico@$lmv/felix/bpf-gpl/include/libbpf
    [ -f "$lsrc/src/libbpf.c" ] || die "calico-bpf: no libbpf source in $lsrc"
    rm -rf felix/bpf-gpl/libbpf; cp -a "$lsrc" felix/bpf-gpl/libbpf; chmod -R u+w felix/bpf-gpl/libbpf
    mkdir -p felix/bpf-gpl/libbpf/src/amd64
    nice -n 19 make -s -j2 -C felix/bpf-gpl/libbpf/src BUILD_STATIC_ONLY=1 OBJDIR=amd64 >"$BUILD/libbpf.log" 2>&1 ||
      { tail -20 "$BUILD/libbpf.log" >&2; die "calico-bpf: building libbpf failed"; }
    # and its headers as <bpf/…>, where bpf-apache's programs include them (upstream's build image
    # has libbpf installed)
    nice -n 19 make -s -C felix/bpf-gpl/libbpf/src install_headers DESTDIR="$BUILD/libbpf-inc" INCLUDEDIR=/include >>"$BUILD/libbpf.log" 2>&1 ||
      { tail -20 "$BUILD/libbpf.log" >&2; die "calico-bpf: installing libbpf's headers failed"; }
    echo "$FAM $VER: built libbpf $(awk '/MAJOR_VERSION|MINOR_VERSION/ {printf "%s%s", s, $3; s="."}' felix/bpf-gpl/libbpf/src/libbpf_version.h) at +$((SECONDS - t0))s"
    export CGO_ENABLED=1; b calico-node ./node/cmd/calico-node; export CGO_ENABLED=0
    # felix's BPF programs, as upstream's build-bpf makes them (every object it lists: felix picks
    # them by endpoint type, log level and CO-RE support at run time)
    mk() { CFLAGS="-I$BUILD/libbpf-inc/include" nice -n 19 make -s -j2 -C "$1" CC="$CALICO_CLANG" LD="llc-${CALICO_CLANG#clang-}" all >"$BUILD/${1##*/}.log" 2>&1 ||
      { tail -20 "$BUILD/${1##*/}.log" >&2; die "calico-bpf: compiling $1 with $CALICO_CLANG failed"; }; }
    # (the module zip keeps no file modes: the Makefile runs these scripts)
    chmod +x felix/bpf-gpl/list-objs felix/bpf-gpl/list-ut-objs felix/bpf-gpl/calculate-flags
    mk felix/bpf-apache
    mk felix/bpf-gpl
    mkdir -p "$NEW/bpf"; cp felix/bpf-gpl/bin/*.o felix/bpf-apache/bin/*.o "$NEW/bpf/"
    echo "$FAM $VER: compiled $(ls "$NEW/bpf" | wc -l) BPF objects at +$((SECONDS - t0))s"
  fi
  cd "$OUTD"
  ;;
kube-router)
  gobgpv=v3.23.0   # kube-router's Makefile GOBGP_VERSION
  go_or_die "kube-router $VER" "$GO" mod download -json "github.com/cloudnativelabs/kube-router/v2@$VER"
  cp -a "$GOMODCACHE/github.com/cloudnativelabs/kube-router/v2@$VER/." "$BUILD/src"; chmod -R u+w "$BUILD/src"
  (cd "$BUILD/src" && go_or_die "building kube-router $VER" nice -n 19 "$GO" build -mod=mod -trimpath -ldflags "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=$VER -X github.com/cloudnativelabs/kube-router/v2/pkg/version.BuildDate=cnibench-local" -o "$NEW/kube-router" ./cmd/kube-router)
  echo "kube-router $VER: built kube-router at +$((SECONDS - t0))s"
  (cd / && GOBIN=$NEW GOFLAGS= go_or_die "building the gobgp CLI $gobgpv" nice -n 19 "$GO" install -trimpath -ldflags "-s -w" "github.com/osrg/gobgp/v3/cmd/gobgp@$gobgpv")
  echo "kube-router $VER: built gobgp $gobgpv at +$((SECONDS - t0))s"
  ;;
esac
rm -rf "$BUILD"
echo "$want" >"$NEW/.complete"
rm -rf "$OUTD/bin"; mv "$NEW" "$OUTD/bin"
echo "$FAM $VER: built in $((SECONDS - t0))s; binaries $(du -sh "$OUTD/bin" | cut -f1)"
