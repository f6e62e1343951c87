#!/usr/bin/env bash
# build.sh - builds the control plane of the cluster tier into
# $PODSTART_E2E_DIR/bin (default /tmp/podstart-e2e/bin):
#
#   kube-apiserver  k8s.io/kubernetes/cmd/kube-apiserver v1.37.2
#   kubectl         k8s.io/kubernetes/cmd/kubectl v1.37.2, the client the
#                   node API tier drives (logs, exec, attach, port-forward)
#   etcd            go.etcd.io/etcd/server/v3 v3.7.0, the version
#                   k8s.io/kubernetes v1.37.2's go.mod pins
#
# test/cluster/build is a Go module of its own, a sibling of
# test/kubelet/build with the same recipe (k8s.io/kubernetes v1.37.2, every
# staging module replaced by its v0.37.2 release), so the packages both
# binaries share with kubelet come out of the same Go build cache and
# podstart's go.mod never requires k8s.io/kubernetes. etcd's own module
# cannot be "go install"ed at a version (its go.mod has local replaces), so
# it is built inside this module with the versions Kubernetes selects.
# Measured on 2 cores shared with other builds: 815s from an empty build
# cache, 93s after test/kubelet/build.sh, 22s (two links) when unchanged.
#
#   bash test/cluster/build.sh              both
#   bash test/cluster/build.sh etcd         one of them
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DIR=${PODSTART_E2E_DIR:-/tmp/podstart-e2e}
export PATH="/usr/local/go/bin:$PATH"
mkdir -p "$DIR/bin"

# Without a git checkout, Kubernetes' version would read v0.0.0-master.
k8s_version=v1.37.2
k8s_ldflags="-X k8s.io/component-base/version.gitVersion=$k8s_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean"

build() { # name package [go build flags]
	local out=$DIR/bin/$1 pkg=$2 start=$SECONDS
	shift 2
	(cd "$here/build" && GOFLAGS=-buildvcs=false go build "$@" -o "$out.new" "$pkg")
	mv "$out.new" "$out"
	echo "cluster-build: built $out in $((SECONDS - start))s" >&2
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(kube-apiserver etcd kubectl)
total=$SECONDS
for t in "${targets[@]}"; do
	case $t in
	kube-apiserver) build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver -ldflags "$k8s_ldflags" ;;
	etcd) build etcd go.etcd.io/etcd/server/v3 ;;
	kubectl) build kubectl k8s.io/kubernetes/cmd/kubectl -ldflags "$k8s_ldflags" ;;
	*) echo "cluster-build: unknown target $t (kube-apiserver, etcd, kubectl)" >&2; exit 2 ;;
	esac
done
echo "cluster-build: done in $((SECONDS - total))s" >&2
