#!/usr/bin/env bash
# Build (or reuse) the Kubernetes server binaries for $K8S_VERSION from the Go module proxy:
# a scratch module requiring k8s.io/kubernetes@$K8S_VERSION with every staging module
# replaced by its published k8s.io/*@v0.X.Y version (no git, no docker). Output:
# $LC_CACHE/$K8S_VERSION/bin/{kube-apiserver,kube-controller-manager,kube-scheduler,kubelet,kube-proxy,kubectl}
# A complete build is marked by bin/.complete; a warm run only checks that stamp.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CMDS="kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl"
STAMP=$K8S_BIN/.complete
gover=$("$GO" env GOVERSION)
want="k8s=$K8S_VERSION go=$gover cmds=$CMDS"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  echo "k8s $K8S_VERSION: cached in $K8S_BIN"; exit 0
fi
mkdir -p "$LC_CACHE/$K8S_VERSION"
# one build at a time per cache
exec 9>"$LC_CACHE/$K8S_VERSION/.lock"
flock -w 1800 9 || die "timeout (1800s) waiting for another build holding $LC_CACHE/$K8S_VERSION/.lock"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then echo "k8s $K8S_VERSION: built by another run"; exit 0; fi
STAGING_VERSION=v0.${K8S_VERSION#v1.}
BUILD=$LC_CACHE/$K8S_VERSION/build
NEWBIN=$LC_CACHE/$K8S_VERSION/bin.new
rm -rf "$BUILD" "$NEWBIN"; mkdir -p "$BUILD" "$NEWBIN"
cd "$BUILD"
t0=$SECONDS
# Staging modules the filtered proxy does not serve for this version and that the six
# binaries never import: replaced with empty local stub modules.
STUBS="k8s.io/code-generator k8s.io/sample-apiserver k8s.io/sample-cli-plugin k8s.io/sample-controller"
printf 'module cnibench.local/k8sbuild\n\ngo 1.22\n' >go.mod
go_or_die "k8s.io/kubernetes@$K8S_VERSION" "$GO" mod download -json "k8s.io/kubernetes@$K8S_VERSION"
MODFILE=$GOMODCACHE/cache/download/k8s.io/kubernetes/@v/$K8S_VERSION.mod
GOVER=$(awk '/^go /{print $2; exit}' "$MODFILE")
GODEBUG_LINE=$(grep -E '^godebug ' "$MODFILE" || true)
{
  echo "module cnibench.local/k8sbuild"; echo
  echo "go $GOVER"; echo
  if [ -n "$GODEBUG_LINE" ]; then echo "$GODEBUG_LINE"; echo; fi
  echo "require k8s.io/kubernetes $K8S_VERSION"; echo
  for m in $(grep -E '=> \./staging' "$MODFILE" | awk '{print $1}'); do
    if [[ " $STUBS " == *" $m "* ]]; then
      d=stubs/${m#k8s.io/}; mkdir -p "$d"; printf 'module %s\n\ngo 1.22\n' "$m" >"$d/go.mod"
      echo "replace $m => ./$d"
    else
      echo "replace $m => $m $STAGING_VERSION"
    fi
  done
} >go.mod
rm -f go.sum
pkgs=$(for c in $CMDS; do echo "k8s.io/kubernetes/cmd/$c"; done)
GOFLAGS=-mod=mod go_or_die "resolving the modules of Kubernetes $K8S_VERSION" "$GO" list -deps $pkgs
t1=$SECONDS; echo "k8s $K8S_VERSION: modules resolved/downloaded in $((t1 - t0))s"
export CGO_ENABLED=0
minor=$(echo "$K8S_VERSION" | cut -d. -f2)
for c in $CMDS; do
  GOFLAGS=-mod=mod go_or_die "building $c $K8S_VERSION" "$GO" build -trimpath \
    -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
    -o "$NEWBIN/$c" "k8s.io/kubernetes/cmd/$c"
  echo "k8s $K8S_VERSION: built $c at +$((SECONDS - t1))s"
done
echo "$want" >"$NEWBIN/.complete"
rm -rf "$K8S_BIN"; mv "$NEWBIN" "$K8S_BIN"
echo "k8s $K8S_VERSION: modules $((t1 - t0))s, compile $((SECONDS - t1))s; binaries $(du -sh "$K8S_BIN" | cut -f1), GOMODCACHE $(du -sh "$GOMODCACHE" | cut -f1), GOCACHE $(du -sh "$GOCACHE" | cut -f1)"
