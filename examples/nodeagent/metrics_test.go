package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	fakemount "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/nodemetrics"
	"github.com/podstart/podstart/runtime/fake"
)

// The agent feeds the node's /metrics: a pod started counts as a started
// pod and container, its start duration is observed, and the relists
// report the running pod.
func TestNodeMetricsFed(t *testing.T) {
	m, err := nodemetrics.New(nodeName)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{client: newFakeClientset(), clock: testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		rt: fake.New(), root: t.TempDir(), mounter: fakemount.New()}
	runAgent(t, Config{Client: h.client, Runtime: h.rt, NodeName: nodeName, RootDir: h.root,
		PodLogsDir: filepath.Join(h.root, "logs"), Clock: h.clock, Mounter: h.mounter, Metrics: m})
	if _, err := h.client.CoreV1().Pods("default").Create(context.Background(), testPod("measured"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod running", func() bool {
		p, ok := h.get(t, "measured")
		return ok && p.Status.Phase == corev1.PodRunning
	})
	sample := func(name string, labels map[string]string) (float64, bool) {
		fams, err := m.Gatherer().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			if f.GetName() != name {
				continue
			}
		next:
			for _, s := range f.Metric {
				for _, l := range s.Label {
					if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
						continue next
					}
				}
				switch {
				case s.Counter != nil:
					return s.Counter.GetValue(), true
				case s.Gauge != nil:
					return s.Gauge.GetValue(), true
				case s.Histogram != nil:
					return float64(s.Histogram.GetSampleCount()), true
				}
			}
		}
		return 0, false
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
	}{
		{"kubelet_started_pods_total", nil},
		{"kubelet_started_containers_total", map[string]string{"container_type": "container"}},
		{"kubelet_pod_start_duration_seconds", nil},
		{"kubelet_running_pods", nil},
		{"kubelet_running_containers", map[string]string{"container_state": "running"}},
	} {
		eventually(t, c.name+" at 1", func() bool { v, ok := sample(c.name, c.labels); return ok && v == 1 })
	}
	if v, _ := sample("kubelet_pleg_relist_duration_seconds", nil); v == 0 {
		t.Error("no relist observed")
	}
}

// The sandbox image: containerd 1.x's from its CRI config, else the one
// pinned image.
func TestSandboxImage(t *testing.T) {
	if got := sandboxImageFromConfig(`{"sandboxImage":"registry.k8s.io/pause:3.10","enableSelinux":false}`); got != "registry.k8s.io/pause:3.10" {
		t.Errorf("from config: %q", got)
	}
	if got := sandboxImageFromConfig(`{"containerdRootDir":"/var/lib/containerd"}`); got != "" {
		t.Errorf("from a config without it: %q", got)
	}
	ctx := context.Background()
	rt := pinnedImages{fake.New(), []*runtimeapi.Image{{Id: "sha256:p", RepoTags: []string{"registry.k8s.io/pause:3.10"}, Pinned: true},
		{Id: "sha256:b", RepoTags: []string{"busybox:1.35"}}}}
	if got := sandboxImage(ctx, rt); got != "registry.k8s.io/pause:3.10" {
		t.Errorf("pinned: %q", got)
	}
	if got := sandboxImage(ctx, fake.New()); got != "" {
		t.Errorf("nothing pinned: %q", got)
	}
}

// pinnedImages answers ListImages with its images (runtime/fake pins none).
type pinnedImages struct {
	*fake.Runtime
	images []*runtimeapi.Image
}

func (p pinnedImages) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	return p.images, nil
}
