#!/usr/bin/env bash
# build-cni.sh FAMILY : build (or reuse) a real CNI's binaries from the Go module proxy into
# $LC_CACHE/cni/<family>-<version>/bin (stamp bin/.complete = family, version, Go version).
#   flannel  flanneld $FLANNEL_VERSION (its main.go minus the tencentvpc backend, whose SDK the
#            proxy refuses) + the `flannel` CNI plugin of containernetworking/plugins v0.9.1
#   cilium   cilium-agent, cilium-cni, cilium-operator-generic, cilium-dbg $CILIUM_VERSION, built in
#            a writable copy of the module (its replace directives apply), and its bpf/ sources, which the
#            agent compiles with Debian's clang when it starts
# One build at a time per cache (flock); built into bin.new and renamed.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
FAM=${1:?usage: build-cni.sh flannel|cilium}
case $FAM in
  flannel) VER=$FLANNEL_VERSION ;;
  cilium) VER=$CILIUM_VERSION ;;
  *) die "build-cni.sh: unknown CNI family $FAM (want flannel or cilium)" ;;
esac
OUTD=$(cni_cache "$FAM")
STAMP=$OUTD/bin/.complete
want="$FAM=$VER go=$("$GO" env GOVERSION) patches=1"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then echo "$FAM $VER: cached in $OUTD/bin"; exit 0; fi
mkdir -p "$OUTD"
exec 9>"$OUTD/.lock"
flock -w 1800 9 || die "timeout (1800s) waiting for another build holding $OUTD/.lock"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then echo "$FAM $VER: built by another run"; exit 0; fi
NEW=$OUTD/bin.new BUILD=$OUTD/build
rm -rf "$NEW" "$BUILD"; mkdir -p "$NEW" "$BUILD"
t0=$SECONDS
export CGO_ENABLED=0
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
  # /proc/modules; upstream makes that fatal at start. Nothing is loaded then: an empty list (the
  # built-in ones come from modules.builtin, which the image's entry script writes from the
  # kernel's own config).
  f=pkg/datapath/linux/modules/modules_linux.go
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
esac
rm -rf "$BUILD"
echo "$want" >"$NEW/.complete"
rm -rf "$OUTD/bin"; mv "$NEW" "$OUTD/bin"
echo "$FAM $VER: built in $((SECONDS - t0))s; binaries $(du -sh "$OUTD/bin" | cut -f1)"
