package podsync_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/mounts"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

// FuzzSyncPod feeds pods with random names, $(VAR) chains, subPathExpr and
// many host aliases through SyncPod on runtime/fake: it never panics, and
// a pod it does not refuse gets no host path (mount, log path, log dir)
// outside the root dir.
func FuzzSyncPod(f *testing.F) {
	f.Add("web", "shop", "uid-1", "app", "data", "$(A)/$(B)", "x$(A)", "$(POD)/sub", uint8(3), "db.local")
	f.Add("..", "..", "..", "..", "..", "$(B)", "$(A)", "$(X)", uint8(0), "")
	f.Add("a/b", "ns", "../../x", "c", "v", "$$(A)", "$(A", "../$(A)", uint8(200), "bad host#")
	f.Add("w", "n", "u", "c", "v", "$(A)$(A)$(A)$(A)", "$(A)", "$(A)/..", uint8(50), "h")
	f.Fuzz(func(t *testing.T, name, ns, uid, cname, vname, valA, valB, subExpr string, aliases uint8, host string) {
		h := newHarness(t, false, []fake.Option{fake.WithRegistryImages("busybox:1.35", "nginx:1")})
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(uid)},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyAlways,
				Volumes:       []corev1.Volume{{Name: vname, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				Containers: []corev1.Container{{
					Name: cname, Image: "nginx:1", TerminationMessagePath: "/dev/termination-log",
					Env:          []corev1.EnvVar{{Name: "A", Value: valA}, {Name: "B", Value: valB}, {Name: "POD", Value: "$(A)-$(B)"}},
					VolumeMounts: []corev1.VolumeMount{{Name: vname, MountPath: "/data", SubPathExpr: subExpr}},
					Command:      []string{"$(A)", "$(B)", "$(POD)"},
				}},
			},
		}
		for i := 0; i < int(aliases); i++ {
			pod.Spec.HostAliases = append(pod.Spec.HostAliases, corev1.HostAlias{IP: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), Hostnames: []string{host, fmt.Sprintf("h%d", i)}})
		}
		r := h.syncer.SyncPod(context.Background(), pod, &podsync.PodStatus{}, nil)
		if err := r.Error(); errors.Is(err, mounts.ErrInvalidName) {
			if h.fake.CallCount("RunPodSandbox") != 0 {
				t.Fatal("refused pod got a sandbox")
			}
			return
		}
		root, _ := filepath.EvalSymlinks(h.root)
		inside := func(what, p string) {
			if p == "" {
				return
			}
			rp, err := filepath.EvalSymlinks(p)
			if err != nil {
				rp = filepath.Clean(p)
			}
			if rp != root && !strings.HasPrefix(rp, root+"/") && !strings.HasPrefix(filepath.Clean(p), filepath.Clean(h.root)+"/") {
				t.Fatalf("%s %q is outside the root %q", what, p, h.root)
			}
		}
		for _, c := range h.fake.Calls() {
			switch req := c.Request.(type) {
			case *runtimeapi.RunPodSandboxRequest:
				inside("sandbox log dir", req.Config.GetLogDirectory())
			case *runtimeapi.CreateContainerRequest:
				for _, m := range req.Config.GetMounts() {
					inside("mount", m.HostPath)
				}
				if lp := req.Config.GetLogPath(); lp != "" {
					inside("log path", filepath.Join(req.SandboxConfig.GetLogDirectory(), lp))
				}
			}
		}
	})
}
