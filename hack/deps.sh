#!/usr/bin/env bash
# Install the Debian packages the tests run (`make deps`; `make test` runs it):
#   nftables  nft        the BPF host-routing tests' forward counters
#   iproute2  ip         lab tests and the fresh-machine test's network check
#   iptables, ipset      the filter scenarios' backends
#   procps    pgrep      the suite tests' "no process left behind" check
#   chromium             the report's browser test
#   time                 GNU time: the egress loader bench's peer loaders (RSS)
#   strongswan-charon, strongswan-swanctl, libcharon-extra-plugins,
#   libstrongswan-standard-plugins
#                        the encryption scenario's userspace ESP (charon with
#                        kernel-libipsec, run only inside lab namespaces; the
#                        host's strongswan service is kept from starting)
#   prometheus, prometheus-pushgateway
#                        the export command's test against a real Pushgateway
#                        scraped by a real Prometheus (both started by the
#                        test on loopback; the packages' services are kept
#                        from starting and disabled)
#   nginx, vsftpd, openssh-server, openssh-client, curl
#                        the apps scenario's servers and clients (each daemon
#                        started by the scenario inside a lab namespace with
#                        its own config in a temporary directory; the
#                        packages' services are kept from starting and, when
#                        installed here, disabled)
#   haproxy              the proxies scenario's L7 proxy (same rule)
# Quick when all are there (one dpkg-query); as non-root it only says what is
# missing (the tests that need it then skip, or fail with CI=true).
set -euo pipefail
pkgs=(nftables iproute2 iptables ipset procps chromium time ca-certificates
  strongswan-charon strongswan-swanctl libcharon-extra-plugins libstrongswan-standard-plugins
  prometheus prometheus-pushgateway
  nginx vsftpd openssh-server openssh-client curl haproxy)
missing=()
for p in "${pkgs[@]}"; do
  st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [ "$st" = installed ] || missing+=("$p")
done
[ "${#missing[@]}" -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing ${missing[*]}; not root, so not installing them: the tests that need them skip (run 'sudo make deps')" >&2
  [ "${CI:-}" = true ] && { echo "deps: CI=true: failing instead" >&2; exit 1; }
  exit 0
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# No package may start a service on the host (strongswan-starter would run a
# charon in the host's network namespace; prometheus and the pushgateway
# would listen on the host's :9090 and :9091; nginx, vsftpd, sshd and
# haproxy on the host's :80, :21, :22): a policy-rc.d that refuses
# every start while installing, unless one is already there.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
  chmod 755 /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
# The services' processes, to tell after the install whether it started one.
svc_pids() {
  { pgrep -f '^(/usr/bin/)?prometheus(-pushgateway)?( |$)' || true
    for n in nginx vsftpd sshd haproxy; do pgrep -x "$n" || true; done; } | sort
}
before=$(svc_pids)
install() { apt-get install -y -q --no-install-recommends "${missing[@]}" >&2; }
if ! install; then
  echo "deps: install failed; running apt-get update and trying again" >&2
  apt-get update -q >&2
  install || { echo "deps: apt-get install ${missing[*]} failed (see above)" >&2; exit 1; }
fi
# Services the packages would start at the next boot: keep them off (the
# tests start their own: a charon per lab namespace, a prometheus and a
# pushgateway on loopback).
if command -v systemctl >/dev/null 2>&1; then
  systemctl disable --now strongswan-starter.service >/dev/null 2>&1 || true
  # Only the services installed just now: a Prometheus the host already ran
  # is its owner's.
  # (openssh-server's unit is ssh.service: a host's own sshd, installed
  # before, is never touched.)
  for svc in prometheus prometheus-pushgateway nginx vsftpd openssh-server haproxy; do
    unit=$svc
    [ "$svc" = openssh-server ] && unit=ssh
    case " ${missing[*]} " in *" $svc "*)
      systemctl disable --now "$unit.service" >/dev/null 2>&1 || true
      [ "$unit" = ssh ] && systemctl disable --now ssh.socket >/dev/null 2>&1 || true ;;
    esac
  done
fi
# Check that the install started none of them (processes there before it
# are someone else's).
started=$(comm -13 <(echo "$before") <(svc_pids))
if [ -n "$started" ]; then
  echo "deps: installing started $(ps -o comm= -p $(echo $started) | tr '\n' ' ')despite policy-rc.d (pids $(echo $started)); stop them: systemctl disable --now prometheus prometheus-pushgateway nginx vsftpd ssh haproxy" >&2
  exit 1
fi
