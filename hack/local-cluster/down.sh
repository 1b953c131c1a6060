#!/usr/bin/env bash
# down.sh: stop the local cluster and put the machine back as up.sh found it. Idempotent; safe
# after a crash or a partial up.sh. Only processes the harness started are signalled: by pid file,
# by membership of the cluster's own cgroups, or (shims) by our unique containerd socket path.
# KEEP_LOGS=DIR copies the logs there before the state dir is removed.
# Exit status 1 if anything of the cluster could not be removed (it says what).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || die "needs root"
say() { echo "down: $*"; }
sock() { echo "$LC_RUN/$1/containerd.sock"; }
ctr_ok() { [ -S "$(sock $1)" ] && alive containerd-$1; }

# 1. node agents first, so nothing re-creates pods during the teardown
stop kube-proxy-n1 kube-proxy-n2 kubelet-n1 kubelet-n2 outside-denied outside-allowed lb-addresses
# 2. pod network namespaces: as containerd knows them, and (after a crash) any cni-* netns
#    holding an address of our pod CIDRs
podns=()
for n in $NODES; do
  ctr_ok $n || continue
  for c in $(timeout 20 ctr --address "$(sock $n)" -n k8s.io containers ls -q 2>/dev/null || true); do
    p=$(timeout 10 ctr --address "$(sock $n)" -n k8s.io containers info "$c" 2>/dev/null | grep -o '/var/run/netns/cni-[0-9a-f-]*' | head -1 || true)
    [ -n "$p" ] && podns+=("$(basename "$p")")
  done
done
for ns in $(ip netns list 2>/dev/null | awk '$1 ~ /^cni-/ {print $1}'); do
  ip -n "$ns" -4 -o addr show 2>/dev/null | grep -q ' inet 10\.244\.[01]\.' && podns+=("$ns")
done
# 3. containers, then containerd
for n in n2 n1; do
  if ctr_ok $n; then
    for t in $(timeout 20 ctr --address "$(sock $n)" -n k8s.io tasks ls -q 2>/dev/null || true); do
      timeout 10 ctr --address "$(sock $n)" -n k8s.io tasks kill -s KILL "$t" >/dev/null 2>&1 || true
    done
    for t in $(timeout 20 ctr --address "$(sock $n)" -n k8s.io tasks ls -q 2>/dev/null || true); do
      timeout 10 ctr --address "$(sock $n)" -n k8s.io tasks delete -f "$t" >/dev/null 2>&1 || true
    done
  fi
done
stop containerd-n1 containerd-n2
# 4. control plane
stop kube-scheduler kube-controller-manager
stop kube-apiserver
stop etcd
# 5. leftovers: processes in our pod cgroups, and shims serving our containerd sockets
kill_ours() {
  local pids=() p
  while read -r p; do pids+=("$p"); done < <(cluster_cgroup_pids)
  for p in /proc/[0-9]*; do
    grep -qaF -- "$LC_RUN/n" "$p/cmdline" 2>/dev/null && grep -qa containerd-shim "$p/cmdline" 2>/dev/null && pids+=("${p#/proc/}")
  done
  [ ${#pids[@]} -gt 0 ] || return 0
  pids=($(printf '%s\n' "${pids[@]}" | sort -un))
  say "killing leftover processes ${pids[*]}"
  kill -9 "${pids[@]}" 2>/dev/null || true
  # bounded wait until they are gone (reaped by init, not just zombies)
  local start=$SECONDS left
  while :; do
    left=""; for p in "${pids[@]}"; do [ -e /proc/$p ] && left="$left $p"; done
    [ -z "$left" ] && break
    (( SECONDS - start < 10 )) || { say "TIMEOUT (10s): still running:$left"; break; }
    sleep 0.2
  done
}
kill_ours
# 6. mounts below our dirs (kubelet volumes, rootfs, shm), deepest first; then pod netns
for m in $(awk -v a="$LC_STATE/" -v b="$LC_RUN/" 'index($5, a) == 1 || index($5, b) == 1 || $5 == substr(a, 1, length(a)-1) || $5 == substr(b, 1, length(b)-1) {print $5}' /proc/self/mountinfo | sort -r); do
  umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || say "cannot unmount $m"
done
for ns in $(printf '%s\n' "${podns[@]}" | sort -u); do
  [ -n "$ns" ] && ip netns del "$ns" 2>/dev/null && say "removed pod netns $ns" || true
done
# 7. node namespaces and the outside (their veths go with them)
for n in $NODES $OUTSIDE; do
  ip netns list 2>/dev/null | grep -qw "$(netns $n)" && ip netns del "$(netns $n)" && say "removed netns $(netns $n)" || true
done
# 8. cgroups below /cnbk8s-<node> in every hierarchy (incl. runc's cgroup2 "unified" mirror)
for h in /sys/fs/cgroup/*/; do
  for d in "$h${CGROOT#/}"-n*; do
    [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
done
# 9. hard-coded host paths (lib.sh HOST_PATHS): our entries, then the dirs up.sh found absent
# shim sockets: /run/containerd/s/sha256("<containerd address>/<namespace>/<sandbox id>")
for n in $NODES; do
  for id in $(ls "$LC_STATE/$n/containerd/io.containerd.grpc.v1.cri/sandboxes" 2>/dev/null || true); do
    rm -f "/run/containerd/s/$(printf '%s' "$(sock $n)/k8s.io/$id" | sha256sum | cut -d' ' -f1)"
  done
done
sandboxes=$(find "$LC_STATE"/n*/containerd/io.containerd.grpc.v1.cri/sandboxes -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null || true)
for id in $sandboxes; do rm -f /var/lib/cni/results/*-"$id"-*; done
rm -f /var/lib/cni/results/cnibench-local-*
for l in /var/log/containers/*.log; do
  [ -L "$l" ] && [[ "$(readlink "$l")" == "$LC_STATE"/* ]] && rm -f "$l"
done
if [ -f "$LC_RUN/absent-host-paths" ]; then
  while read -r p; do
    [ -e "$p" ] || continue
    # created by our kubelets (both use this fixed path): the registration socket only
    [ "$p" = /var/lib/kubelet ] && rm -f /var/lib/kubelet/device-plugins/kubelet.sock
    find "$p" -depth -type d -empty -delete 2>/dev/null || true
    [ -e "$p" ] && say "left $p in place: it holds files that are not ours: $(find "$p" ! -type d | head -3 | tr '\n' ' ')"
  done <"$LC_RUN/absent-host-paths"
fi
[ -d /run/containerd ] && { find /run/containerd -mindepth 1 -depth -type d -empty -delete 2>/dev/null || true; }
# 10. host sysctls the kubelet rewrote
if [ -s "$LC_RUN/sysctl.orig" ]; then sysctl -qw $(cat "$LC_RUN/sysctl.orig") && say "restored sysctls: $(tr '\n' ' ' <"$LC_RUN/sysctl.orig")"; fi
# 11. logs, state
if [ -n "${KEEP_LOGS:-}" ] && [ -d "$LOGS" ]; then mkdir -p "$KEEP_LOGS"; cp -a "$LOGS/." "$KEEP_LOGS/"; say "logs kept in $KEEP_LOGS"; fi
bad=()
if awk -v a="$LC_STATE" -v b="$LC_RUN" 'index($5, a) == 1 || index($5, b) == 1 {f=1} END {exit !f}' /proc/self/mountinfo; then
  bad+=("mounts remain below $LC_STATE or $LC_RUN (state dirs NOT removed)")
else
  rm -rf --one-file-system "$LC_STATE" "$LC_RUN"
fi
# 12. check
for n in $NODES $OUTSIDE; do ip netns list | grep -qw "$(netns $n)" && bad+=("netns $(netns $n)"); done
for d in /sys/fs/cgroup/*/"${CGROOT#/}"-n*; do [ -d "$d" ] && bad+=("cgroup $d"); done
for f in /dev/null "$LC_RUN"/pids/*.pid; do [ -f "$f" ] && bad+=("pid file $f"); done
if [ ${#bad[@]} -gt 0 ]; then printf 'down: NOT clean: %s\n' "${bad[@]}" >&2; exit 1; fi
say "clean"
