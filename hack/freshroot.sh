#!/usr/bin/env bash
# The fresh-machine test (`make fresh-test`, run by .ci/run): the README's
# commands, verbatim, on a minimal Debian 12 root built here, and proof that
# the host's network state is the same afterwards.
#
#  1. debootstrap --variant=minbase bookworm from the mirror this machine's apt
#     uses; the downloaded packages are cached as a tarball in $FRESH_CACHE
#     (--make-tarball/--unpack-tarball), so a second run skips the download.
#  2. The host's CA trust store, resolv.conf and hosts are copied in; /proc,
#     /sys (with /sys/fs/bpf and cgroups), /dev and a private /run are mounted.
#  3. The checkout's committed HEAD is cloned into /root/cnibench (or, with
#     FRESH_WORKTREE=1, a snapshot of the working tree: for trying uncommitted
#     changes; it leaves the checkout's git state alone; FRESH_SRC=DIR clones
#     another repository instead).
#  4. The "Two commands" block of README.md runs line by line, as written, as
#     root in the root with a clean environment (CI, GOPROXY, GOSUMDB, GOFLAGS
#     and proxy settings passed through). CNIBENCH_QUICK_SHORT=1 (the default
#     here; FRESH_QUICK_SHORT=0 turns it off) shortens `make quick`; `make
#     test` runs whole.
#  5. ip link/route, nftables, iptables and net.ipv4/net.core sysctls of the
#     host are compared with what they were before.
# Everything is unmounted and removed on exit, whatever happened.
set -euo pipefail
say() { echo "fresh-test: $*" >&2; }
die() { say "$*"; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, mounts): run as root, e.g. sudo make fresh-test"

t0=$(date +%s)
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${FRESH_CACHE:-/var/cache/cnibench-freshroot}
arch=$(dpkg --print-architecture)
tarball=$cache/bookworm-minbase-$arch.tgz
export DEBIAN_FRONTEND=noninteractive

# The Debian mirror apt uses here (deb822 "URIs:" or one-line "deb URL bookworm").
mirror=${FRESH_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    awk '/^URIs:/ && $2 ~ /\/debian\/?$/ {print $2; exit}
         /^deb / && $0 ~ / bookworm / {for (i = 2; i <= NF; i++) if ($i ~ /^https?:/ && $i ~ /\/debian\/?$/) {print $i; exit}}' || true)
fi
[ -n "$mirror" ] || die "found no Debian mirror in /etc/apt/sources.list*: set FRESH_MIRROR"

if ! command -v debootstrap >/dev/null; then
  say "installing debootstrap"
  apt-get install -y -q debootstrap >&2 || { apt-get update -q >&2 && apt-get install -y -q debootstrap >&2; } ||
    die "cannot install debootstrap (see above)"
fi

work=$(mktemp -d /var/tmp/cnibench-fresh.XXXXXX)
root=$work/root
mkdir -p "$root"

# Unmount everything under $root (deepest first), then remove $work, but only
# once nothing is mounted there any more.
cleanup() {
  local rc=$? m i
  for i in 1 2 3; do
    mapfile -t m < <(awk -v r="$root" '$5 == r || index($5, r "/") == 1 {print $5}' /proc/self/mountinfo | sort -r)
    [ "${#m[@]}" -eq 0 ] && break
    for x in "${m[@]}"; do umount "$x" 2>/dev/null || umount -l "$x" 2>/dev/null || true; done
  done
  if awk -v r="$root" '$5 == r || index($5, r "/") == 1 {found = 1} END {exit !found}' /proc/self/mountinfo; then
    say "could not unmount everything under $root; left $work in place"
  else
    rm -rf --one-file-system "$work"
  fi
  say "total wall time $(( $(date +%s) - t0 )) s"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# 1. The root.
t=$(date +%s)
if [ ! -s "$tarball" ]; then
  say "downloading a minbase bookworm from $mirror into $tarball"
  mkdir -p "$cache"
  dl=$(mktemp -d "$work/dl.XXXXXX")
  debootstrap --variant=minbase --make-tarball="$tarball.tmp" bookworm "$dl" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log" >&2; rm -f "$tarball.tmp"; die "debootstrap --make-tarball failed"; }
  mv "$tarball.tmp" "$tarball"
  rm -rf "$dl"
fi
debootstrap --variant=minbase --unpack-tarball="$tarball" bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
  { tail -n 20 "$work/debootstrap.log" >&2; die "debootstrap --unpack-tarball failed (remove $tarball if it is damaged)"; }
say "minimal root ready in $(( $(date +%s) - t )) s ($(du -sh "$root" | cut -f1))"

# 2. Trust, name resolution, mounts.
cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt" 2>/dev/null ||
  { mkdir -p "$root/etc/ssl/certs" && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"; }
if compgen -G "/usr/local/share/ca-certificates/*" >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
cp /etc/hosts "$root/etc/hosts"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys"
mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev"
mount -t tmpfs -o mode=755 tmpfs "$root/run"
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"

# 3. The checkout.
src=${FRESH_SRC:-$repo}
if [ "${FRESH_WORKTREE:-0}" = 1 ]; then
  src=$work/snapshot
  mkdir -p "$src"
  (cd "$repo" && git ls-files -z -co --exclude-standard | xargs -0 cp --parents -t "$src" 2>/dev/null || true)
  git -C "$src" init -q && git -C "$src" add -A &&
    git -C "$src" -c user.name=fresh-test -c user.email=fresh-test@localhost commit -q -m snapshot
fi
git clone -q "$src" "$root/root/cnibench"
say "cloned $(git -C "$root/root/cnibench" log -1 --format='%h %s')"

# 4. The README's commands, as written: the ```sh block under "## Two commands".
mapfile -t cmds < <(awk '/^## /{inblk = ($0 ~ /^## Two commands/)} inblk && /^```/{fence = !fence; next} inblk && fence' "$repo/README.md" |
  sed -E 's/[[:space:]]+#.*$//; s/^[[:space:]]+//' | grep -v -E '^(#|$|git clone |cd )')
[ "${#cmds[@]}" -ge 2 ] || die "found no commands in README.md's \"## Two commands\" block"
envs=(HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 TERM=dumb
  "CNIBENCH_QUICK_SHORT=${FRESH_QUICK_SHORT:-1}")
for v in CI http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
  [ -n "${!v:-}" ] && envs+=("$v=${!v}")
done
if command -v go >/dev/null; then
  for v in GOPROXY GOSUMDB GOFLAGS GONOSUMDB GOPRIVATE; do
    val=$(go env "$v" 2>/dev/null || true)
    [ -n "$val" ] && envs+=("$v=$val")
  done
fi

ipt() { if command -v "$1" >/dev/null; then "$1" 2>&1 | grep -v -E '^#' || true; fi; }
netstate() {
  echo "== ip -o link"; ip -o link | sed -E 's/ link-netnsid [0-9]+//'
  echo "== ip route"; ip route
  echo "== ip -6 route"; ip -6 route
  echo "== nft list ruleset"; if command -v nft >/dev/null; then nft list ruleset 2>&1; fi
  echo "== iptables-save"; ipt iptables-save
  echo "== ip6tables-save"; ipt ip6tables-save
  echo "== sysctl net.ipv4 net.core"
  find /proc/sys/net/ipv4 /proc/sys/net/core -type f -perm -u=r 2>/dev/null | sort | while read -r f; do
    printf '%s = %s\n' "${f#/proc/sys/}" "$(tr '\n\t' '  ' <"$f" 2>/dev/null)"
  done
}
netstate >"$work/net.before"

for c in "${cmds[@]}"; do
  say "running in the fresh root: $c"
  t=$(date +%s)
  chroot "$root" /usr/bin/env -i "${envs[@]}" /bin/bash -c "cd /root/cnibench && $c" </dev/null ||
    die "'$c' failed in the fresh root after $(( $(date +%s) - t )) s"
  say "'$c' passed in $(( $(date +%s) - t )) s"
done

# Every test cleans up after itself: no lab network namespace left in the
# root's /run (the tests' prefix is cnb-), no cnibench process left running.
leaked=$(ls "$root/run/netns" 2>/dev/null | grep '^cnb-' || true)
[ -z "$leaked" ] || die "the tests left network namespaces behind: $(echo $leaked)"
if pgrep -f 'cnibench (serve|run)' >/dev/null; then
  pgrep -af 'cnibench (serve|run)' >&2; die "the tests left cnibench processes behind (above)"
fi

# 5. The host's network is as it was.
netstate >"$work/net.after"
if ! diff -u "$work/net.before" "$work/net.after" >"$work/net.diff"; then
  head -n 60 "$work/net.diff" >&2
  die "the host's network state changed during the fresh-machine test (diff above)"
fi
say "host network state unchanged (links, routes, nftables, iptables, $(grep -c ' = ' "$work/net.before") sysctls)"
say "passed"
