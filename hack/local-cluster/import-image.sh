#!/usr/bin/env bash
# import-image.sh TARBALL [NODE...] : import an image tarball (docker-archive or OCI layout tar,
# e.g. from `docker save`, `go-containerregistry`, or tools/mkimage) into the containerd of each
# running node (default: all), in the k8s.io namespace the kubelet uses, unpacked for overlayfs.
# Pods then use it with `imagePullPolicy: Never` (or IfNotPresent with a non-:latest tag).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
tar=${1:?usage: import-image.sh TARBALL [NODE...]}; shift
[ -f "$tar" ] || die "no such file: $tar"
nodes=${*:-$NODES}
for n in $nodes; do
  [ -S "$LC_RUN/$n/containerd.sock" ] || die "node $n: containerd is not running ($LC_RUN/$n/containerd.sock); run up.sh first"
  # bounded: a wedged containerd must not hang the caller
  out=$(timeout 120 ctr --address "$LC_RUN/$n/containerd.sock" -n k8s.io images import --snapshotter overlayfs "$tar" 2>&1) ||
    die "node $n: import of $tar failed or timed out (120s): $out"
  echo "node $n: imported $(echo "$out" | awk '/^unpacking /{print $2}' | tr '\n' ' ')"
done
