#!/usr/bin/env bash
# hoststate.sh snapshot DIR   : record the host state the cluster must not leave changed
# hoststate.sh compare A B    : show differences; exit 1 if any
# Recorded: ip -o link, routes (v4/v6) and rules, nft ruleset, iptables-save/ip6tables-save,
# sysctl -a (minus counters that change by themselves), netns list, mounts, top-level cgroups in
# every hierarchy, /run/containerd, and processes of the cluster's binaries.
set -euo pipefail
VOLATILE='^(fs\.dentry-state|fs\.file-nr|fs\.inode-nr|fs\.inode-state|kernel\.ns_last_pid|kernel\.random\.(uuid|entropy_avail)|kernel\.pty\.nr|net\.netfilter\.nf_conntrack_count|fs\.quota\.[a-z_]+) '
snapshot() {
  local d=$1; mkdir -p "$d"
  ip -o link | sed -E 's/^[0-9]+: //' | sort >"$d/link"
  ip route >"$d/route"; ip -6 route >"$d/route6"; ip rule >"$d/rule"
  nft list ruleset >"$d/nft" 2>&1 || true
  iptables-save 2>&1 | grep -v '^#' >"$d/iptables" || true
  ip6tables-save 2>&1 | grep -v '^#' >"$d/ip6tables" || true
  sysctl -a 2>/dev/null | grep -Ev "$VOLATILE" | sort >"$d/sysctl"
  ip netns list | sort >"$d/netns"
  awk '{print $5, $9}' /proc/self/mountinfo | sort >"$d/mounts"
  for h in /sys/fs/cgroup/*/; do find "$h" -mindepth 1 -maxdepth 1 -type d; done | sort >"$d/cgroups"
  for p in /var/log/containers /var/lib/kubelet /var/lib/cni /run/containerd /usr/libexec/kubernetes /root/.kube /etc/cni /opt/cni; do
    if [ -e "$p" ]; then find "$p" | sort; else echo "(no $p)"; fi
  done >"$d/paths"
  ps -eo comm= | grep -E '^(containerd|containerd-shim|etcd|kube-|kubelet|pause|runc)' | sort >"$d/procs" || true
}
case ${1:-} in
  snapshot) snapshot "${2:?dir}" ;;
  compare)
    if diff -ru "${2:?dir A}" "${3:?dir B}"; then echo "host state: unchanged ($(ls "$2" | tr '\n' ' '))"; else echo "host state: CHANGED (diff above)"; exit 1; fi ;;
  *) echo "usage: $0 snapshot DIR | compare DIR_BEFORE DIR_AFTER" >&2; exit 2 ;;
esac
