#!/usr/bin/env bash
# build.sh - builds the CSI tier's binaries into $PODSTART_E2E_DIR/bin
# (default /tmp/podstart-csi/bin), from the Go module build/ (so podstart's
# go.mod stays clean; its k8s.io staging modules are replaced by their
# v0.37.2 releases, test/cluster/build's recipe):
#
#   csi-provisioner  github.com/kubernetes-csi/external-provisioner/v6 v6.4.0
#   csi-attacher     github.com/kubernetes-csi/external-attacher/v4 v4.13.0
#   csi-resizer      github.com/kubernetes-csi/external-resizer/v2 v2.3.0
#   bindcsi          ./bindcsi, the tier's own driver bind.csi.podstart.test
#                    (directories bind-mounted; records every CSI call)
#   registrar        ./registrar, the tier's stand-in for node-driver-registrar
#                    (not on the Go module proxy): the plugins_registry handshake
#
# One at a time (2 cores). A binary already there is kept unless -f is
# given (run.sh's warm path); Go's build cache makes a forced rebuild a link.
#
#   bash test/csi/build.sh [-f] [target...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DIR=${PODSTART_E2E_DIR:-/tmp/podstart-csi}
export PATH="/usr/local/go/bin:$PATH"
mkdir -p "$DIR/bin"
force=no
if [ "${1:-}" = -f ]; then force=yes; shift; fi

build() { # name package
	local out=$DIR/bin/$1 pkg=$2 start=$SECONDS
	if [ $force = no ] && [ -x "$out" ]; then return; fi
	(cd "$here/build" && GOFLAGS=-buildvcs=false go build -o "$out.new" "$pkg")
	mv "$out.new" "$out"
	echo "csi-build: built $out in $((SECONDS - start))s" >&2
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(bindcsi registrar csi-attacher csi-provisioner csi-resizer)
total=$SECONDS
for t in "${targets[@]}"; do
	case $t in
	bindcsi | registrar) build "$t" "./$t" ;;
	csi-provisioner) build csi-provisioner github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner ;;
	csi-attacher) build csi-attacher github.com/kubernetes-csi/external-attacher/v4/cmd/csi-attacher ;;
	csi-resizer) build csi-resizer github.com/kubernetes-csi/external-resizer/v2/cmd/csi-resizer ;;
	*) echo "csi-build: unknown target $t (bindcsi, registrar, csi-provisioner, csi-attacher, csi-resizer)" >&2; exit 2 ;;
	esac
done
echo "csi-build: done in $((SECONDS - total))s" >&2
