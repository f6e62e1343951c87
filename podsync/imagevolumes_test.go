package podsync_test

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/runtime/fake"
)

func imageVolumePod(policy corev1.PullPolicy) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "img", Namespace: "shop", UID: "uid-img", Annotations: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyAlways,
			Volumes:       []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "example.com/kitten:1.8", PullPolicy: policy}}}},
			Containers: []corev1.Container{
				{Name: "reader", Image: "busybox:1.35", VolumeMounts: []corev1.VolumeMount{
					{Name: "data", MountPath: "/volume"},
					{Name: "data", MountPath: "/etc-only", SubPath: "etc"},
				}},
				{Name: "plain", Image: "busybox:1.35"},
			},
		},
	}
}

// createConfigs maps each created container's name to its config.
func (h *harness) createConfigs() map[string]*runtimeapi.ContainerConfig {
	out := map[string]*runtimeapi.ContainerConfig{}
	for _, c := range h.fake.Calls() {
		if req, ok := c.Request.(*runtimeapi.CreateContainerRequest); ok {
			out[req.Config.Metadata.Name] = req.Config
		}
	}
	return out
}

// An image volume is pulled as its pull policy says before the first
// container starts, and mounted by the runtime from the image (kubelet's
// Mount.Image and ImageSubPath): read-only, no host path, the subPath
// inside the image.
func TestImageVolumeMounted(t *testing.T) {
	h := newHarness(t, false, nil)
	pod := imageVolumePod(corev1.PullAlways)
	h.converge(pod, 3)
	pulls := 0
	for _, c := range h.fake.Calls() {
		if req, ok := c.Request.(*runtimeapi.PullImageRequest); ok && req.Image.Image == "example.com/kitten:1.8" {
			pulls++
			if req.Image.Annotations["a"] != "b" {
				t.Errorf("image volume pulled without the pod's annotations: %v", req.Image.Annotations)
			}
		}
	}
	if pulls != 1 {
		t.Fatalf("%d pulls of the image volume's image, want 1 (policy Always, one sync started containers)", pulls)
	}
	cfg := h.createConfigs()["reader"]
	if cfg == nil {
		t.Fatal("reader not created")
	}
	var got []*runtimeapi.Mount
	for _, m := range cfg.Mounts {
		if m.Image != nil {
			got = append(got, m)
		}
	}
	if len(got) != 2 {
		t.Fatalf("%d image mounts, want 2: %v", len(got), cfg.Mounts)
	}
	for i, want := range []struct{ path, sub string }{{"/volume", ""}, {"/etc-only", "etc"}} {
		m := got[i]
		if m.ContainerPath != want.path || m.ImageSubPath != want.sub || m.HostPath != "" || !m.Readonly {
			t.Errorf("mount %d: path %q subPath %q hostPath %q readonly %v, want %q %q \"\" true", i, m.ContainerPath, m.ImageSubPath, m.HostPath, m.Readonly, want.path, want.sub)
		}
		if m.Image.UserSpecifiedImage != "example.com/kitten:1.8" || !strings.HasPrefix(m.Image.Image, "sha256:") || m.Image.Annotations["a"] != "b" {
			t.Errorf("mount %d image %+v, want the pulled image's ID, the reference asked for and the pod's annotations", i, m.Image)
		}
	}
	for _, m := range h.createConfigs()["plain"].Mounts {
		if m.Image != nil {
			t.Errorf("plain mounts the image volume it does not ask for: %v", m)
		}
	}
}

// A failed image volume pull fails only the containers that mount it,
// each with the pull's error (the waiting reason) and a Failed event, as
// kubelet's toKubeContainerImageVolumes; the others start.
func TestImageVolumePullFails(t *testing.T) {
	h := newHarness(t, false, []fake.Option{fake.WithRegistryImages("busybox:1.35")})
	pod := imageVolumePod(corev1.PullIfNotPresent)
	r := h.sync(pod)
	var readerErr error
	for _, sr := range r.Results {
		if sr.Target == "reader" {
			readerErr = sr.Err
		}
		if sr.Target == "plain" && sr.Err != nil {
			t.Errorf("plain failed: %v", sr.Err)
		}
	}
	if !errors.Is(readerErr, images.ErrImagePull) {
		t.Fatalf("reader's start error %v, want ErrImagePull", readerErr)
	}
	if !h.ev.has("Failed: Error: ErrImagePull") {
		t.Errorf("no Failed event for the image volume on reader: %v", h.ev.list)
	}
	if got := h.createConfigs(); got["reader"] != nil || got["plain"] == nil {
		t.Fatalf("created %v, want plain alone", h.created())
	}
	// The next sync is held back by the pull's back-off, as a container
	// image's would be.
	if r := h.sync(pod); !errors.Is(r.Error(), images.ErrImagePullBackOff) {
		t.Fatalf("second sync: %v, want ImagePullBackOff", r.Error())
	}
}

// A pull policy of Never with the image absent is kubelet's
// ErrImageNeverPull for the containers that mount it.
func TestImageVolumeNeverPull(t *testing.T) {
	h := newHarness(t, false, nil)
	r := h.sync(imageVolumePod(corev1.PullNever))
	if !errors.Is(r.Error(), images.ErrImageNeverPull) {
		t.Fatalf("sync: %v, want ErrImageNeverPull", r.Error())
	}
}

// An ImageEnsurer that cannot pull image volumes fails the containers that
// mount one, naming the volume, never running them without it.
func TestImageVolumeWithoutPuller(t *testing.T) {
	h := newHarness(t, false, nil)
	s := podsync.NewSyncer(h.rt, containerImagesOnly{h.ims}, h.opts...)
	pod := imageVolumePod(corev1.PullAlways)
	st, err := s.Status(t.Context(), pod)
	if err != nil {
		t.Fatal(err)
	}
	r := s.SyncPod(t.Context(), pod, st, nil)
	err = nil
	msg := ""
	for _, sr := range r.Results {
		if sr.Target == "reader" {
			err, msg = sr.Err, sr.Message
		}
	}
	if !errors.Is(err, podsync.ErrVolumeNotSupported) || !errors.Is(err, podsync.ErrCreateContainerConfig) || !strings.Contains(msg, `volume "data"`) {
		t.Fatalf("sync: %v (%s), want CreateContainerConfigError naming volume data", err, msg)
	}
	if got := h.createConfigs(); got["reader"] != nil {
		t.Fatal("reader created without its image volume")
	}
}

// containerImagesOnly hides EnsureImageVolume.
type containerImagesOnly struct{ podsync.ImageEnsurer }
