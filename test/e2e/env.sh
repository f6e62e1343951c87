#!/usr/bin/env bash
# env.sh - the real-runtime environment for podstart's end-to-end tests:
# containerd 1.6 (Debian) with its CRI plugin, runc, a registry that needs
# basic auth and an open one for the sandbox image, all on loopback and
# unix sockets under one state directory. With PODSTART_E2E_CONTAINERD=2,
# containerd v2 and runc built from their Go modules instead
# (test/containerd/build.sh, cached after the first build), with the same
# configuration in containerd 2's config version 3.
#
#   bash test/e2e/env.sh up            start what is not running; write $DIR/env
#   bash test/e2e/env.sh down          stop, by PID, only what "up" started
#   bash test/e2e/env.sh down --purge  also delete the state directory
#
# Needs root, Debian's packages and the Go module proxy; nothing else.
# It also installs dbus-daemon, for the cgroups package's systemd wire test
# (a private bus; no systemd runs).
# Knobs: PODSTART_E2E_DIR (/tmp/podstart-e2e), PODSTART_E2E_AUTH_PORT (5050),
# PODSTART_E2E_OPEN_PORT (5051), PODSTART_E2E_CONTAINERD (1.6, or 2),
# PODSTART_E2E_CNI (stub, or bridge: a real pod network, see write_cni) and
# PODSTART_E2E_POD_CIDR (the bridge network's subnet, 10.88.0.0/24) and,
# for containerd 2, PODSTART_E2E_CDI_DIR (the one directory its CDI cache
# reads specs from; default containerd's /etc/cdi and /var/run/cdi). Two
# environments run side by side with different DIRs and ports; $DIR/env
# exports all four, so a test that calls env.sh acts on its own one.
set -euo pipefail

DIR=${PODSTART_E2E_DIR:-/tmp/podstart-e2e}
AUTH_PORT=${PODSTART_E2E_AUTH_PORT:-5050}
OPEN_PORT=${PODSTART_E2E_OPEN_PORT:-5051}
REG_USER=podstart
REG_PASS=e2e-secret
AUTH_REG=127.0.0.1:$AUTH_PORT
OPEN_REG=127.0.0.1:$OPEN_PORT
CD=$DIR/containerd
SOCK=$CD/containerd.sock
CRANE=$DIR/bin/crane
CONTAINERD_MAJOR=${PODSTART_E2E_CONTAINERD:-1.6}
CNI=${PODSTART_E2E_CNI:-stub}
POD_CIDR=${PODSTART_E2E_POD_CIDR:-10.88.0.0/24}
CDI_DIR=${PODSTART_E2E_CDI_DIR:-}
case "$CNI" in
stub | bridge) ;;
*) echo "e2e-env: PODSTART_E2E_CNI is stub or bridge, not $CNI" >&2; exit 2 ;;
esac
case "$CONTAINERD_MAJOR" in
1.6) CONTAINERD=containerd RUNC=runc ;;
2) CONTAINERD=$DIR/bin/containerd RUNC=$DIR/bin/runc ;;
*) echo "e2e-env: PODSTART_E2E_CONTAINERD is 1.6 or 2, not $CONTAINERD_MAJOR" >&2; exit 2 ;;
esac
HERE=$(cd "$(dirname "$0")" && pwd)
export PATH="/usr/local/go/bin:$PATH"

say() { echo "e2e-env: $*" >&2; }
running() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
retry() { # retry <tenths of a second> <command...>
	local left=$1; shift
	until "$@" >/dev/null 2>&1; do
		left=$((left - 1)); [ "$left" -gt 0 ] || { "$@"; return 1; }
		sleep 0.1
	done
}

install_packages() {
	local missing=()
	local want=(containerd runc docker-registry busybox-static apache2-utils curl iproute2 util-linux dbus-daemon)
	[ "$CNI" = bridge ] && want+=(containernetworking-plugins)
	for p in "${want[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return
	say "installing ${missing[*]}"
	apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$DIR/apt.log" 2>&1 ||
		{ tail -20 "$DIR/apt.log" >&2; exit 1; }
}

build_images() {
	if [ ! -x "$CRANE" ]; then
		say "building crane"
		GOBIN=$DIR/bin GOFLAGS=-buildvcs=false go install github.com/google/go-containerregistry/cmd/crane@v0.22.1
	fi
	local b=$DIR/build
	if [ ! -f "$b/pause.tar" ]; then
		# The sandbox's pause process: wait for a stop signal, reap orphans.
		mkdir -p "$b/pause/root"
		cat >"$b/pause/main.go" <<'GO'
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 4)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range c {
		if sig != syscall.SIGCHLD {
			return
		}
		for {
			if pid, _ := syscall.Wait4(-1, nil, syscall.WNOHANG, nil); pid <= 0 {
				break
			}
		}
	}
}
GO
		printf 'module pause\n\ngo 1.21\n' >"$b/pause/go.mod"
		(cd "$b/pause" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags '-s -w' -o root/pause .)
		tar -C "$b/pause/root" --owner=0 --group=0 --numeric-owner --sort=name --mtime=@0 -cf "$b/pause.tar" .
	fi
	if [ ! -f "$b/busybox.tar" ]; then
		local r=$b/busybox/root
		rm -rf "$r" && mkdir -p "$r"/bin "$r"/etc "$r"/tmp "$r"/proc "$r"/sys "$r"/dev "$r"/root
		cp /bin/busybox "$r/bin/"
		for applet in $("$r/bin/busybox" --list); do [ "$applet" = busybox ] || ln -s busybox "$r/bin/$applet"; done
		echo 'root:x:0:0:root:/root:/bin/sh' >"$r/etc/passwd"
		echo 'root:x:0:' >"$r/etc/group"
		chmod 1777 "$r/tmp"
		tar -C "$r" --owner=0 --group=0 --numeric-owner --sort=name --mtime=@0 -cf "$b/busybox.tar" .
	fi
}

start_registry() { # name port with-auth
	local d=$DIR/$1
	mkdir -p "$d/data"
	running "$d/pid" && return
	{
		echo 'version: 0.1'
		echo 'log: {level: warn}'
		echo "storage: {filesystem: {rootdirectory: $d/data}, delete: {enabled: true}}"
		echo "http: {addr: '127.0.0.1:$2', secret: podstart-e2e}"
		[ "$3" = yes ] && echo "auth: {htpasswd: {realm: podstart-e2e, path: $d/htpasswd}}"
	} >"$d/config.yml"
	[ "$3" = yes ] && htpasswd -Bbn "$REG_USER" "$REG_PASS" >"$d/htpasswd"
	if (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null; then
		say "127.0.0.1:$2 is taken by another process; set PODSTART_E2E_*_PORT"; exit 1
	fi
	setsid docker-registry serve "$d/config.yml" >"$d/log" 2>&1 </dev/null &
	echo $! >"$d/pid"
}

push_images() { # registry
	export DOCKER_CONFIG=$DIR/docker
	"$CRANE" auth login "$AUTH_REG" -u "$REG_USER" -p "$REG_PASS" >/dev/null 2>&1
	if ! "$CRANE" digest "$1/busybox:1.35" >/dev/null 2>&1; then
		"$CRANE" append --oci-empty-base -f "$DIR/build/busybox.tar" -t "$1/busybox:1.35" >/dev/null 2>>"$DIR/crane.log"
		"$CRANE" mutate "$1/busybox:1.35" --set-platform linux/amd64 --cmd /bin/sh \
			--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin -t "$1/busybox:1.35" >/dev/null 2>>"$DIR/crane.log"
	fi
	if ! "$CRANE" digest "$1/pause:3.9" >/dev/null 2>&1; then
		"$CRANE" append --oci-empty-base -f "$DIR/build/pause.tar" -t "$1/pause:3.9" >/dev/null 2>>"$DIR/crane.log"
		"$CRANE" mutate "$1/pause:3.9" --set-platform linux/amd64 --entrypoint /pause -t "$1/pause:3.9" >/dev/null 2>>"$DIR/crane.log"
	fi
}

# A stand-in CNI: the pod's network namespace gets lo and an eth0 whose veth
# peer stays in the same namespace, with 192.0.2.2/24 (TEST-NET-1). Nothing
# is created on the host's side.
write_cni() {
	mkdir -p "$CD/cni/bin" "$CD/cni/net.d"
	# Never write through a link an earlier PODSTART_E2E_CNI=bridge made.
	rm -f "$CD/cni/bin/podstart-stub" "$CD/cni/bin/loopback" "$CD/cni/bin/bridge" "$CD/cni/bin/host-local"
	cat >"$CD/cni/bin/podstart-stub" <<'SH'
#!/bin/sh
set -eu
version=$(tr -d '\n' | sed -n 's/.*"cniVersion" *: *"\([^"]*\)".*/\1/p')
version=${version:-1.0.0}
case "${CNI_COMMAND:-}" in
ADD)
	nsenter --net="$CNI_NETNS" sh -ec "ip link set lo up
		ip link add $CNI_IFNAME type veth peer name ${CNI_IFNAME}-peer
		ip addr add 192.0.2.2/24 dev $CNI_IFNAME
		ip link set ${CNI_IFNAME}-peer up
		ip link set $CNI_IFNAME up" >&2
	echo "{\"cniVersion\":\"$version\",\"interfaces\":[{\"name\":\"$CNI_IFNAME\",\"sandbox\":\"$CNI_NETNS\"}],\"ips\":[{\"address\":\"192.0.2.2/24\",\"interface\":0}]}" ;;
DEL)
	[ -n "${CNI_NETNS:-}" ] && [ -e "$CNI_NETNS" ] && nsenter --net="$CNI_NETNS" ip link del "$CNI_IFNAME" 2>/dev/null || true ;;
CHECK) ;;
VERSION) echo "{\"cniVersion\":\"$version\",\"supportedVersions\":[\"0.4.0\",\"1.0.0\"]}" ;;
*) echo '{"code":4,"msg":"unknown CNI_COMMAND"}'; exit 1 ;;
esac
SH
	# containerd's CRI plugin also calls "loopback" for every sandbox.
	cat >"$CD/cni/bin/loopback" <<'SH'
#!/bin/sh
set -eu
version=$(tr -d '\n' | sed -n 's/.*"cniVersion" *: *"\([^"]*\)".*/\1/p')
version=${version:-1.0.0}
case "${CNI_COMMAND:-}" in
ADD)
	nsenter --net="$CNI_NETNS" ip link set lo up
	echo "{\"cniVersion\":\"$version\",\"interfaces\":[{\"name\":\"lo\",\"sandbox\":\"$CNI_NETNS\"}],\"ips\":[{\"address\":\"127.0.0.1/8\",\"interface\":0}]}" ;;
DEL | CHECK) ;;
VERSION) echo "{\"cniVersion\":\"$version\",\"supportedVersions\":[\"0.3.1\",\"0.4.0\",\"1.0.0\"]}" ;;
*) exit 1 ;;
esac
SH
	chmod +x "$CD/cni/bin/podstart-stub" "$CD/cni/bin/loopback"
	if [ "$CNI" = bridge ]; then
		write_cni_bridge
		return
	fi
	echo '{"cniVersion":"1.0.0","name":"podstart-e2e","plugins":[{"type":"podstart-stub"}]}' >"$CD/cni/net.d/10-podstart.conflist"
}

# PODSTART_E2E_CNI=bridge: a real pod network from Debian's
# containernetworking-plugins. Each pod gets an address of POD_CIDR
# (host-local, its state under $CD/cni) on a bridge named for this
# environment's port, which is the pods' gateway, so the node reaches pod
# IPs (probes, HTTP lifecycle hooks) and pods reach each other. No
# masquerade and no portmap: both need iptables, which this VM lacks, and
# nothing here leaves the node.
write_cni_bridge() {
	local p
	for p in bridge host-local loopback; do ln -sf "/usr/lib/cni/$p" "$CD/cni/bin/$p"; done
	cat >"$CD/cni/net.d/10-podstart.conflist" <<JSON
{"cniVersion":"1.0.0","name":"podstart-e2e-$AUTH_PORT","plugins":[
 {"type":"bridge","bridge":"podstart$AUTH_PORT","isGateway":true,"ipMasq":false,"hairpinMode":true,
  "ipam":{"type":"host-local","ranges":[[{"subnet":"$POD_CIDR"}]],"dataDir":"$CD/cni/ipam"}}]}
JSON
}

# containerd 2's config (version 3) with the 1.6 configuration's meaning:
# the CRI plugin is split into runtime (io.containerd.cri.v1.runtime),
# images (io.containerd.cri.v1.images) and the server's streaming options
# (io.containerd.grpc.v1.cri); the sandbox image is the pinned "sandbox"
# image; the runc shim and runc are ours, by path, so Debian's 1.6 shim
# and runc 1.1.5 on PATH are never used. NRI is off: its socket
# (/var/run/nri/nri.sock) is one per host, and nothing here uses it.
write_config_v3() {
	cat >"$CD/config.toml" <<TOML
version = 3
root = "$CD/root"
state = "$CD/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.erofs", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp", "io.containerd.nri.v1.nri"]
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[plugins.'io.containerd.internal.v1.opt']
  path = "$CD/opt"
[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = "$OPEN_REG/pause:3.9"
[plugins.'io.containerd.cri.v1.images'.registry]
  config_path = "$CD/certs.d"
[plugins.'io.containerd.cri.v1.runtime']
  disable_apparmor = true
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
${CDI_DIR:+  cdi_spec_dirs = [\"$CDI_DIR\"]}
[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = ["$CD/cni/bin"]
  conf_dir = "$CD/cni/net.d"
[plugins.'io.containerd.cri.v1.runtime'.containerd]
  default_runtime_name = "runc"
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  runtime_path = "$DIR/bin/containerd-shim-runc-v2"
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  SystemdCgroup = false
  Root = "$CD/runc"
  BinaryName = "$RUNC"
TOML
}

start_containerd() {
	mkdir -p "$CD"/root "$CD"/state "$CD"/runc "$CD"/opt
	[ -z "$CDI_DIR" ] || mkdir -p "$CDI_DIR"
	for r in "$AUTH_REG" "$OPEN_REG"; do
		mkdir -p "$CD/certs.d/$r"
		printf 'server = "http://%s"\n[host."http://%s"]\n  capabilities = ["pull", "resolve"]\n' "$r" "$r" >"$CD/certs.d/$r/hosts.toml"
	done
	write_cni
	# restrict_oom_score_adj: this VM refuses negative oom_score_adj even to
	# root. The sandbox image comes from the open registry so containerd can
	# always pull it itself.
	if [ "$CONTAINERD_MAJOR" = 2 ]; then
		write_config_v3
	else
		cat >"$CD/config.toml" <<TOML
version = 2
root = "$CD/root"
state = "$CD/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$CD/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$OPEN_REG/pause:3.9"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  disable_apparmor = true
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "$CD/cni/bin"
  conf_dir = "$CD/cni/net.d"
[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = false
  Root = "$CD/runc"
[plugins."io.containerd.grpc.v1.cri".registry]
  config_path = "$CD/certs.d"
TOML
	fi
	if running "$CD/pid" && ctr --address "$SOCK" version >/dev/null 2>&1; then
		return
	fi
	rm -f "$SOCK" "$SOCK.ttrpc"
	setsid "$CONTAINERD" --config "$CD/config.toml" >>"$CD/log" 2>&1 </dev/null &
	echo $! >"$CD/pid"
	retry 200 ctr --address "$SOCK" version
}

up() {
	[ "$(id -u)" = 0 ] || { say "must run as root"; exit 1; }
	mkdir -p "$DIR/bin" "$DIR/build" "$DIR/docker"
	local t0=$SECONDS
	install_packages
	if [ "$CONTAINERD_MAJOR" = 2 ]; then PODSTART_E2E_DIR=$DIR bash "$HERE/../containerd/build.sh"; fi
	build_images
	start_registry registry-auth "$AUTH_PORT" yes
	start_registry registry-open "$OPEN_PORT" no
	retry 100 curl -fsS -u "$REG_USER:$REG_PASS" "http://$AUTH_REG/v2/"
	retry 100 curl -fsS "http://$OPEN_REG/v2/"
	push_images "$AUTH_REG"
	push_images "$OPEN_REG"
	start_containerd
	printf '{"auths":{"%s":{"username":"%s","password":"%s"}}}\n' "$AUTH_REG" "$REG_USER" "$REG_PASS" >"$DIR/node-config.json"
	cat >"$DIR/env" <<ENV
export PODSTART_CRI_ENDPOINT=unix://$SOCK
export PODSTART_E2E_REGISTRY=$AUTH_REG
export PODSTART_E2E_REGISTRY_USER=$REG_USER
export PODSTART_E2E_REGISTRY_PASS=$REG_PASS
export PODSTART_E2E_IMAGE=$AUTH_REG/busybox:1.35
export PODSTART_E2E_OPEN_IMAGE=$OPEN_REG/busybox:1.35
export PODSTART_E2E_NODE_CONFIG=$DIR/node-config.json
export PODSTART_E2E_DIR=$DIR
export PODSTART_E2E_CONTAINERD=$CONTAINERD_MAJOR
export PODSTART_E2E_AUTH_PORT=$AUTH_PORT
export PODSTART_E2E_OPEN_PORT=$OPEN_PORT
export PODSTART_E2E_CNI=$CNI
ENV
	say "ready in $((SECONDS - t0))s: $("$CONTAINERD" --version | awk '{print $3}') at unix://$SOCK; env in $DIR/env"
}

stop_pidfiles() { # SIGTERM each, wait up to 10 s, then SIGKILL
	local f pids=()
	for f in "$@"; do
		if running "$f"; then pids+=("$(cat "$f")"); kill "$(cat "$f")" 2>/dev/null || true; fi
		rm -f "$f"
	done
	for pid in "${pids[@]}"; do
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
	done
}

down() {
	if running "$CD/pid" && ctr --address "$SOCK" version >/dev/null 2>&1; then
		local k8s="ctr --address $SOCK -n k8s.io"
		for id in $($k8s tasks ls -q 2>/dev/null); do $k8s tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true; done
		for id in $($k8s tasks ls -q 2>/dev/null); do $k8s tasks delete -f "$id" >/dev/null 2>&1 || true; done
		for id in $($k8s containers ls -q 2>/dev/null); do $k8s containers delete "$id" >/dev/null 2>&1 || true; done
	fi
	stop_pidfiles "$CD/pid" "$DIR/registry-auth/pid" "$DIR/registry-open/pid"
	# Containers and shims that outlived a dead containerd: only ours, found
	# by our runc root and our socket address.
	if [ -d "$CD/runc/k8s.io" ]; then
		for id in $("$RUNC" --root "$CD/runc/k8s.io" list -q 2>/dev/null); do
			"$RUNC" --root "$CD/runc/k8s.io" delete -f "$id" >/dev/null 2>&1 || true
		done
	fi
	for p in /proc/[0-9]*; do
		if tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -q -- "containerd-shim.*-address $SOCK "; then
			kill "${p#/proc/}" 2>/dev/null || true
		fi
	done
	if [ -d "$DIR" ]; then
		awk -v d="$DIR/" 'index($2, d) == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do
			umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
		done
	fi
	# The bridge PODSTART_E2E_CNI=bridge made, named for this environment.
	if ip link show "podstart$AUTH_PORT" type bridge >/dev/null 2>&1; then ip link del "podstart$AUTH_PORT" 2>/dev/null || true; fi
	if [ "${1:-}" = --purge ]; then rm -rf "$DIR"; fi
	say "stopped"
}

case "${1:-up}" in
up) up ;;
# For fault tests: containerd dies at once (its shims and containers live
# on), then comes back with the same configuration.
kill-containerd) if running "$CD/pid"; then kill -9 "$(cat "$CD/pid")"; fi ;;
start-containerd) start_containerd ;;
down) shift; down "${1:-}" ;;
*) echo "usage: $0 up|down [--purge]|kill-containerd|start-containerd" >&2; exit 2 ;;
esac
