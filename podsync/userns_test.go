package podsync_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/podsync"
)

// Kubelet's checks of the node's range (MakeUserNsManager and
// TestMakeUserNsManager in pkg/kubelet/userns).
func TestNewUserNamespacesChecks(t *testing.T) {
	tests := []struct {
		first, length, per uint32
		maxPods            int
		want               string
	}{
		{0, 0, 0, 0, ""},
		{65536, 65536 * 110, 65536, 110, ""},
		{65536, 65536 * 200, 131072, 50, "kubelet user assigned ID 65536 is not a multiple of 131072"},
		{65536, 65536 * 200, 65537, 1, "kubelet user namespace length 65537 is not a multiple of 65536"},
		{0, 65536 * 200, 65536, 1, "kubelet user assigned ID 0 must be greater or equal to 65536"},
		{65536, 65536*2 + 1, 65536, 1, "kubelet user assigned IDs length 131073 is not a multiple of 65536"},
		{65536, 65536 * 10, 65536, 11, "kubelet user assigned IDs are not enough to support 11 pods"},
	}
	for _, tt := range tests {
		_, err := podsync.NewUserNamespaces(t.TempDir(), tt.first, tt.length, tt.per, tt.maxPods)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.HasSuffix(err.Error(), tt.want) || !errors.Is(err, podsync.ErrUserNamespace)) {
			t.Errorf("%+v: %v, want %q", tt, err, tt.want)
		}
	}
}

func usernsPod(uid string) *corev1.Pod {
	f := false
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid)}, Spec: corev1.PodSpec{HostUsers: &f}}
}

// Each pod gets a range of its own, the same one for its life and across
// a restarted agent (read back from kubelet's file), until it is released;
// a full node refuses the next pod.
func TestUserNamespaceAllocation(t *testing.T) {
	root := t.TempDir()
	u, err := podsync.NewUserNamespaces(root, 65536, 65536*2, 65536, 2)
	if err != nil {
		t.Fatal(err)
	}
	a, err := u.UserNamespace(usernsPod("a"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := u.UserNamespace(usernsPod("b"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Mode != runtimeapi.NamespaceMode_POD || a.Uids[0].HostId != 65536 || b.Uids[0].HostId != 131072 || a.Uids[0].Length != 65536 || a.Gids[0].HostId != a.Uids[0].HostId || a.Uids[0].ContainerId != 0 {
		t.Fatalf("a %v, b %v", a, b)
	}
	if again, _ := u.UserNamespace(usernsPod("a")); again.Uids[0].HostId != 65536 {
		t.Fatalf("a moved: %v", again)
	}
	if _, err := u.UserNamespace(usernsPod("c")); err == nil || !strings.Contains(err.Error(), "could not find an empty slot") {
		t.Fatalf("third pod: %v", err)
	}
	file, err := os.ReadFile(filepath.Join(root, "pods", "b", "userns"))
	if err != nil || string(file) != `{"uidMappings":[{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}` {
		t.Fatalf("record %s, %v", file, err)
	}

	// A restarted agent finds both ranges taken.
	u2, _ := podsync.NewUserNamespaces(root, 65536, 65536*2, 65536, 2)
	if b2, err := u2.UserNamespace(usernsPod("b")); err != nil || b2.Uids[0].HostId != 131072 {
		t.Fatalf("b after restart: %v, %v", b2, err)
	}
	if _, err := u2.UserNamespace(usernsPod("c")); err == nil {
		t.Fatal("c got a range already taken")
	}
	if err := os.RemoveAll(filepath.Join(root, "pods", "a")); err != nil {
		t.Fatal(err)
	}
	u2.Release("a")
	if c, err := u2.UserNamespace(usernsPod("c")); err != nil || c.Uids[0].HostId != 65536 {
		t.Fatalf("c after a was released: %v, %v", c, err)
	}
}

// A record that is not kubelet's, or overlaps another pod's, stops
// allocation rather than risk two pods sharing IDs.
func TestUserNamespaceBadRecord(t *testing.T) {
	for name, content := range map[string]string{
		"not json":     "{",
		"two maps":     `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536},{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[]}`,
		"uid != gid":   `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}`,
		"out of range": `{"uidMappings":[{"hostId":0,"containerId":0,"length":65536}],"gidMappings":[{"hostId":0,"containerId":0,"length":65536}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "pods", "x")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "userns"), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			u, _ := podsync.NewUserNamespaces(root, 0, 0, 0, 0)
			if _, err := u.UserNamespace(usernsPod("y")); !errors.Is(err, podsync.ErrUserNamespace) || !strings.Contains(err.Error(), `existing pod "x"`) {
				t.Fatalf("%v", err)
			}
		})
	}
}

// Through SyncPod: the sandbox and every container get the pod's mapping
// and mounts are ID-mapped, as kubelet sends them; RemovePod frees the
// range. Without runtime support the pod is refused, never run in the
// node's user namespace.
func TestSyncPodUserNamespace(t *testing.T) {
	node := criconfig.Node{UserNamespaces: true}
	h := newHarness(t, false, nil)
	node.RootDir, node.PodLogsDir = h.root, filepath.Join(h.root, "logs")
	h.opts = append(h.opts, podsync.WithNode(node))
	h.restart()
	pod := resizePod()
	f := false
	pod.Spec.HostUsers = &f
	h.converge(pod, 3)
	var sandboxNS, containerNS *runtimeapi.UserNamespace
	var mount *runtimeapi.Mount
	for _, c := range h.fake.Calls() {
		switch req := c.Request.(type) {
		case *runtimeapi.RunPodSandboxRequest:
			sandboxNS = req.Config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
		case *runtimeapi.CreateContainerRequest:
			containerNS = req.Config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
			if len(req.Config.Mounts) > 0 {
				mount = req.Config.Mounts[0]
			}
		}
	}
	if sandboxNS.GetMode() != runtimeapi.NamespaceMode_POD || len(sandboxNS.Uids) != 1 || sandboxNS.Uids[0].HostId != 65536 || sandboxNS.Uids[0].Length != 65536 {
		t.Fatalf("sandbox user namespace %v", sandboxNS)
	}
	if containerNS.String() != sandboxNS.String() {
		t.Fatalf("container user namespace %v, sandbox %v", containerNS, sandboxNS)
	}
	if mount == nil || len(mount.UidMappings) != 1 || mount.UidMappings[0].HostId != 65536 || len(mount.GidMappings) != 1 {
		t.Fatalf("mount %v", mount)
	}
	st, _ := h.syncer.Status(context.Background(), pod)
	if err := h.syncer.KillPod(context.Background(), pod, st, nil).Error(); err != nil {
		t.Fatal(err)
	}
	if err := h.syncer.RemovePod(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
	next := resizePod()
	next.UID, next.Name = "uid-next", "next"
	next.Spec.HostUsers = &f
	h.fake.ResetCalls()
	h.converge(next, 3)
	for _, c := range h.fake.Calls() {
		if req, ok := c.Request.(*runtimeapi.RunPodSandboxRequest); ok {
			if got := req.Config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions().GetUids(); len(got) != 1 || got[0].HostId != 65536 {
				t.Fatalf("the removed pod's range was not reused: %v", got)
			}
		}
	}

	// No support: refused with kubelet's message, nothing created.
	h2 := newHarness(t, false, nil)
	other := resizePod()
	other.Spec.HostUsers = &f
	r := h2.sync(other)
	if err := r.Error(); !errors.Is(err, criconfig.ErrUnsupported) || !strings.Contains(err.Error(), "runtime does not support user namespaces") {
		t.Fatalf("result %v", r.Error())
	}
	if n := h2.fake.CallCount("RunPodSandbox") + h2.fake.CallCount("CreateContainer"); n != 0 {
		t.Fatalf("%d creations", n)
	}
}
