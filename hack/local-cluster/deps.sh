#!/usr/bin/env bash
# Debian packages for the local cluster (deps.sh PKG... : these too, e.g. a CNI's build tools).
# Quick (one dpkg-query) when all are installed.
# No service is started by the install: a policy-rc.d that refuses is put in place for the
# install only if there is none (an existing one is left as it is).
set -euo pipefail
pkgs=(containerd runc containernetworking-plugins etcd-server etcd-client iptables conntrack
  busybox-static openssl bc util-linux iproute2 nftables bpftool ipset clang-14 "$@")
missing=()
for p in "${pkgs[@]}"; do
  st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$st" = installed ] || missing+=("$p")
done
[ "${#missing[@]}" -eq 0 ] && exit 0
[ "$(id -u)" -eq 0 ] || { echo "deps: missing ${missing[*]} and not root" >&2; exit 1; }
echo "deps: installing ${missing[*]}" >&2
rcd=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  rcd=/usr/sbin/policy-rc.d
  printf '#!/bin/sh\nexit 101\n' >"$rcd"; chmod +x "$rcd"
  trap 'rm -f "$rcd"' EXIT
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
