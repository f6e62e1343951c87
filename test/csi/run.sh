#!/usr/bin/env bash
# run.sh - the CSI tier: a real control plane (etcd, kube-apiserver,
# kube-controller-manager with its attach/detach, PV and ephemeral volume
# controllers, kube-scheduler, all v1.37.2), a CSI stack as processes
# (the tier's bind-mount driver bindcsi, external-provisioner v6.4.0,
# external-attacher v4.13.0, external-resizer v2.3.0, the tier's
# registrar), and one node on
# containerd 2.x, then the Go test in this directory. See README.md.
#
#   bash test/csi/run.sh                     node: the real kubelet v1.37.2
#   bash test/csi/run.sh --node podstart     node: examples/nodeagent
#   bash test/csi/run.sh --rebuild           rebuild every binary (else kept)
#   bash test/csi/run.sh --no-build          only the two small programs of the main module
#   bash test/csi/run.sh --keep              leave it all up afterwards
#   bash test/csi/run.sh --down              stop what --keep left
#   bash test/csi/run.sh --run RE            only the Go tests matching RE
#
# Needs root, Debian's packages and the Go module proxy. State and logs in
# $PODSTART_CSI_DIR (/tmp/podstart-csi), binaries in its bin/; containerd,
# (PODSTART_CSI_E2E_DIR, _AUTH_PORT, _OPEN_PORT, _POD_CIDR, _NODE_PORT and
# _CGROUP_ROOT override the defaults below, for a second copy)
# the registries (5350/5351) and the bridge network (10.89.0.0/24) in
# /tmp/podstart-csi-e2e (test/e2e/env.sh); the node's cgroup root is
# /podstart-csi, so it runs beside the other tiers.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export PATH="/usr/local/go/bin:$PATH"
DIR=${PODSTART_CSI_DIR:-/tmp/podstart-csi}
BIN=$DIR/bin
# Overridable so that two copies of the tier can run side by side.
E2E_DIR=${PODSTART_CSI_E2E_DIR:-/tmp/podstart-csi-e2e}
AUTH_PORT=${PODSTART_CSI_AUTH_PORT:-5350}
OPEN_PORT=${PODSTART_CSI_OPEN_PORT:-5351}
POD_CIDR=${PODSTART_CSI_POD_CIDR:-10.89.0.0/24}
NODE=csi-node
NODE_PORT=${PODSTART_CSI_NODE_PORT:-10355}
CGROUP_ROOT=${PODSTART_CSI_CGROUP_ROOT:-/podstart-csi}
DRIVER=bind.csi.podstart.test
ROOT=$DIR/node                               # the node's root dir
NODE_SOCK=$ROOT/plugins/$DRIVER/csi.sock     # where the node dials the driver
CTRL_SOCK=$DIR/csi/controller.sock           # where the sidecars dial it
say() { echo "csi-tier: $*" >&2; }
running() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

node=kubelet keep=no rebuild=no build=yes run_re=.
while [ $# -gt 0 ]; do
	case $1 in
	--node) node=$2; shift ;;
	--keep) keep=yes ;;
	--rebuild) rebuild=yes ;;
	--no-build) build=no ;;
	--run) run_re=$2; shift ;;
	--down) down_only=yes ;;
	*) echo "usage: $0 [--node kubelet|podstart] [--rebuild|--no-build] [--keep] [--run RE] | --down" >&2; exit 2 ;;
	esac
	shift
done
case $node in kubelet | podstart) ;; *) say "--node is kubelet or podstart, not $node"; exit 2 ;; esac

e2e_env() {
	PODSTART_E2E_DIR=$E2E_DIR PODSTART_E2E_AUTH_PORT=$AUTH_PORT PODSTART_E2E_OPEN_PORT=$OPEN_PORT \
		PODSTART_E2E_CONTAINERD=2 PODSTART_E2E_CNI=bridge PODSTART_E2E_POD_CIDR=$POD_CIDR \
		bash "$repo/test/e2e/env.sh" "$@"
}

# start name command...: a process of its own group, logging to $DIR/name.log.
start() {
	local name=$1; shift
	setsid "$@" >"$DIR/$name.log" 2>&1 </dev/null &
	echo $! >"$DIR/$name.pid"
}

# stop_pid pidfile: SIGTERM to its process group, then SIGKILL after 20 s.
stop_pid() {
	running "$1" || { rm -f "$1"; return 0; }
	local pid
	pid=$(cat "$1")
	kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true # its group: setsid made it the leader
	for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -9 -- "-$pid" 2>/dev/null || kill -9 "$pid" 2>/dev/null || true
	rm -f "$1"
}

down() {
	stop_pid "$DIR/node.pid"
	for p in csi-provisioner csi-attacher csi-resizer registrar bindcsi; do stop_pid "$DIR/$p.pid"; done
	stop_pid "$DIR/controlplane.pid"
	local cri=
	[ -f "$E2E_DIR/env" ] && cri=$(. "$E2E_DIR/env" && echo "$PODSTART_CRI_ENDPOINT")
	[ ! -x "$BIN/csinode" ] || "$BIN/csinode" cleanup -cri "$cri" -root "$ROOT" -cgroup-root "$CGROUP_ROOT" -data "$DIR/data" || true
	e2e_env down
}

if [ "${down_only:-}" = yes ]; then down; exit 0; fi
[ "$(id -u)" = 0 ] || { say "must run as root"; exit 1; }
t0=$SECONDS
mkdir -p "$BIN"

# --- build: each binary once (kept after; --rebuild relinks them all)
tb=$SECONDS
need() { [ $build = yes ] && { [ $rebuild = yes ] || [ ! -x "$BIN/$1" ]; }; }
export PODSTART_E2E_DIR=$DIR # where the build scripts put their binaries
for b in kube-apiserver etcd kubectl; do if need $b; then bash "$repo/test/cluster/build.sh" $b; fi; done
for b in kube-controller-manager kube-scheduler; do if need $b; then bash "$repo/test/conformance/build.sh" $b; fi; done
if [ $node = kubelet ] && need kubelet; then bash "$repo/test/kubelet/build.sh"; fi
if [ $rebuild = yes ]; then bash "$here/build.sh" -f; elif [ $build = yes ]; then bash "$here/build.sh"; fi
unset PODSTART_E2E_DIR
(cd "$repo" && GOFLAGS=-buildvcs=false go build -o "$BIN/controlplane" ./test/conformance/controlplane &&
	GOFLAGS=-buildvcs=false go build -o "$BIN/csinode" ./test/csi/csinode)
if [ $node = podstart ]; then (cd "$repo" && GOFLAGS=-buildvcs=false go build -o "$BIN/nodeagent" ./examples/nodeagent); fi
build_time=$((SECONDS - tb))
say "built in ${build_time}s"

# --- runtime and registries
down >/dev/null 2>&1 || true
tu=$SECONDS
e2e_env up
. "$E2E_DIR/env"
trap 'if [ $keep = no ]; then down; fi' EXIT

# --- control plane (test/conformance/controlplane: test/cluster + kcm + scheduler)
rm -rf "$DIR/cluster" "$DIR/csi" "$DIR/data" && mkdir -p "$DIR/cluster" "$DIR/csi" "$DIR/data"
"$BIN/csinode" cleanup -root "$ROOT" >/dev/null 2>&1 || true
rm -rf "$ROOT"
start controlplane env PODSTART_E2E_DIR="$DIR" "$BIN/controlplane" -dir "$DIR/cluster" -node-name "$NODE"
for _ in $(seq 1800); do
	[ -f "$DIR/cluster/ready" ] && break
	running "$DIR/controlplane.pid" || { tail -30 "$DIR/controlplane.log" >&2; exit 1; }
	sleep 0.1
done
[ -f "$DIR/cluster/ready" ] || { say "control plane not ready in 3 minutes"; tail -30 "$DIR/controlplane.log" >&2; exit 1; }
. "$DIR/cluster/ready"
export KUBECONFIG=$ADMIN_KUBECONFIG
kubectl() { "$BIN/kubectl" "$@"; }

# --- the CSI stack, as processes
CALLS=$DIR/csi/calls.jsonl
start bindcsi "$BIN/bindcsi" -controller-endpoint "$CTRL_SOCK" -node-endpoint "$NODE_SOCK" \
	-data "$DIR/data" -node-id "$NODE" -calls "$CALLS"
for _ in $(seq 100); do [ -S "$NODE_SOCK" ] && [ -S "$CTRL_SOCK" ] && break; sleep 0.1; done
[ -S "$NODE_SOCK" ] || { say "bindcsi did not listen"; cat "$DIR/bindcsi.log" >&2; exit 1; }
start csi-provisioner "$BIN/csi-provisioner" --csi-address="$CTRL_SOCK" --kubeconfig="$ADMIN_KUBECONFIG" \
	--leader-election=false --extra-create-metadata --v=3
start csi-attacher "$BIN/csi-attacher" --csi-address="$CTRL_SOCK" --kubeconfig="$ADMIN_KUBECONFIG" \
	--leader-election=false --v=3
[ -x "$BIN/csi-resizer" ] || { say "$BIN/csi-resizer missing: bash test/csi/build.sh csi-resizer"; exit 1; }
start csi-resizer "$BIN/csi-resizer" --csi-address="$CTRL_SOCK" --kubeconfig="$ADMIN_KUBECONFIG" \
	--leader-election=false --v=3
kubectl apply -f - >/dev/null <<YAML
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: $DRIVER}
spec:
  attachRequired: true
  podInfoOnMount: true
  volumeLifecycleModes: [Persistent, Ephemeral]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: csi-bind
provisioner: $DRIVER
reclaimPolicy: Delete
volumeBindingMode: WaitForFirstConsumer
allowVolumeExpansion: true
YAML

# --- the node
case $node in
kubelet)
	NODE_KUBECONFIG=$DIR/cluster/node.kubeconfig
	start node "$BIN/csinode" kubelet -bin "$BIN/kubelet" -kubeconfig "$NODE_KUBECONFIG" -root "$ROOT" \
		-node "$NODE" -cri "$PODSTART_CRI_ENDPOINT" -port "$NODE_PORT" -cgroup-root "$CGROUP_ROOT" ;;
podstart)
	"$BIN/csinode" cgroup-root -cgroup-root "$CGROUP_ROOT"
	start node "$BIN/nodeagent" -kubeconfig "$DIR/cluster/node.kubeconfig" -node-name "$NODE" -cri "$PODSTART_CRI_ENDPOINT" \
		-root-dir "$ROOT" -cgroup-root "$CGROUP_ROOT" -node-api-address ":$NODE_PORT" -client-ca-file "$CA_FILE" ;;
esac
for _ in $(seq 180); do
	[ "$(kubectl get node "$NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ] && break
	running "$DIR/node.pid" || break
	sleep 1
done
if [ "$(kubectl get node "$NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" != True ]; then
	say "node $NODE not Ready in 3 minutes"; tail -30 "$DIR/node.log" >&2; exit 1
fi
# The registrar, once the Node exists (a DaemonSet's pod would start no
# sooner; registered before, kubelet cannot own its CSINode by the Node's
# UID and refuses the plugin), restarted when it exits as a pod's
# container would be (it exits when the node refuses the plugin).
start registrar bash -c 'while :; do "$0" "$@"; echo "registrar exited ($?), restarting in 2s"; sleep 2; done' \
	"$BIN/registrar" -csi-address "$NODE_SOCK" -kubelet-registration-path "$NODE_SOCK" \
	-plugin-registration-dir "$ROOT/plugins_registry"
for _ in $(seq 60); do
	[ -n "$(kubectl get csinode "$NODE" -o "jsonpath={.spec.drivers[?(@.name==\"$DRIVER\")].nodeID}" 2>/dev/null)" ] && break
	sleep 1
done
# Not fatal: the tests then fail saying what is missing (TestCSINode).
[ -n "$(kubectl get csinode "$NODE" -o "jsonpath={.spec.drivers[?(@.name==\"$DRIVER\")].nodeID}" 2>/dev/null)" ] ||
	{ say "$DRIVER not registered with $NODE in a minute; the registrar's log:"; tail -5 "$DIR/registrar.log" >&2; }
up_time=$((SECONDS - tu))
say "cluster, CSI stack and $node node up in ${up_time}s"

# --- the test
cat >"$DIR/env" <<ENV
export PODSTART_CSI_KUBECONFIG=$ADMIN_KUBECONFIG
export PODSTART_CSI_NODE=$NODE
export PODSTART_CSI_NODE_KIND=$node
export PODSTART_CSI_ROOT=$ROOT
export PODSTART_CSI_CALLS=$CALLS
export PODSTART_CSI_DATA=$DIR/data
export PODSTART_CSI_DRIVER=$DRIVER
export PODSTART_CSI_STORAGE_CLASS=csi-bind
export PODSTART_CSI_IMAGE=$PODSTART_E2E_OPEN_IMAGE
export PODSTART_CSI_REPORT=$DIR/report
export PODSTART_CSI_NODE_PORT=$NODE_PORT
export PODSTART_CSI_DIR=$DIR
ENV
. "$DIR/env"
tt=$SECONDS
set +e
(cd "$repo" && PODSTART_CSI_REQUIRED=1 go test -count=1 -timeout 20m -v -run "$run_re" ./test/csi/) 2>&1 | tee "$DIR/test.log"
rc=${PIPESTATUS[0]}
set -e
say "test ran in $((SECONDS - tt))s (exit $rc); tier took $((SECONDS - t0))s (build ${build_time}s, up ${up_time}s); logs in $DIR"
exit "$rc"
