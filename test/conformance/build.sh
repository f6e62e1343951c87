#!/usr/bin/env bash
# build.sh - builds the conformance tier's binaries into
# $PODSTART_E2E_DIR/bin (default /tmp/podstart-conf/bin), from the Go module
# build/ (k8s.io/kubernetes v1.37.2, every staging module replaced by its
# v0.37.2 release: the recipe of test/cluster/build and test/kubelet/build,
# so the packages they share come out of one Go build cache):
#
#   conformance.test         ./e2e: the node-level specs of the v1.37.2 e2e
#                            suite (test/e2e/common/node, common/storage)
#   kube-controller-manager  k8s.io/kubernetes/cmd/kube-controller-manager
#   kube-scheduler           k8s.io/kubernetes/cmd/kube-scheduler
#   agnhost                  k8s.io/kubernetes/test/images/agnhost (static)
#   nnp                      k8s.io/kubernetes/test/images/nonewprivs, the
#                            nonewprivs image's setuid program (static)
#   ginkgo                   github.com/onsi/ginkgo/v2/ginkgo, the CLI that
#                            runs the suite on parallel nodes
#
# kube-apiserver, etcd and kubectl come from test/cluster/build.sh (run by
# run.sh into the same directory).
#
#   bash test/conformance/build.sh            all of them
#   bash test/conformance/build.sh agnhost    some of them
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DIR=${PODSTART_E2E_DIR:-/tmp/podstart-conf}
export PATH="/usr/local/go/bin:$PATH"
mkdir -p "$DIR/bin"

# Without a git checkout, Kubernetes' version would read v0.0.0-master.
k8s_ldflags="-X k8s.io/component-base/version.gitVersion=v1.37.2 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean"

build() { # name package [go build flags]
	local out=$DIR/bin/$1 pkg=$2 start=$SECONDS
	shift 2
	(cd "$here/build" && GOFLAGS=-buildvcs=false go build "$@" -o "$out.new" "$pkg")
	mv "$out.new" "$out"
	echo "conformance-build: built $out in $((SECONDS - start))s" >&2
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(conformance.test kube-controller-manager kube-scheduler agnhost nnp ginkgo)
total=$SECONDS
for t in "${targets[@]}"; do
	case $t in
	conformance.test)
		start=$SECONDS
		(cd "$here/build" && GOFLAGS=-buildvcs=false go test -c -ldflags "$k8s_ldflags" -o "$DIR/bin/conformance.test.new" ./e2e)
		mv "$DIR/bin/conformance.test.new" "$DIR/bin/conformance.test"
		echo "conformance-build: built $DIR/bin/conformance.test in $((SECONDS - start))s" >&2 ;;
	kube-controller-manager | kube-scheduler) build "$t" "k8s.io/kubernetes/cmd/$t" -ldflags "$k8s_ldflags" ;;
	agnhost) CGO_ENABLED=0 build agnhost k8s.io/kubernetes/test/images/agnhost -ldflags "$k8s_ldflags" ;;
	nnp) CGO_ENABLED=0 build nnp k8s.io/kubernetes/test/images/nonewprivs ;;
	ginkgo) build ginkgo github.com/onsi/ginkgo/v2/ginkgo ;;
	*) echo "conformance-build: unknown target $t" >&2; exit 2 ;;
	esac
done
echo "conformance-build: done in $((SECONDS - total))s" >&2
