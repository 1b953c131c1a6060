#!/usr/bin/env bash
# Make a Go toolchain new enough for go.mod available, installing it if needed.
#
# Prints the directory holding `go` (put it first on PATH); everything else,
# including why it failed, goes to stderr, and a failure exits non-zero.
#
# Order: a toolchain this script installed before; `go` on PATH,
# /usr/local/go/bin or /usr/lib/go/bin if it is at least go.mod's version;
# otherwise it installs one: Debian's golang-go bootstraps a download of the
# toolchain go.mod names from the Go module proxy (the Go project publishes
# toolchains there as the module golang.org/toolchain), into
#   /usr/local/lib/cnibench-go<version>           as root
#   ${XDG_CACHE_HOME:-~/.cache}/cnibench/go<version>  otherwise
# The install is atomic (unpacked beside the destination, checked, renamed
# into place) and serialised by a lock, so concurrent makes neither see a half
# copy nor delete a working toolchain under each other.
set -euo pipefail
say() { echo "ensure-go: $*" >&2; }
die() { say "$*"; exit 1; }

root=$(cd "$(dirname "$0")/.." && pwd)
want=$(awk '/^go /{print $2; exit}' "$root/go.mod")
[ -n "$want" ] || die "no 'go' line in $root/go.mod"

if [ "$(id -u)" -eq 0 ]; then
  base=/usr/local/lib dest=/usr/local/lib/cnibench-go$want
else
  base=${XDG_CACHE_HOME:-$HOME/.cache}/cnibench dest=$base/go$want
fi

# version_of DIR prints the Go version of DIR/go ("1.26.0"), or nothing.
version_of() {
  local v
  v=$(cd / && GOTOOLCHAIN=local "$1/go" env GOVERSION 2>/dev/null) || return 0
  v=${v#go}
  echo "${v%%[-+ ]*}"
}
# new_enough V: V >= want (version order).
new_enough() {
  [ -n "$1" ] && [ "$(printf '%s\n%s\n' "$want" "$1" | sort -V | head -n1)" = "$want" ]
}
usable() { new_enough "$(version_of "$1")"; }

if usable "$dest/bin"; then echo "$dest/bin"; exit 0; fi
cands=()
if p=$(command -v go 2>/dev/null); then cands+=("$(dirname "$p")"); fi
cands+=(/usr/local/go/bin /usr/lib/go/bin)
for d in "${cands[@]}"; do
  if [ -x "$d/go" ] && usable "$d"; then echo "$d"; exit 0; fi
done

mkdir -p "$base" || die "cannot create $base"
exec 9>"$base/.cnibench-go.lock" || die "cannot open the lock $base/.cnibench-go.lock"
flock 9 || die "cannot lock $base/.cnibench-go.lock"
# Another make may have installed it while this one waited for the lock.
if usable "$dest/bin"; then echo "$dest/bin"; exit 0; fi

bootstrap=""
for d in "${cands[@]}"; do
  if [ -x "$d/go" ] && new_enough "$(version_of "$d")" ; then bootstrap=$d/go; break; fi
done
if [ -z "$bootstrap" ]; then
  for d in "${cands[@]}"; do [ -x "$d/go" ] && { bootstrap=$d/go; break; }; done
fi
if [ -z "$bootstrap" ]; then
  [ "$(id -u)" -eq 0 ] || die "no Go on PATH and not root, so Debian's golang-go cannot be installed: run 'sudo apt-get install golang-go' or put Go $want+ on PATH"
  say "installing Debian's golang-go to bootstrap Go $want"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get install -y -q --no-install-recommends golang-go ca-certificates >&2; then
    apt-get update -q >&2 || die "apt-get update failed (see above)"
    apt-get install -y -q --no-install-recommends golang-go ca-certificates >&2 ||
      die "apt-get install golang-go failed (see above)"
  fi
  bootstrap=/usr/lib/go/bin/go
  [ -x "$bootstrap" ] || die "golang-go installed but $bootstrap is missing"
fi

arch=$(dpkg --print-architecture 2>/dev/null || "$bootstrap" env GOARCH)
mod="golang.org/toolchain@v0.0.1-go${want}.linux-${arch}"
say "downloading Go $want ($mod) through $(GOTOOLCHAIN=local "$bootstrap" env GOPROXY) into $dest"
tmp=$(mktemp -d "$base/.cnibench-go$want.tmp.XXXXXX") || die "cannot create a temporary directory in $base"
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
# A private module cache, removed afterwards: the copy below is what stays.
mkdir -p "$tmp/mod" "$tmp/work"
if ! json=$(cd "$tmp/work" && GOTOOLCHAIN=local GOFLAGS=-mod=mod GO111MODULE=on GOMODCACHE="$tmp/mod" \
  "$bootstrap" mod download -json "$mod"); then
  die "could not download $mod (the error is above; check GOPROXY and the network, or put Go $want+ on PATH)"
fi
dir=$(printf '%s\n' "$json" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[ -n "$dir" ] && [ -f "$dir/bin/go" ] || die "downloaded $mod but found no bin/go in it: $json"
# Module zips carry no file modes: copy the toolchain out and mark its programs executable.
cp -r "$dir" "$tmp/go"
chmod -R u+w "$tmp/go"
chmod +x "$tmp/go"/bin/* "$tmp/go"/pkg/tool/*/*
got=$(version_of "$tmp/go/bin")
new_enough "$got" || die "the downloaded toolchain does not run or is not Go $want (got '$got')"
if [ -e "$dest" ]; then
  # Present but not usable (checked above, under the lock): move it aside.
  mv "$dest" "$tmp/old" || die "cannot move the broken $dest aside"
fi
mv -T "$tmp/go" "$dest" || die "cannot move the toolchain into $dest"
say "installed Go $got in $dest; to use it yourself: export PATH=$dest/bin:\$PATH"
echo "$dest/bin"
