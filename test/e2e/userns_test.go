package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime"
)

// runtimeHasUserNamespaces reports whether the runtime's CRI Status says
// its default handler supports user namespaces (v1.37's
// RuntimeHandlerFeatures.user_namespaces; containerd 1.6 lists no
// handlers), as kubelet asks before it runs a hostUsers: false pod.
func runtimeHasUserNamespaces(t *testing.T, rt *runtime.Client) (bool, []*runtimeapi.RuntimeHandler) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := rt.Status(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range st.GetRuntimeHandlers() {
		if h.GetName() == "" {
			return h.GetFeatures().GetUserNamespaces(), st.GetRuntimeHandlers()
		}
	}
	return false, st.GetRuntimeHandlers()
}

// A hostUsers: false pod end to end, on a runtime that reports user
// namespaces (containerd 2; skipped on 1.6, which reports none): podsync
// allocates the pod 65536 host IDs above the first 65536 (kubelet's
// user-namespace manager), the container is root inside (id: uid 0) and
// an unprivileged ID on the host (its process's owner >= 65536, as ps
// shows it), and a hostPath volume whose file only host root may read
// (0:0, mode 0600) is read inside as root's, through an ID-mapped mount
// (criconfig sends the pod's mappings on each mount).
func TestUserNamespacePodOnContainerd(t *testing.T) {
	e, rt := setup(t)
	ok, handlers := runtimeHasUserNamespaces(t, rt)
	if !ok {
		t.Skipf("the runtime reports no user namespaces for its default handler (handlers %v): containerd 1.6", handlers)
	}
	a := newAgent(t, rt, t.TempDir())
	// The node's fact comes from the runtime's Status, as kubelet's; the
	// Syncer then makes its default ID allocator under the root dir.
	a.syncer = podsync.NewSyncer(rt, a.ims, podsync.WithNode(criconfig.Node{
		RootDir: a.root, PodLogsDir: filepath.Join(a.root, "logs"), UserNamespaces: true}))

	vol := t.TempDir()
	if err := os.Chmod(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	const secret = "readable through an idmapped mount\n"
	if err := os.WriteFile(filepath.Join(vol, "root-only"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	c := sleeper("app", e.openImage)
	c.VolumeMounts = []corev1.VolumeMount{{Name: "host", MountPath: "/vol", ReadOnly: true}}
	pod := newPod(t, rt, "userns", c)
	hostUsers := false
	pod.Spec.HostUsers = &hostUsers
	pod.Spec.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: vol}}}}
	a.converge(pod)

	cs := a.status(pod).FindContainerStatusByName("app")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	exec := func(cmd ...string) string {
		t.Helper()
		out, stderr, err := rt.ExecSync(ctx, cs.ID, cmd, 10*time.Second)
		if err != nil {
			t.Fatalf("%v in the container: %v (%s)", cmd, err, stderr)
		}
		return strings.TrimSpace(string(out))
	}
	id := exec("id")
	t.Logf("inside: id: %s", id)
	if !strings.HasPrefix(id, "uid=0(root) gid=0(root)") {
		t.Errorf("inside: id = %q, want uid 0 and gid 0", id)
	}
	uidMap := exec("cat", "/proc/self/uid_map")
	t.Logf("inside: /proc/self/uid_map: %s", strings.Join(strings.Fields(uidMap), " "))
	if f := strings.Fields(uidMap); len(f) != 3 || f[0] != "0" || f[2] != "65536" {
		t.Errorf("inside: uid_map %q, want 65536 IDs from 0", uidMap)
	}
	if got := exec("cat", "/vol/root-only"); got+"\n" != secret {
		t.Errorf("inside: /vol/root-only = %q, want %q", got, secret)
	}
	if got := exec("stat", "-c", "%u:%g", "/vol/root-only"); got != "0:0" {
		t.Errorf("inside: /vol/root-only owned by %s, want 0:0 (host root through the ID-mapped mount)", got)
	}
	mountinfo := exec("grep", " /vol ", "/proc/self/mountinfo")
	t.Logf("inside: mountinfo: %s", mountinfo)

	// On the host: the container's process, as containerd reports it.
	resp, err := rt.ContainerStatus(ctx, cs.ID, true)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil || info.Pid <= 0 {
		t.Fatalf("container pid from ContainerStatus info: %d, %v", info.Pid, err)
	}
	ps, err := exec2("ps", "-o", "user,pid,args", "-p", strconv.Itoa(info.Pid))
	if err != nil {
		t.Fatalf("ps: %v: %s", err, ps)
	}
	t.Logf("on the host: ps -o user,pid,args -p %d:\n%s", info.Pid, ps)
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(info.Pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	var hostUID int = -1
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			hostUID, _ = strconv.Atoi(f[1])
		}
	}
	if hostUID < 65536 {
		t.Errorf("on the host: the container's process runs as uid %d, want a mapped uid >= 65536", hostUID)
	}
	lines := strings.Split(strings.TrimSpace(ps), "\n")
	if len(lines) != 2 || strings.Fields(lines[1])[0] != strconv.Itoa(hostUID) {
		t.Errorf("on the host: ps shows %q, want owner %d", ps, hostUID)
	}
}

func exec2(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}
