package fake_test

import (
	"fmt"

	fakemount "github.com/podstart/podstart/mounts/fake"
)

// A test's mounter: what the code under test mounted, with the sizes, and
// the refusal an unprivileged process gets.
func ExampleMounter() {
	m := fakemount.New()
	_ = m.MountTmpfs("/var/lib/kubelet/pods/uid/volumes/kubernetes.io~secret/db", 64<<20)
	for _, t := range m.Tmpfs() {
		fmt.Println(t.Path, t.Size)
	}
	fmt.Println(m.Unprivileged().MountTmpfs("/x", 0))
	// Output:
	// /var/lib/kubelet/pods/uid/volumes/kubernetes.io~secret/db 67108864
	// mount tmpfs at /x: not permitted to mount: operation not permitted
}
