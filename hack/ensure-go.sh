#!/usr/bin/env bash
# Make a Go toolchain new enough for go.mod available, installing it if needed.
# Prints the directory to put first on PATH. Uses only Debian's packages and
# the Go module proxy (the toolchain is published there as a module).
set -euo pipefail
want=$(awk '/^go /{print $2; exit}' "$(dirname "$0")/../go.mod")
minor() { echo "$1" | sed -E 's/^(go)?([0-9]+)\.([0-9]+).*/\3/'; }
have_ok() {
  command -v go >/dev/null 2>&1 || return 1
  local v; v=$(go env GOVERSION 2>/dev/null || true)
  v=${v#go}
  [ -n "$v" ] || return 1
  # Go >= 1.21 fetches the toolchain go.mod asks for by itself (GOTOOLCHAIN=auto).
  [ "$(minor "$v")" -ge 21 ]
}
if have_ok; then
  dirname "$(command -v go)"
  exit 0
fi
for d in /usr/local/go/bin /usr/lib/go/bin; do
  if [ -x "$d/go" ]; then PATH="$d:$PATH"; have_ok && { echo "$d"; exit 0; }; fi
done
echo "ensure-go: installing Debian's golang-go to bootstrap Go $want" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends golang-go ca-certificates >&2 || { apt-get update >&2; apt-get install -y --no-install-recommends golang-go ca-certificates >&2; }
arch=$(dpkg --print-architecture)
mod="golang.org/toolchain@v0.0.1-go${want}.linux-${arch}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
dir=$(cd "$tmp" && GOFLAGS=-mod=mod GO111MODULE=on /usr/bin/go mod download -json "$mod" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
[ -f "$dir/bin/go" ] || { echo "ensure-go: could not fetch $mod" >&2; exit 1; }
# Module zips carry no file modes: copy the toolchain out and mark its programs executable.
dest=/usr/local/lib/cnibench-go$want
rm -rf "$dest"; cp -r "$dir" "$dest"; chmod -R u+w "$dest"
chmod +x "$dest"/bin/* "$dest"/pkg/tool/*/*
"$dest/bin/go" version >&2
echo "$dest/bin"
