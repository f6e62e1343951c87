package podsync_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
	"github.com/podstart/podstart/validation"
)

// TestNilOptionsFallBack: nil options keep the defaults.
func TestNilOptionsFallBack(t *testing.T) {
	f := fake.New(fake.WithRegistryImages("busybox:1.35", "envoy:1", "nginx:1"))
	ims := images.NewManager(f)
	defer ims.Close()
	root := t.TempDir()
	s := podsync.NewSyncer(f, ims, podsync.WithClock(nil), podsync.WithRecorder(nil), podsync.WithRuntimeHandler(nil),
		podsync.WithHTTPClient(nil), podsync.WithImageService(nil), podsync.WithTrace(nil), podsync.WithSharedBackOff(nil),
		podsync.WithRootDir(root), podsync.WithPodLogsDir(filepath.Join(root, "logs")))
	pod := demoPod()
	st, err := s.Status(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	s.SyncPod(context.Background(), pod, st, nil)
}

// TestSyncPodRefusesEscapingNames: a pod whose UID, namespace, name,
// container or volume name would put host paths outside the root dir is
// refused before anything is created, with an error matching
// mounts.ErrInvalidName.
func TestSyncPodRefusesEscapingNames(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(p *corev1.Pod)
	}{
		{name: "uid dotdot", mutate: func(p *corev1.Pod) { p.UID = ".." }},
		{name: "uid slash", mutate: func(p *corev1.Pod) { p.UID = "../../../tmp" }},
		{name: "namespace dotdot", mutate: func(p *corev1.Pod) { p.Namespace = ".." }},
		{name: "container dotdot", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Name = "../../x" }},
		{name: "volume dotdot", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "..", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, false, []fake.Option{fake.WithRegistryImages("busybox:1.35", "envoy:1", "nginx:1")})
			pod := demoPod()
			tt.mutate(pod)
			r := h.syncer.SyncPod(context.Background(), pod, &podsync.PodStatus{}, nil)
			if err := r.Error(); !errors.Is(err, mounts.ErrInvalidName) {
				t.Fatalf("err = %v, want mounts.ErrInvalidName", err)
			}
			if n := h.fake.CallCount("RunPodSandbox"); n != 0 {
				t.Fatalf("%d sandboxes created", n)
			}
			if entries, _ := os.ReadDir(filepath.Dir(h.root)); len(entries) != 1 {
				t.Fatalf("files beside the root: %v", entries)
			}
		})
	}
}

// TestEmptyHostPathRefused: a hostPath volume with an empty path is
// refused (the API server's "hostPath.path: Required value") instead of
// mounting "" or creating directories in the working directory.
func TestEmptyHostPathRefused(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, typ := range []corev1.HostPathType{corev1.HostPathUnset, corev1.HostPathDirectoryOrCreate, corev1.HostPathFileOrCreate} {
		pod := demoPod()
		pod.Spec.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "", Type: &typ}}}}
		_, err := podsync.DefaultVolumes{RootDir: dir}.Volumes(context.Background(), pod)
		if !errors.Is(err, validation.ErrInvalidPod) || !strings.Contains(err.Error(), "spec.volumes[0].hostPath.path: Required value") {
			t.Fatalf("type %q: err = %v", typ, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("created %v", entries)
	}
}

// TestSyncPodStatusReadOnly: SyncPod leaves the *PodStatus it is given as
// it was, even when it purges init containers before re-creating the
// sandbox, so callers may share it (run with -race: a reader runs
// concurrently).
func TestSyncPodStatusReadOnly(t *testing.T) {
	h := newHarness(t, false, []fake.Option{fake.WithRegistryImages("busybox:1.35", "envoy:1", "nginx:1"), fake.WithStartFunc(exitInits(nil))})
	pod := demoPod()
	h.converge(pod, 10)
	st, err := h.syncer.Status(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.fake.StopPodSandbox(context.Background(), st.SandboxStatuses[0].Id); err != nil {
		t.Fatal(err)
	}
	st, err = h.syncer.Status(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	before := len(st.ContainerStatuses)
	names := func() []string {
		var out []string
		for _, cs := range st.ContainerStatuses {
			out = append(out, cs.Name)
		}
		return out
	}
	want := strings.Join(names(), ",")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 100; i++ {
			_ = names()
		}
	}()
	r := h.syncer.SyncPod(context.Background(), pod, st, nil)
	<-done
	if r.Error() != nil {
		t.Logf("sync: %v", r.Error())
	}
	if n := h.fake.CallCount("RemoveContainer"); n == 0 {
		t.Fatal("no init container purged: the test did not reach the purge")
	}
	if len(st.ContainerStatuses) != before || strings.Join(names(), ",") != want {
		t.Fatalf("SyncPod changed the caller's status: %v, was %s", names(), want)
	}
}

// TestLeakScanSyncPod: a SyncPod whose pulls fail with a pull secret that
// holds a known password logs (logr at V(10)), records events and returns
// errors with the password in no encoding.
func TestLeakScanSyncPod(t *testing.T) {
	const user, pass = "leakuser", "Hunter2-Pa55word-xyzzy"
	up := user + ":" + pass
	forms := []string{pass, base64.StdEncoding.EncodeToString([]byte(up)), base64.RawStdEncoding.EncodeToString([]byte(up)),
		base64.StdEncoding.EncodeToString([]byte(pass)), hex.EncodeToString([]byte(pass)), hex.EncodeToString([]byte(up))}
	var mu sync.Mutex
	var texts []string
	add := func(s string) { mu.Lock(); texts = append(texts, s); mu.Unlock() }
	ctx := logr.NewContext(context.Background(), funcr.New(func(prefix, args string) { add(prefix + " " + args) }, funcr.Options{Verbosity: 10}))
	h := newHarness(t, false, []fake.Option{fake.WithRegistryImages("reg.io/app:1"), fake.WithRegistryAuth("reg.io", user, "the-right-one")})
	pod := demoPod()
	pod.Spec.InitContainers = nil
	pod.Spec.Containers = []corev1.Container{{Name: "app", Image: "reg.io/app:1"}}
	good := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "pull"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"reg.io":{"auth":"` + base64.StdEncoding.EncodeToString([]byte(up)) + `"}}}`)}}
	bad := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "bad"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"reg.io":{"password":` + pass + `}}}`)}}
	for _, secrets := range [][]corev1.Secret{{good}, {good}, {bad}} {
		st, err := h.syncer.Status(ctx, pod)
		if err != nil {
			t.Fatal(err)
		}
		r := h.syncer.SyncPod(ctx, pod, st, secrets)
		if r.Error() == nil {
			t.Fatal("sync succeeded with a wrong password")
		}
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%d"} {
			add(fmt.Sprintf(verb, r.Error()))
			add(fmt.Sprintf(verb, r))
		}
	}
	h.ev.mu.Lock()
	texts = append(texts, h.ev.list...)
	events := len(h.ev.list)
	h.ev.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if events == 0 {
		t.Fatal("no events captured")
	}
	for _, s := range texts {
		for _, f := range forms {
			if strings.Contains(s, f) {
				t.Errorf("leak of %q in %s", f, s)
			}
		}
	}
}

// The computed actions are logged at V(3), as kubelet logs its
// computePodActions result, and not rendered at all below it.
func TestActionsLoggedAtV3(t *testing.T) {
	for _, v := range []int{2, 3} {
		var lines []string
		ctx := logr.NewContext(context.Background(), funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: v}))
		h := newHarness(t, false, nil)
		pod := appPod("logged")
		st, err := h.syncer.Status(ctx, pod)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.syncer.SyncPod(ctx, pod, st, nil).Error(); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, l := range lines {
			if strings.Contains(l, `"msg"="Computed pod actions"`) && strings.Contains(l, `create sandbox attempt 0`) {
				found = true
			}
		}
		if found != (v >= 3) {
			t.Errorf("verbosity %d: logged %v, want %v: %q", v, found, v >= 3, lines)
		}
	}
}
