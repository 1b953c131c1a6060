#!/usr/bin/env bash
# kubectl against the local cluster (its API is reachable only inside the n1 node netns).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[ -f "$KUBECONFIG_ADMIN" ] || die "no cluster ($KUBECONFIG_ADMIN missing): run up.sh"
exec nsenter --net=/run/netns/$(netns n1) -- "$K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG_ADMIN" --cache-dir "$LC_STATE/kubectl-cache" "$@"
