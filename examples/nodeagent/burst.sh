#!/usr/bin/env bash
# burst.sh - the burst tier (issue 41, item 3): TestBurstAgainstKubelet,
# N pods (100) created at once on the agent and on kubelet v1.37.2, one
# after the other, on a containerd 2.x of its own (test/e2e/env.sh), with
# the creation → Running percentiles, the CRI calls per pod start, the load
# and where the agent's time goes. It takes minutes, so CI's default run
# skips the test (it runs only with PODSTART_BURST=1, which this sets).
#
#   bash examples/nodeagent/burst.sh            bring the environment up, run, bring it down
#   bash examples/nodeagent/burst.sh --keep     leave the environment up afterwards
#   bash examples/nodeagent/burst.sh --down     stop what --keep left
#
# Knobs: PODSTART_BURST_N (100; at most 110, kubelet's maxPods),
# PODSTART_BURST_ROUNDS (1; 2 runs agent, kubelet, kubelet, agent),
# PODSTART_BURST_FIRST (agent or kubelet), PODSTART_KUBELET_V (2).
# Where it runs, overridable so that two copies run side by side:
# PODSTART_BURST_DIR (/tmp/podstart-burst: the test binary, TMPDIR and each
# run's out/<time>/ with timelines, CPU profiles and kubelet's log),
# PODSTART_BURST_E2E_DIR (/tmp/podstart-burst-e2e: containerd, registries;
# its bin/ needs kubelet, kube-apiserver and etcd: test/kubelet/build.sh and
# test/cluster/build.sh with PODSTART_E2E_DIR set to it, or a copy),
# PODSTART_BURST_PORTS (5440: the registries on it and the next, pprof on
# +2, kubelet's API on +3, the agent's on +4; etcd and kube-apiserver get
# ports from the kernel, test/cluster), PODSTART_BURST_POD_CIDR
# (10.93.0.0/24), PODSTART_BURST_CGROUPS (/podstart-burst-sbs: the nodes'
# cgroup roots are its agent and kubelet). Needs root.
#
# The test binary is built without -race: the race detector slows the
# agent, not kubelet, and this measures them against each other.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export PATH="/usr/local/go/bin:$PATH"
DIR=${PODSTART_BURST_DIR:-/tmp/podstart-burst}
E2E_DIR=${PODSTART_BURST_E2E_DIR:-/tmp/podstart-burst-e2e}
PORTS=${PODSTART_BURST_PORTS:-5440}
POD_CIDR=${PODSTART_BURST_POD_CIDR:-10.93.0.0/24}
CGROUPS=${PODSTART_BURST_CGROUPS:-/podstart-burst-sbs}
say() { echo "burst-tier: $*" >&2; }

e2e_env() {
	PODSTART_E2E_DIR=$E2E_DIR PODSTART_E2E_AUTH_PORT=$PORTS PODSTART_E2E_OPEN_PORT=$((PORTS + 1)) \
		PODSTART_E2E_CONTAINERD=2 PODSTART_E2E_CNI=stub PODSTART_E2E_POD_CIDR=$POD_CIDR \
		bash "$repo/test/e2e/env.sh" "$@"
}

keep=no
case "${1:-}" in
--down) e2e_env down; exit 0 ;;
--keep) keep=yes ;;
"") ;;
*) echo "usage: $0 [--keep | --down]" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { say "must run as root"; exit 1; }
for b in kubelet kube-apiserver etcd; do
	[ -x "$E2E_DIR/bin/$b" ] || { say "$E2E_DIR/bin/$b is missing (test/kubelet/build.sh, test/cluster/build.sh with PODSTART_E2E_DIR=$E2E_DIR)"; exit 1; }
done
mkdir -p "$DIR/tmp"
e2e_env up
[ "$keep" = yes ] || trap 'e2e_env down' EXIT
(cd "$repo" && go test -c -o "$DIR/nodeagent.test" ./examples/nodeagent)
out=$DIR/out/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
say "running; the report goes to $out/test.log"
(
	# shellcheck disable=SC1091
	. "$E2E_DIR/env"
	cd "$here"
	TMPDIR=$DIR/tmp PODSTART_BURST=1 PODSTART_BURST_OUT=$out PODSTART_SIDE_BY_SIDE_CGROUPS=$CGROUPS \
		PODSTART_PPROF_ADDR=127.0.0.1:$((PORTS + 2)) PODSTART_SIDE_BY_SIDE_KUBELET_PORT=$((PORTS + 3)) \
		PODSTART_SIDE_BY_SIDE_AGENT_PORT=$((PORTS + 4)) \
		"$DIR/nodeagent.test" -test.run '^TestBurstAgainstKubelet$' -test.v -test.timeout 60m
) 2>&1 | tee "$out/test.log"
exit "${PIPESTATUS[0]}"
