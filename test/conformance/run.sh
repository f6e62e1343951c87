#!/usr/bin/env bash
# run.sh - the node conformance tier: a one-node cluster whose only node is
# examples/nodeagent on containerd 2.x, and the node-level specs of the
# Kubernetes v1.37.2 e2e suite run against it. See README.md.
#
#   bash test/conformance/run.sh             the specs in scope
#   bash test/conformance/run.sh --slow      and the [Slow] ones
#   bash test/conformance/run.sh --subset    only the specs in ci-subset.txt
#   bash test/conformance/run.sh --focus RE  only the specs in scope matching RE
#   bash test/conformance/run.sh --procs N   N parallel ginkgo processes (8)
#   bash test/conformance/run.sh --no-build  use the binaries already in $DIR/bin
#   bash test/conformance/run.sh --keep      leave the cluster up afterwards
#                                            (bash test/conformance/run.sh --down)
#
# Needs root, Debian's packages and the Go module proxy; nothing else. State,
# logs and the reports (report/: report.json, junit.xml, summary.md) go to
# $PODSTART_CONF_DIR (/tmp/podstart-conf); its registries listen on
# PODSTART_CONF_AUTH_PORT/PODSTART_CONF_OPEN_PORT (5250/5251), the node API on
# PODSTART_CONF_NODE_API_PORT (10260), so it runs beside the other tiers
# (their PODSTART_E2E_* settings are not read: env.sh gets these).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export PATH="/usr/local/go/bin:$PATH"
export PODSTART_E2E_DIR=${PODSTART_CONF_DIR:-/tmp/podstart-conf}
export PODSTART_E2E_AUTH_PORT=${PODSTART_CONF_AUTH_PORT:-5250}
export PODSTART_E2E_OPEN_PORT=${PODSTART_CONF_OPEN_PORT:-5251}
export PODSTART_E2E_CONTAINERD=2 PODSTART_E2E_CNI=bridge
export PODSTART_E2E_POD_CIDR=${PODSTART_CONF_POD_CIDR:-10.88.0.0/24}
DIR=$PODSTART_E2E_DIR
BIN=$DIR/bin
NODE=podstart-conf
NODE_API_PORT=${PODSTART_CONF_NODE_API_PORT:-10260}
CGROUP_ROOT=/podstart-conformance
say() { echo "conformance: $*" >&2; }
running() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# diagnose prints what a failed run needs first: the node's conditions and
# taints, the control plane's and the agent's liveness and last log lines,
# the disk and memory (a node under pressure is tainted).
diagnose() {
	{
		echo "--- diagnosis"
		"$BIN/kubectl" get node "$NODE" -o 'jsonpath={range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}taints: {.spec.taints}{"\n"}' 2>&1 || true
		for p in controlplane nodeagent; do
			if running "$DIR/$p.pid"; then echo "$p: running"; else echo "$p: NOT running"; fi
		done
		pgrep -a -f 'kube-(apiserver|controller-manager|scheduler)' | grep -- "$DIR" | cut -c1-120 || echo "no control plane process under $DIR"
		df -h / "$DIR" | uniq
		free -m
		echo "--- nodeagent.log (last 20 lines)"; tail -20 "$DIR/nodeagent.log" 2>/dev/null
		echo "--- controlplane.log (last 10 lines)"; tail -10 "$DIR/controlplane.log" 2>/dev/null
	} >&2
}

slow=no subset=no focus= procs=8 keep=no build=yes
while [ $# -gt 0 ]; do
	case $1 in
	--slow) slow=yes ;;
	--subset) subset=yes ;;
	--focus) focus=$2; shift ;;
	--procs) procs=$2; shift ;;
	--keep) keep=yes ;;
	--no-build) build=no ;;
	--down) down_only=yes ;;
	*) echo "usage: $0 [--slow] [--subset] [--focus RE] [--procs N] [--no-build] [--keep] | --down" >&2; exit 2 ;;
	esac
	shift
done

# stop_pid pidfile: SIGTERM, then SIGKILL after 20 s.
stop_pid() {
	running "$1" || { rm -f "$1"; return 0; }
	local pid
	pid=$(cat "$1")
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$1"
}

# The agent's cgroup root, its own so no other node agent on this host
# sweeps its pods (or it theirs): <hierarchy>/podstart-conformance.
make_cgroup_root() {
	local name=${CGROUP_ROOT#/}
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		mkdir -p "/sys/fs/cgroup/$name"
		return
	fi
	local h
	for h in /sys/fs/cgroup/*/; do
		h=${h%/}
		[ -f "$h/cgroup.procs" ] || continue
		mkdir -p "$h/$name"
		if [ -f "$h/cpuset.cpus" ]; then
			[ -n "$(cat "$h/$name/cpuset.cpus")" ] || cat "$h/cpuset.cpus" >"$h/$name/cpuset.cpus"
			[ -n "$(cat "$h/$name/cpuset.mems")" ] || cat "$h/cpuset.mems" >"$h/$name/cpuset.mems"
		fi
	done
}

remove_cgroup_root() {
	local name=${CGROUP_ROOT#/} h
	for h in /sys/fs/cgroup /sys/fs/cgroup/*/ /sys/fs/cgroup/unified; do
		h=${h%/}
		[ -d "$h/$name" ] || continue
		find "$h/$name" -depth -type d -exec rmdir {} \; 2>/dev/null || true
	done
}

down() {
	stop_pid "$DIR/nodeagent.pid"
	stop_pid "$DIR/controlplane.pid"
	bash "$repo/test/e2e/env.sh" down
	remove_cgroup_root
}

if [ "${down_only:-}" = yes ]; then down; exit 0; fi
[ "$(id -u)" = 0 ] || { say "must run as root"; exit 1; }
t0=$SECONDS
mkdir -p "$BIN"

# --- build (each cached after the first; a warm run is links)
tb=$SECONDS
if [ $build = yes ]; then
	bash "$repo/test/cluster/build.sh"
	bash "$here/build.sh"
fi
(cd "$repo" && GOFLAGS=-buildvcs=false go build -o "$BIN/nodeagent" ./examples/nodeagent &&
	GOFLAGS=-buildvcs=false go build -o "$BIN/controlplane" ./test/conformance/controlplane &&
	GOFLAGS=-buildvcs=false go build -o "$BIN/summary" ./test/conformance/summary)
build_time=$((SECONDS - tb))
say "built in ${build_time}s"

# --- runtime, registries, images
down >/dev/null 2>&1 || true
bash "$repo/test/e2e/env.sh" up
. "$DIR/env"
OPEN_REG=127.0.0.1:$PODSTART_E2E_OPEN_PORT
bash "$here/images.sh" "$OPEN_REG"
# What an earlier run pulled would be used as it is (IfNotPresent): drop it,
# all but the sandbox image, so this run gets the images just pushed.
sock=${PODSTART_CRI_ENDPOINT#unix://}
for ref in $(ctr --address "$sock" -n k8s.io images ls -q 2>/dev/null | grep "^$OPEN_REG/" | grep -v "^$OPEN_REG/pause:3.9$"); do
	ctr --address "$sock" -n k8s.io images rm "$ref" >/dev/null 2>&1 || true
done

# --- control plane
trap 'if [ $keep = no ]; then down; fi' EXIT
rm -rf "$DIR/cluster" && mkdir -p "$DIR/cluster"
setsid "$BIN/controlplane" -dir "$DIR/cluster" -node-name "$NODE" >"$DIR/controlplane.log" 2>&1 </dev/null &
echo $! >"$DIR/controlplane.pid"
for _ in $(seq 1800); do
	[ -f "$DIR/cluster/ready" ] && break
	running "$DIR/controlplane.pid" || { tail -30 "$DIR/controlplane.log" >&2; exit 1; }
	sleep 0.1
done
[ -f "$DIR/cluster/ready" ] || { say "control plane not ready in 3 minutes"; tail -30 "$DIR/controlplane.log" >&2; exit 1; }
. "$DIR/cluster/ready"
export KUBECONFIG=$ADMIN_KUBECONFIG

# --- the node
make_cgroup_root
rm -rf "$DIR/agent"
setsid "$BIN/nodeagent" -kubeconfig "$NODE_KUBECONFIG" -node-name "$NODE" -cri "$PODSTART_CRI_ENDPOINT" \
	-root-dir "$DIR/agent" -cgroup-root "$CGROUP_ROOT" -node-api-address ":$NODE_API_PORT" -client-ca-file "$CA_FILE" \
	>"$DIR/nodeagent.log" 2>&1 </dev/null &
echo $! >"$DIR/nodeagent.pid"
for _ in $(seq 120); do
	[ "$("$BIN/kubectl" get node "$NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ] && break
	running "$DIR/nodeagent.pid" || break
	sleep 1
done
if [ "$("$BIN/kubectl" get node "$NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" != True ]; then
	say "node $NODE not Ready in 2 minutes"; diagnose; exit 1
fi
# The suite's first step waits up to 30 minutes for every node to be
# schedulable (Ready, no NoSchedule or NoExecute taint: the node lifecycle
# controller taints a node under pressure or not ready): wait for that
# here, a minute at most, and say why not instead.
taints() { "$BIN/kubectl" get node "$NODE" -o 'jsonpath={range .spec.taints[*]}{.key}:{.effect} {end}' 2>/dev/null; }
for _ in $(seq 60); do
	[ -z "$(taints)" ] && break
	sleep 1
done
if [ -n "$(taints)" ]; then
	say "node $NODE still tainted after a minute: $(taints)"
	diagnose
	exit 1
fi
say "cluster and node up in $((SECONDS - t0))s (build ${build_time}s)"

# --- the suite
skip='\[Serial\]|\[Disruptive\]|\[Flaky\]'
[ $slow = yes ] || skip+='|\[Slow\]'
while IFS= read -r line; do
	case $line in '' | '#'*) continue ;; esac
	skip+="|${line% | *}"
done <"$here/skips.txt"
focus_re='\[NodeConformance\]|\[Conformance\]'
if [ $subset = yes ]; then
	sub=
	while IFS= read -r line; do
		case $line in '' | '#'*) continue ;; esac
		sub+="${sub:+|}$line"
	done <"$here/ci-subset.txt"
	focus_re=$sub # full names, tags included
fi
[ -z "$focus" ] || focus_re="($focus_re).*($focus)|($focus).*($focus_re)"
export KUBE_TEST_REPO_LIST=$DIR/repo-list.yaml
report=$DIR/report
rm -rf "$report" && mkdir -p "$report"
ts=$SECONDS
set +e
"$BIN/ginkgo" --procs="$procs" --timeout=3h --no-color --silence-skips \
	--focus-file='test/e2e/common/(node|storage)/' --focus="$focus_re" --skip="$skip" \
	--output-dir="$report" --json-report=report.json --junit-report=junit.xml \
	"$BIN/conformance.test" -- \
	--kubeconfig="$ADMIN_KUBECONFIG" --provider=skeleton --node-os-distro=debian \
	--report-dir="$report" --container-runtime-endpoint="$PODSTART_CRI_ENDPOINT" \
	>"$report/ginkgo.log" 2>&1
rc=$?
set -e
suite_time=$((SECONDS - ts))
say "suite ran in ${suite_time}s (ginkgo exit $rc; log $report/ginkgo.log)"
[ $rc = 0 ] || diagnose
sargs=(-report "$report/report.json" -skips "$here/skips.txt" -markdown "$report/summary.md")
[ $slow = no ] || sargs+=(-slow)
if [ $subset = yes ]; then sargs+=(-selected "--subset, ci-subset.txt"); fi
if [ -n "$focus" ]; then sargs+=(-selected "--focus $focus"); fi
set +e
"$BIN/summary" "${sargs[@]}"
src=$?
set -e
say "tier took $((SECONDS - t0))s (build ${build_time}s, suite ${suite_time}s); reports in $report"
exit $src
