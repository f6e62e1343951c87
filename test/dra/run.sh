#!/usr/bin/env bash
# run.sh - the DRA tier (see doc.go): a real control plane (etcd,
# kube-apiserver, kube-controller-manager with its resource claim
# controller, kube-scheduler, all v1.37.2 in their default configuration),
# Kubernetes' own DRA test driver (k8s.io/kubernetes/test/e2e/dra/test-driver
# v1.37.2) as a process, and one node on containerd 2.x with its CDI cache
# on the tier's own spec directory; then the Go test in this directory.
# With both nodes (the default) the same API server gets the podstart node
# first, then kubelet v1.37.2 under the same name with a root dir of its
# own, each with its own run of the driver (registered through that root
# dir's plugins_registry); TestCompare then diffs what both did.
#
#   bash test/dra/run.sh                       podstart, then kubelet, then the diff
#   bash test/dra/run.sh --nodes podstart      one node only
#   bash test/dra/run.sh --keep                leave it all up afterwards
#   bash test/dra/run.sh --down                stop what --keep left
#   bash test/dra/run.sh --run RE              only the Go tests matching RE
#
# Binaries in $PODSTART_DRA_DIR/bin (default /tmp/podstart-dra/bin): etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and
# kubelet v1.37.2 must be there (built by test/cluster/build.sh,
# test/conformance/build.sh and test/kubelet/build.sh with
# PODSTART_E2E_DIR=$PODSTART_DRA_DIR, or copied); the driver is built from
# ./build (a module of its own) once, nodeagent and the helpers each run.
#
# Knobs, so that the tier runs beside others: PODSTART_DRA_DIR,
# PODSTART_DRA_E2E_DIR (/tmp/podstart-dra-e2e), PODSTART_DRA_AUTH_PORT
# (5420), PODSTART_DRA_OPEN_PORT (5421), PODSTART_DRA_NODE_PORT (5422, the
# node API of either node), PODSTART_DRA_POD_CIDR (10.92.0.0/24),
# PODSTART_DRA_CGROUP_ROOT (/podstart-dra). The control plane takes free
# loopback ports from the kernel (test/cluster).
#
# Needs root, Debian's packages and the Go module proxy.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export PATH="/usr/local/go/bin:$PATH"
DIR=${PODSTART_DRA_DIR:-/tmp/podstart-dra}
BIN=$DIR/bin
E2E_DIR=${PODSTART_DRA_E2E_DIR:-/tmp/podstart-dra-e2e}
AUTH_PORT=${PODSTART_DRA_AUTH_PORT:-5420}
OPEN_PORT=${PODSTART_DRA_OPEN_PORT:-5421}
NODE_PORT=${PODSTART_DRA_NODE_PORT:-5422}
POD_CIDR=${PODSTART_DRA_POD_CIDR:-10.92.0.0/24}
CGROUP_ROOT=${PODSTART_DRA_CGROUP_ROOT:-/podstart-dra}
CDI_DIR=$DIR/cdi # the driver writes its specs here; containerd reads only here
NODE=dra-node
DRIVER=test-driver.cdi.k8s.io # the test driver's default name
NICE="nice -n 19"
say() { echo "dra-tier: $*" >&2; }
running() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

nodes="podstart kubelet" keep=no run_re=.
while [ $# -gt 0 ]; do
	case $1 in
	--nodes) nodes=$2; shift ;;
	--keep) keep=yes ;;
	--run) run_re=$2; shift ;;
	--down) down_only=yes ;;
	*) echo "usage: $0 [--nodes 'podstart kubelet'] [--keep] [--run RE] | --down" >&2; exit 2 ;;
	esac
	shift
done
for n in $nodes; do case $n in kubelet | podstart) ;; *) say "--nodes lists kubelet and podstart, not $n"; exit 2 ;; esac; done

e2e_env() {
	PODSTART_E2E_DIR=$E2E_DIR PODSTART_E2E_AUTH_PORT=$AUTH_PORT PODSTART_E2E_OPEN_PORT=$OPEN_PORT \
		PODSTART_E2E_CONTAINERD=2 PODSTART_E2E_CNI=bridge PODSTART_E2E_POD_CIDR=$POD_CIDR \
		PODSTART_E2E_CDI_DIR=$CDI_DIR bash "$repo/test/e2e/env.sh" "$@"
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
	kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
	for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -9 -- "-$pid" 2>/dev/null || kill -9 "$pid" 2>/dev/null || true
	rm -f "$1"
}

cri() { [ -f "$E2E_DIR/env" ] && (. "$E2E_DIR/env" && echo "$PODSTART_CRI_ENDPOINT"); }

# stop_node kind: the driver and the node, then every sandbox on the
# tier's containerd, the root dir's mounts and the cgroup root.
stop_node() {
	stop_pid "$DIR/driver.pid"
	stop_pid "$DIR/node.pid"
	[ ! -x "$BIN/csinode" ] || "$BIN/csinode" cleanup -cri "$(cri)" -root "$DIR/root-$1" -cgroup-root "$CGROUP_ROOT" || true
}

down() {
	for n in podstart kubelet; do stop_node $n; done
	stop_pid "$DIR/controlplane.pid"
	e2e_env down
}

if [ "${down_only:-}" = yes ]; then down; exit 0; fi
[ "$(id -u)" = 0 ] || { say "must run as root"; exit 1; }
t0=$SECONDS
mkdir -p "$BIN"
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl; do
	[ -x "$BIN/$b" ] || { say "missing $BIN/$b (see the header)"; exit 1; }
done
case " $nodes " in *" kubelet "*) [ -x "$BIN/kubelet" ] || { say "missing $BIN/kubelet"; exit 1; } ;; esac

# --- build
tb=$SECONDS
if [ ! -x "$BIN/dra-test-driver" ]; then
	say "building the DRA test driver"
	(cd "$here/build" && GOFLAGS=-buildvcs=false $NICE go build -o "$BIN/dra-test-driver.new" k8s.io/kubernetes/test/e2e/dra/test-driver)
	mv "$BIN/dra-test-driver.new" "$BIN/dra-test-driver"
fi
(cd "$repo" && GOFLAGS=-buildvcs=false $NICE go build -o "$BIN/controlplane" ./test/conformance/controlplane &&
	GOFLAGS=-buildvcs=false $NICE go build -o "$BIN/csinode" ./test/csi/csinode &&
	GOFLAGS=-buildvcs=false $NICE go test -c -o "$BIN/dra.test" ./test/dra)
# PODSTART_DRA_NODEAGENT: a nodeagent binary to run instead of this tree's
# (to see what another revision does).
case " $nodes " in *" podstart "*)
	if [ -n "${PODSTART_DRA_NODEAGENT:-}" ]; then cp "$PODSTART_DRA_NODEAGENT" "$BIN/nodeagent"
	else (cd "$repo" && GOFLAGS=-buildvcs=false $NICE go build -o "$BIN/nodeagent" ./examples/nodeagent); fi ;;
esac
build_time=$((SECONDS - tb))
say "built in ${build_time}s"

# --- runtime, registries, control plane
down >/dev/null 2>&1 || true
tu=$SECONDS
rm -rf "$CDI_DIR" && mkdir -p "$CDI_DIR"
e2e_env up
. "$E2E_DIR/env"
trap 'if [ $keep = no ]; then down; fi' EXIT
rm -rf "$DIR/cluster" "$DIR/report" && mkdir -p "$DIR/cluster" "$DIR/report"
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
# The test driver's example DeviceClass (test/e2e/dra/test-driver/deploy/example).
kubectl apply -f - >/dev/null <<YAML
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: example}
spec:
  selectors:
  - cel: {expression: 'device.driver == "$DRIVER"'}
YAML
up_time=$((SECONDS - tu))
say "containerd and control plane up in ${up_time}s"

ready() { [ "$(kubectl get node "$NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]; }
rc=0
for kind in $nodes; do
	tn=$SECONDS
	ROOT=$DIR/root-$kind
	"$BIN/csinode" cleanup -root "$ROOT" >/dev/null 2>&1 || true
	rm -rf "$ROOT"
	# A fresh Node object (the previous node's, and with it the driver's
	# ResourceSlices, which it owns, are gone).
	kubectl delete node "$NODE" --ignore-not-found --wait=true >/dev/null
	kubectl delete resourceslices --all --wait=true >/dev/null
	case $kind in
	kubelet)
		start node "$BIN/csinode" kubelet -bin "$BIN/kubelet" -kubeconfig "$NODE_KUBECONFIG" -root "$ROOT" \
			-node "$NODE" -cri "$PODSTART_CRI_ENDPOINT" -port "$NODE_PORT" -cgroup-root "$CGROUP_ROOT" ;;
	podstart)
		"$BIN/csinode" cgroup-root -cgroup-root "$CGROUP_ROOT"
		start node "$BIN/nodeagent" -kubeconfig "$NODE_KUBECONFIG" -node-name "$NODE" -cri "$PODSTART_CRI_ENDPOINT" \
			-root-dir "$ROOT" -cgroup-root "$CGROUP_ROOT" -node-api-address ":$NODE_PORT" -client-ca-file "$CA_FILE" ;;
	esac
	for _ in $(seq 180); do ready && break; running "$DIR/node.pid" || break; sleep 1; done
	ready || { say "$kind node $NODE not Ready in 3 minutes"; tail -30 "$DIR/node.log" >&2; exit 1; }
	cp "$DIR/node.log" "$DIR/node-$kind.log" 2>/dev/null || true
	# The driver, as its README runs it out of cluster (which makes its
	# socket directory first): -v=6 logs every gRPC request and response
	# (kubeletplugin's default GRPCVerbosity).
	mkdir -p "$ROOT/plugins/$DRIVER" "$ROOT/plugins_registry"
	start driver "$BIN/dra-test-driver" -v=6 --kubeconfig="$ADMIN_KUBECONFIG" kubelet-plugin \
		--node-name="$NODE" --plugin-registration-path="$ROOT/plugins_registry" \
		--datadir="$ROOT/plugins" --cdi-dir="$CDI_DIR"
	for _ in $(seq 120); do
		[ -n "$(kubectl get resourceslices -o "jsonpath={.items[?(@.spec.nodeName==\"$NODE\")].metadata.name}" 2>/dev/null)" ] && break
		running "$DIR/driver.pid" || break
		sleep 0.5
	done
	[ -n "$(kubectl get resourceslices -o "jsonpath={.items[?(@.spec.nodeName==\"$NODE\")].metadata.name}" 2>/dev/null)" ] ||
		{ say "no ResourceSlice for $NODE in a minute; the driver's log:"; tail -20 "$DIR/driver.log" >&2; exit 1; }
	say "$kind node and driver up in $((SECONDS - tn))s"
	tt=$SECONDS
	set +e
	(cd "$here" && PODSTART_DRA_REQUIRED=1 PODSTART_DRA_KUBECONFIG=$ADMIN_KUBECONFIG PODSTART_DRA_NODE=$NODE \
		PODSTART_DRA_NODE_KIND=$kind PODSTART_DRA_DRIVER=$DRIVER PODSTART_DRA_DRIVER_LOG=$DIR/driver.log \
		PODSTART_DRA_CDI_DIR=$CDI_DIR PODSTART_DRA_IMAGE=$PODSTART_E2E_OPEN_IMAGE PODSTART_DRA_REPORT=$DIR/report \
		$NICE "$BIN/dra.test" -test.count=1 -test.timeout 15m -test.v -test.run "$run_re") 2>&1 | tee "$DIR/test-$kind.log"
	r=${PIPESTATUS[0]}
	set -e
	[ "$r" = 0 ] || rc=$r
	cp "$DIR/driver.log" "$DIR/driver-$kind.log"
	cp "$DIR/node.log" "$DIR/node-$kind.log"
	say "$kind: test ran in $((SECONDS - tt))s (exit $r)"
	[ $keep = yes ] && [ "$kind" = "${nodes##* }" ] || stop_node "$kind"
done
if [ -f "$DIR/report/podstart.template.json" ] && [ -f "$DIR/report/kubelet.template.json" ]; then
	set +e
	(cd "$here" && PODSTART_DRA_COMPARE=1 PODSTART_DRA_REPORT=$DIR/report \
		"$BIN/dra.test" -test.count=1 -test.v -test.run '^TestCompare$') 2>&1 | tee "$DIR/test-compare.log"
	r=${PIPESTATUS[0]}
	set -e
	[ "$r" = 0 ] || rc=$r
fi
say "tier took $((SECONDS - t0))s (build ${build_time}s, up ${up_time}s; exit $rc); logs in $DIR"
exit "$rc"
