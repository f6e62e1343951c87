#!/usr/bin/env bash
# build.sh - builds kubelet v1.37.2 for the kubelet tier into
# $PODSTART_E2E_DIR/bin/kubelet (default /tmp/podstart-e2e/bin/kubelet).
#
# test/kubelet/build is a Go module of its own (a copy of the recipe in
# shared/kubelet: k8s.io/kubernetes v1.37.2 with every staging module
# replaced by its v0.37.2 release), so podstart's go.mod never requires
# k8s.io/kubernetes and "go test ./..." does not descend into it. About 8-10
# minutes on 2 idle cores with a cold build cache; Go's build cache makes a
# rebuild a link of well under a minute.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DIR=${PODSTART_E2E_DIR:-/tmp/podstart-e2e}
out=$DIR/bin/kubelet
export PATH="/usr/local/go/bin:$PATH"
mkdir -p "$DIR/bin"
start=$SECONDS
(cd "$here/build" && GOFLAGS=-buildvcs=false go build -o "$out.new" k8s.io/kubernetes/cmd/kubelet)
mv "$out.new" "$out"
echo "kubelet-build: built $out in $((SECONDS - start))s" >&2
