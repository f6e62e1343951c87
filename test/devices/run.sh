#!/usr/bin/env bash
# run.sh - the device plugin tier (see doc.go): containerd 2 from
# test/e2e/env.sh in $PODSTART_DEVICES_DIR/e2e (/tmp/podstart-dev/e2e,
# registries on 5360/5361), the sample device plugin built from the
# kubernetes module (through test/diff's module, which requires it), then
# the Go test with PODSTART_DEVICES_REQUIRED=1.
#
#   bash test/devices/run.sh          bring up what is missing, build, test
#   bash test/devices/run.sh --down   stop the environment it started
#
# Needs root (unshare, mount), Debian's packages and the Go module proxy.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export PATH="/usr/local/go/bin:$PATH"
DIR=${PODSTART_DEVICES_DIR:-/tmp/podstart-dev}
E2E_DIR=$DIR/e2e
e2e_env() {
	PODSTART_E2E_DIR=$E2E_DIR PODSTART_E2E_AUTH_PORT=${PODSTART_DEVICES_AUTH_PORT:-5360} \
		PODSTART_E2E_OPEN_PORT=${PODSTART_DEVICES_OPEN_PORT:-5361} PODSTART_E2E_CONTAINERD=2 \
		bash "$repo/test/e2e/env.sh" "$@"
}
if [ "${1:-}" = --down ]; then
	e2e_env down
	exit 0
fi
mkdir -p "$DIR/bin"
e2e_env up
plugin=$DIR/bin/sample-device-plugin
if [ ! -x "$plugin" ]; then
	echo "devices-tier: building the sample device plugin" >&2
	(cd "$repo/test/diff" && GOFLAGS=-buildvcs=false go build -trimpath -o "$plugin" k8s.io/kubernetes/test/images/sample-device-plugin)
fi
set -a
# shellcheck disable=SC1091
. "$E2E_DIR/env"
set +a
cd "$repo"
PODSTART_DEVICES_REQUIRED=1 PODSTART_DEVICES_PLUGIN=$plugin PODSTART_DEVICES_DIR=$DIR \
	go test -count=1 -v ./test/devices/ "${@}"
