#!/usr/bin/env bash
# hoststate.sh snapshot DIR   : record the host state the cluster must not leave changed
# hoststate.sh compare A B    : show differences; exit 1 if any
# hoststate.sh during A DIR   : while the cluster runs: the host's sysctls, bpffs and cgroup2 mounts
#                               and the CNIs' default host paths (Calico's, flannel's, host-local's)
#                               as in snapshot A, and no BPF program on the host's cgroup v2 root
#                               itself (exit 1 otherwise)
# Recorded: ip -o link, routes (v4/v6) and rules, nft ruleset, iptables-save/ip6tables-save,
# sysctl -a (minus counters that change by themselves), netns list, mounts, top-level cgroups in
# every hierarchy, BPF programs attached to the host's cgroup v2 root (the one cgroup hook that is
# host-wide), /run/containerd, the host paths CNIs write by default (/etc/cni, Calico's
# /run/calico, /var/lib/calico, …, flannel's /run/flannel, Calico's policy sync /var/run/nodeagent),
# and processes of the cluster's binaries.
# A snapshot fails (exit 2) when a tool it reads is missing or fails: a state recorded as
# "command not found" on both sides would make the comparison unable to fail.
set -euo pipefail
VOLATILE='^(fs\.dentry-state|fs\.file-nr|fs\.inode-nr|fs\.inode-state|kernel\.ns_last_pid|kernel\.random\.(uuid|entropy_avail)|kernel\.pty\.nr|net\.netfilter\.nf_conntrack_count|fs\.quota\.[a-z_]+) '
fail() { echo "hoststate: $*" >&2; exit 2; }
# rec FILE CMD... : CMD's output into FILE; the snapshot fails if CMD is missing or fails
rec() { local f=$1; shift; command -v "$1" >/dev/null || fail "$1: command not found (install it: the host state cannot be checked without it)"
  "$@" >"$f.raw" 2>"$f.err" || fail "$* failed: $(head -3 "$f.err")"; rm -f "$f.err"; }
snapshot() {
  local d=$1 g; mkdir -p "$d"
  rec "$d/link" ip -o link; sed -E 's/^[0-9]+: //' "$d/link.raw" | sort >"$d/link"
  rec "$d/route" ip route; rec "$d/route6" ip -6 route; rec "$d/rule" ip rule
  rec "$d/nft" nft list ruleset
  rec "$d/iptables" iptables-save; grep -v '^#' "$d/iptables.raw" >"$d/iptables" || true
  rec "$d/ip6tables" ip6tables-save; grep -v '^#' "$d/ip6tables.raw" >"$d/ip6tables" || true
  rec "$d/sysctl" sysctl -a; grep -Ev "$VOLATILE" "$d/sysctl.raw" | sort >"$d/sysctl"
  # BPF programs on the host's cgroup v2 hierarchy (top levels: a program there acts host-wide)
  g=$(awk '$9 == "cgroup2" {print $5; exit}' /proc/self/mountinfo)
  if [ -n "$g" ]; then rec "$d/bpf-cgroup" bpftool cgroup tree "$g"; else echo "(no cgroup2 mount)" >"$d/bpf-cgroup.raw"; fi
  for f in route route6 rule nft bpf-cgroup; do mv "$d/$f.raw" "$d/$f"; done
  rm -f "$d"/*.raw
  ip netns list | sort >"$d/netns"
  awk '{print $5, $9}' /proc/self/mountinfo | sort >"$d/mounts"
  for h in /sys/fs/cgroup/*/; do find "$h" -mindepth 1 -maxdepth 1 -type d; done | sort >"$d/cgroups"
  for p in /var/log/containers /var/lib/kubelet /var/lib/cni /run/containerd /usr/libexec/kubernetes /root/.kube /etc/cni /opt/cni \
    /run/calico /var/lib/calico /var/log/calico /etc/calico /run/flannel /var/run/nodeagent; do
    if [ -e "$p" ]; then find "$p" | sort; else echo "(no $p)"; fi
  done >"$d/paths"
  ps -eo comm= | grep -E '^(containerd|containerd-shim|etcd|kube-|kubelet|pause|runc)' | sort >"$d/procs" || true
}
case ${1:-} in
  snapshot) snapshot "${2:?dir}" ;;
  compare)
    if diff -ru "${2:?dir A}" "${3:?dir B}"; then echo "host state: unchanged ($(ls "$2" | tr '\n' ' '))"; else echo "host state: CHANGED (diff above)"; exit 1; fi ;;
  during)
    snapshot "${3:?dir}"; bad=0
    diff -u "${2:?dir A}/sysctl" "$3/sysctl" || { echo "host sysctls: CHANGED while the cluster runs (diff above)"; bad=1; }
    g=$(awk '$9 == "cgroup2" {print $5; exit}' /proc/self/mountinfo)
    if [ -n "$g" ]; then
      n=$(bpftool cgroup show "$g" | grep -vc '^ID' || true)
      [ "$n" -eq 0 ] || { bpftool cgroup show "$g"; echo "host cgroup v2 root $g: $n BPF program(s) attached while the cluster runs"; bad=1; }
    fi
    # bpffs and cgroup2 mounts of the host's (an eBPF dataplane's own go with its container)
    a=$(awk '$2 == "bpf" || $2 == "cgroup2"' "$2/mounts"); b=$(awk '$2 == "bpf" || $2 == "cgroup2"' "$3/mounts")
    [ "$a" = "$b" ] || { echo "host bpffs/cgroup2 mounts: CHANGED while the cluster runs: $(diff <(echo "$a") <(echo "$b") | grep '^[<>]' | tr '\n' ' ')"; bad=1; }
    # the host-wide paths a CNI's agent or plugin writes by default: none while it runs (Calico's;
    # flanneld's subnet file; host-local's IPAM dataDir, which containerd's result cache beside it
    # in /var/lib/cni is not)
    for p in /run/calico /var/lib/calico /var/log/calico /etc/calico /run/flannel /var/run/nodeagent /var/lib/cni/networks; do
      a=$(grep -E "^(\(no )?$p([/)]|\$)" "$2/paths" || true); b=$(grep -E "^(\(no )?$p([/)]|\$)" "$3/paths" || true)
      [ "$a" = "$b" ] || { echo "host path $p: CHANGED while the cluster runs: $(echo "$b" | head -3 | tr '\n' ' ')"; bad=1; }
    done
    [ $bad -eq 0 ] && echo "host state while the cluster runs: sysctls unchanged, no BPF program on the host's cgroup v2 root, bpffs and cgroup2 mounts unchanged, /run/calico, /var/lib/calico, /var/log/calico, /etc/calico, /run/flannel, /var/run/nodeagent and /var/lib/cni/networks unchanged"
    exit $bad ;;
  *) echo "usage: $0 snapshot DIR | compare DIR_BEFORE DIR_AFTER | during DIR_BEFORE DIR" >&2; exit 2 ;;
esac
