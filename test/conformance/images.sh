#!/usr/bin/env bash
# images.sh - makes the images the node-level specs ask for, offline, and
# pushes them to the tier's open registry under the names the suite asks
# for once KUBE_TEST_REPO_LIST (repo-list.yaml, written here) points its
# registries at it:
#
#   e2e-test-images/agnhost:2.66.1 and :2.55  agnhost from the Go module
#       (build.sh), on the busybox root below, with what upstream's image
#       adds that specs use: /agnhost-2, porter's localhost.crt and .key,
#       /uploads, user-defined-in-image (1000) in group-defined-in-image
#       (50000), and a curl (curl/: "curl URL", what the exec hooks run;
#       upstream's has Alpine's); entrypoint /agnhost, cmd pause
#   e2e-test-images/busybox:1.37.0-2  Debian's busybox-static applets;
#       /bin/sh is sh/ (a static Go program): busybox 1.35's sh drops
#       environment variables whose names are not shell identifiers
#       (upstream's busybox 1.37 keeps them, and specs rely on it), so with
#       such a variable it runs Debian's bash-static (/bin/bash), which
#       passes them on, and busybox's sh otherwise (specs also compare
#       busybox's own messages)
#   e2e-test-images/nonroot:1.5       that busybox, USER 1234 (upstream's)
#   e2e-test-images/nonewprivs:1.4    that busybox with upstream's nnp
#       (built from the module) setuid root at /usr/local/bin/nnp
#   e2e-test-images/glibc-dns-testing:2.1.1  that busybox (the specs run
#       sh and hostname)
#   e2e-test-images/kitten:1.8        agnhost with upstream's kitten.jpg and
#       data.json at /, cmd test-webserver, and an /etc/os-release naming
#       upstream's base (Alpine Linux 3.21; the ImageVolume spec reads it)
#   e2e-test-images/nginx:1.27.0-2 and :1.28.0-2  that busybox serving / on
#       port 80 with busybox httpd (the specs only need it to run)
#   pause:3.10.2                      env.sh's pause
#
#   bash test/conformance/images.sh <registry host:port>
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DIR=${PODSTART_E2E_DIR:-/tmp/podstart-conf}
REG=${1:?registry}
CRANE=$DIR/bin/crane
B=$DIR/build/conformance
export PATH="/usr/local/go/bin:$PATH"
K8S=$(cd "$here/build" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)
say() { echo "conformance-images: $*" >&2; }
mkdir -p "$B"

missing=()
for p in busybox-static bash-static; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	say "installing ${missing[*]}"
	apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

tarof() { # dir tarfile: a reproducible layer, every file root's
	tar -C "$1" --owner=0 --group=0 --numeric-owner --sort=name --mtime=@0 -cf "$2.new" . && mv "$2.new" "$2"
}

busybox_root() { # dir
	local r=$1
	rm -rf "$r" && mkdir -p "$r"/bin "$r"/etc "$r"/tmp "$r"/proc "$r"/sys "$r"/dev "$r"/root "$r"/usr/local/bin "$r"/var/www
	cp /bin/busybox "$r/bin/busybox"
	for applet in $("$r/bin/busybox" --list); do
		case $applet in busybox | sh | bash) ;; *) ln -s busybox "$r/bin/$applet" ;; esac
	done
	cp /usr/bin/bash-static "$r/bin/bash"
	cp "$B/sh" "$r/bin/sh"
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$r/etc/passwd"
	printf 'root:x:0:\nnobody:x:65534:\n' >"$r/etc/group"
	chmod 1777 "$r/tmp"
}

# push tag layer... -- crane-mutate-flags...
push() {
	local tag=$1 layers=()
	shift
	while [ "$1" != -- ]; do layers+=(-f "$1"); shift; done
	shift
	"$CRANE" append --oci-empty-base "${layers[@]}" -t "$REG/$tag" >/dev/null 2>>"$DIR/crane.log"
	"$CRANE" mutate "$REG/$tag" --set-platform linux/amd64 \
		--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@" -t "$REG/$tag" >/dev/null 2>>"$DIR/crane.log"
}

for b in agnhost nnp; do
	[ -x "$DIR/bin/$b" ] || { say "missing $DIR/bin/$b: run bash test/conformance/build.sh"; exit 1; }
done

(cd "$here/../.." && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags '-s -w' -o "$B/sh" ./test/conformance/sh)
busybox_root "$B/busybox"
tarof "$B/busybox" "$B/busybox.tar"

r=$B/agnhost && rm -rf "$r" && mkdir -p "$r/uploads" "$r/etc" "$r/usr/bin"
(cd "$here/../.." && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags '-s -w' -o "$r/usr/bin/curl" ./test/conformance/curl)
cp "$DIR/bin/agnhost" "$r/agnhost" && ln -s agnhost "$r/agnhost-2"
cp "$K8S/test/images/agnhost/porter/localhost.crt" "$K8S/test/images/agnhost/porter/localhost.key" "$r/"
cat "$B/busybox/etc/passwd" >"$r/etc/passwd" && echo 'user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh' >>"$r/etc/passwd"
{ cat "$B/busybox/etc/group"; echo 'user-defined-in-image:x:1000:'; echo 'group-defined-in-image:x:50000:user-defined-in-image'; } >"$r/etc/group"
chmod -R u+w "$r" && tarof "$r" "$B/agnhost.tar"

r=$B/nnp && rm -rf "$r" && mkdir -p "$r/usr/local/bin"
cp "$DIR/bin/nnp" "$r/usr/local/bin/nnp" && chmod 4755 "$r/usr/local/bin/nnp"
tarof "$r" "$B/nnp.tar"

r=$B/kitten && rm -rf "$r" && mkdir -p "$r/etc"
cp "$K8S/test/images/kitten/html/kitten.jpg" "$K8S/test/images/kitten/html/data.json" "$r/" && chmod 644 "$r"/*.*
# Upstream's kitten is agnhost on alpine:3.21 (its BASEIMAGE files); the
# ImageVolume spec reads the image's /etc/os-release through the volume
# and wants "Alpine Linux": this stand-in states upstream's base there.
printf '%s\n' 'NAME="Alpine Linux"' 'ID=alpine' 'VERSION_ID=3.21' 'PRETTY_NAME="Alpine Linux v3.21"' \
	'HOME_URL="https://alpinelinux.org/"' >"$r/etc/os-release" && chmod 644 "$r/etc/os-release"
tarof "$r" "$B/kitten.tar"

E=e2e-test-images
push "$E/busybox:1.37.0-2" "$B/busybox.tar" -- --cmd sh
push "$E/agnhost:2.66.1" "$B/busybox.tar" "$B/agnhost.tar" -- --entrypoint /agnhost --cmd pause
"$CRANE" copy "$REG/$E/agnhost:2.66.1" "$REG/$E/agnhost:2.55" >/dev/null 2>>"$DIR/crane.log"
push "$E/kitten:1.8" "$B/busybox.tar" "$B/agnhost.tar" "$B/kitten.tar" -- --entrypoint /agnhost --cmd test-webserver
push "$E/nonroot:1.5" "$B/busybox.tar" -- --cmd sh --user 1234
push "$E/nonewprivs:1.4" "$B/busybox.tar" "$B/nnp.tar" -- --cmd nnp
push "$E/glibc-dns-testing:2.1.1" "$B/busybox.tar" -- --cmd sh
push "$E/nginx:1.27.0-2" "$B/busybox.tar" -- --cmd httpd,-f,-p,80,-h,/var/www
"$CRANE" copy "$REG/$E/nginx:1.27.0-2" "$REG/$E/nginx:1.28.0-2" >/dev/null 2>>"$DIR/crane.log"
push pause:3.10.2 "$DIR/build/pause.tar" -- --entrypoint /pause

# The registries the suite's images come from, all but the invalid one
# (whose pulls must fail) and the private one (its spec brings its own
# credentials for gcr.io) pointed at ours.
cat >"$DIR/repo-list.yaml" <<YAML
promoterE2eRegistry: $REG/e2e-test-images
buildImageRegistry: $REG/build-image
gcEtcdRegistry: $REG
gcRegistry: $REG
sigStorageRegistry: $REG/sig-storage
dockerLibraryRegistry: $REG/library
cloudProviderGcpRegistry: $REG/cloud-provider-gcp
YAML
say "pushed to $REG; KUBE_TEST_REPO_LIST=$DIR/repo-list.yaml"
