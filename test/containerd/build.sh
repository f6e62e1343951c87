#!/usr/bin/env bash
# build.sh - builds containerd v2 (daemon and runc v2 shim) and the runc it
# is tested with, for env.sh's PODSTART_E2E_CONTAINERD=2, into
# $PODSTART_E2E_DIR/bin/{containerd,containerd-shim-runc-v2,runc}
# (default /tmp/podstart-e2e).
#
# build/ and runc/ are Go modules of their own, as test/kubelet/build is:
# containerd v2.4.2 (github.com/containerd/containerd/v2) and runc v1.5.2,
# the runc containerd v2.4.2 names in its script/setup/runc-version
# (Debian's runc 1.1.5 is too old for idmapped mounts, which user
# namespaces need; runc >= 1.2). runc is built with cgo and libseccomp
# (libseccomp-dev; the "seccomp" tag, as runc's Makefile does, without its
# libpathrs tag, which needs a Rust library). A binary already built from
# the same module files is kept (a stamp holds their hash), so a second
# run costs nothing; Go's build cache makes a rebuild a link.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DIR=${PODSTART_E2E_DIR:-/tmp/podstart-e2e}
bin=$DIR/bin
export PATH="/usr/local/go/bin:$PATH"
mkdir -p "$bin"
say() { echo "containerd-build: $*" >&2; }

if ! dpkg-query -W -f='${Status}' libseccomp-dev 2>/dev/null | grep -q 'install ok installed'; then
	say "installing libseccomp-dev gcc pkg-config"
	apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libseccomp-dev gcc pkg-config >/dev/null
fi

build() { # module-dir stamp-name go-build-args...
	local mod=$1 name=$2; shift 2
	local sum stamp=$bin/.$name.stamp
	sum=$(cat "$here/$mod/go.mod" "$here/$mod/go.sum" | sha256sum | cut -d' ' -f1)
	if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ] && [ -x "$bin/$name" ]; then
		return
	fi
	local start=$SECONDS
	(cd "$here/$mod" && GOFLAGS=-buildvcs=false go build -trimpath -o "$bin/$name.new" "$@")
	mv "$bin/$name.new" "$bin/$name"
	echo "$sum" >"$stamp"
	say "built $bin/$name in $((SECONDS - start))s"
}

# The version a binary reports comes from these ldflags, as containerd's
# Makefile sets them; without them "containerd --version" says "1.0.0+unknown".
cv=$(cd "$here/build" && go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)
ldv="-X github.com/containerd/containerd/v2/version.Version=$cv -X github.com/containerd/containerd/v2/version.Package=github.com/containerd/containerd/v2"
build build containerd -tags no_btrfs -ldflags "$ldv" github.com/containerd/containerd/v2/cmd/containerd
CGO_ENABLED=0 build build containerd-shim-runc-v2 -ldflags "$ldv" github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
rv=$(cd "$here/runc" && go list -m -f '{{.Version}}' github.com/opencontainers/runc)
CGO_ENABLED=1 build runc runc -tags "seccomp urfave_cli_no_docs" -ldflags "-X main.version=${rv#v}" github.com/opencontainers/runc
