package diff

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/kubernetes/pkg/volume/configmap"
	"k8s.io/kubernetes/pkg/volume/downwardapi"
	"k8s.io/kubernetes/pkg/volume/secret"
	volumeutil "k8s.io/kubernetes/pkg/volume/util"

	"github.com/podstart/podstart/apiobjects"
	"github.com/podstart/podstart/mounts"
)

var (
	payloadKeys  = []string{"a", "b", "foo", "key.1", "x_y", "-", "cfg.yaml"}
	payloadPaths = []string{"a", "b", "path/to/a.txt", "a//b", "x/./y", "dup", "dup", "deep/1/2/3", "ca.crt"}
	payloadModes = []int32{0o400, 0o440, 0o600, 0o640, 0o644, 0o755, 0o777, 0}
)

func randomMode(r *rand.Rand) *int32 {
	switch r.IntN(8) {
	case 0:
		return nil
	case 1:
		m := r.Int32N(0o10000)
		return &m
	}
	m := pick(r, payloadModes)
	return &m
}

func randomItems(r *rand.Rand) []corev1.KeyToPath {
	var items []corev1.KeyToPath
	for range r.IntN(4) {
		it := corev1.KeyToPath{Key: pick(r, payloadKeys), Path: pick(r, payloadPaths)}
		if r.IntN(3) == 0 {
			it.Mode = randomMode(r)
		}
		items = append(items, it)
	}
	return items
}

func itemModes(items []corev1.KeyToPath) []*int32 {
	var modes []*int32
	for _, it := range items {
		modes = append(modes, it.Mode)
	}
	return modes
}

func randomBytes(r *rand.Rand) []byte {
	if r.IntN(6) == 0 {
		return nil
	}
	return []byte(trickyString(r, 4))
}

// defaultModeOf is nil now and then: kubelet's "no defaultMode" error.
func defaultModeOf(r *rand.Rand) *int32 {
	if r.IntN(20) == 0 {
		return nil
	}
	m := pick(r, payloadModes)
	return &m
}

// apiValidModes says whether every mode is one the API server accepts
// (0 to 0777). kubelet never sees another, since the API server refuses
// the pod; podstart refuses it itself (apiobjects.ErrInvalidMode) rather
// than turn it into setuid, setgid or sticky files, so such inputs are
// checked for that refusal instead of compared with kubelet.
func apiValidModes(modes ...*int32) bool {
	for _, m := range modes {
		if m != nil && (*m < 0 || *m > 0o777) {
			return false
		}
	}
	return true
}

// refusedMode checks podstart's answer to an input with a mode the API
// server refuses: refused, with ErrInvalidMode unless an error kubelet
// also gives (no defaultMode) came first.
func refusedMode(d *differences, what string, gotErr error) {
	if gotErr == nil || (!errors.Is(gotErr, apiobjects.ErrInvalidMode) && !strings.Contains(gotErr.Error(), "no defaultMode used")) {
		d.add("%s with a mode outside 0-0777: podstart's error %v, want ErrInvalidMode", what, gotErr)
	}
}

// samePayload compares podstart's payload and error with kubelet's: the
// same names, contents, modes (kubelet writes os.FileMode(mode)) and
// owners, or errors with the same message.
func samePayload(got map[string]mounts.File, gotErr error, want map[string]volumeutil.FileProjection, wantErr error) string {
	switch {
	case (gotErr == nil) != (wantErr == nil):
		return fmt.Sprintf("error %v, kubelet's %v", gotErr, wantErr)
	case gotErr != nil:
		if gotErr.Error() != wantErr.Error() {
			return fmt.Sprintf("error %q, kubelet's %q", gotErr, wantErr)
		}
		return ""
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d files %v, kubelet's %d %v", len(got), slices.Sorted(mapKeys(got)), len(want), slices.Sorted(mapKeys(want)))
	}
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			return fmt.Sprintf("no file %q", p)
		case !bytes.Equal(g.Data, w.Data):
			return fmt.Sprintf("%q: %q, kubelet's %q", p, g.Data, w.Data)
		case g.Mode != fs.FileMode(w.Mode):
			return fmt.Sprintf("%q: mode %v, kubelet's %v", p, g.Mode, fs.FileMode(w.Mode))
		case (g.FsUser == nil) != (w.FsUser == nil) || g.FsUser != nil && *g.FsUser != *w.FsUser:
			return fmt.Sprintf("%q: fsUser %v, kubelet's %v", p, g.FsUser, w.FsUser)
		}
	}
	return ""
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestSecretPayload compares apiobjects.SecretPayload with kubelet's
// secret.MakePayload.
func TestSecretPayload(t *testing.T) {
	r := newRand(t)
	n := cases(4000)
	d := differences{t: t}
	for range n {
		s := &corev1.Secret{}
		if r.IntN(6) > 0 {
			s.Data = map[string][]byte{}
			for range r.IntN(4) {
				s.Data[pick(r, payloadKeys)] = randomBytes(r)
			}
		}
		items, mode, optional := randomItems(r), defaultModeOf(r), r.IntN(2) == 0
		got, gotErr := apiobjects.SecretPayload(items, s, mode, optional)
		if !apiValidModes(append(itemModes(items), mode)...) {
			refusedMode(&d, "secret", gotErr)
			continue
		}
		want, wantErr := secret.MakePayload(items, s, mode, nil, optional)
		if diff := samePayload(got, gotErr, want, wantErr); diff != "" {
			d.add("secret %v items %+v defaultMode %v optional %v: %s", s.Data, items, mode, optional, diff)
		}
	}
	d.report(n, "Secret payloads")
}

// TestConfigMapPayload compares apiobjects.ConfigMapPayload with
// kubelet's configmap.MakePayload (keys in Data, BinaryData or both).
func TestConfigMapPayload(t *testing.T) {
	r := newRand(t)
	n := cases(4000)
	d := differences{t: t}
	for range n {
		cm := &corev1.ConfigMap{}
		if r.IntN(4) > 0 {
			cm.Data = map[string]string{}
			for range r.IntN(4) {
				cm.Data[pick(r, payloadKeys)] = trickyString(r, 4)
			}
		}
		if r.IntN(2) == 0 {
			cm.BinaryData = map[string][]byte{}
			for range r.IntN(3) {
				cm.BinaryData[pick(r, payloadKeys)] = randomBytes(r)
			}
		}
		items, mode, optional := randomItems(r), defaultModeOf(r), r.IntN(2) == 0
		got, gotErr := apiobjects.ConfigMapPayload(items, cm, mode, optional)
		if !apiValidModes(append(itemModes(items), mode)...) {
			refusedMode(&d, "configMap", gotErr)
			continue
		}
		want, wantErr := configmap.MakePayload(items, cm, mode, nil, optional)
		if diff := samePayload(got, gotErr, want, wantErr); diff != "" {
			d.add("configmap %v %v items %+v defaultMode %v optional %v: %s", cm.Data, cm.BinaryData, items, mode, optional, diff)
		}
	}
	d.report(n, "ConfigMap payloads")
}

// allocatableHost is the one method of a VolumeHost that CollectData
// calls; the others are left nil and never called.
type allocatableHost struct {
	volume.VolumeHost
	allocatable corev1.ResourceList
}

func (h allocatableHost) GetNodeAllocatable() (corev1.ResourceList, error) { return h.allocatable, nil }

var (
	downwardFieldPaths = []string{
		"metadata.name", "metadata.namespace", "metadata.uid", "metadata.labels", "metadata.annotations",
		"metadata.labels['app']", "metadata.labels['x.io/tier']", "metadata.labels['']", "metadata.labels['Bad Key']",
		"metadata.annotations['A1']", "metadata.annotations['x.io/note']", "metadata.annotations['-bad']", "metadata.annotations['a']",
		"metadata.name['x']", "['app']", "metadata.labels[']", "metadata.labels['a']']",
		"spec.nodeName", "spec.serviceAccountName", "status.podIP", "status.hostIP", "metadata.generation", "",
	}
	downwardResources = []string{
		"limits.cpu", "limits.memory", "limits.ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
		"limits.hugepages-2Mi", "requests.hugepages-1Gi", "limits.hugepages-", "requests.nvidia.com/gpu", "cpu", "limits.", "",
	}
	downwardQuantities = []string{"0", "0", "0", "1", "100m", "250m", "1500m", "2", "64Mi", "1Gi", "1G", "3", "123456789", "0.5"}
	downwardDivisors   = []string{"", "1", "1m", "100m", "1k", "1Ki", "1Mi", "1M", "1Gi", "3"}
)

func randomResources(r *rand.Rand) corev1.ResourceList {
	if r.IntN(4) == 0 {
		return nil
	}
	l := corev1.ResourceList{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, "hugepages-2Mi", "hugepages-1Gi", "nvidia.com/gpu"} {
		if r.IntN(2) == 0 {
			l[name] = resource.MustParse(pick(r, downwardQuantities))
		}
	}
	return l
}

func randomLabels(r *rand.Rand) map[string]string {
	if r.IntN(4) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, k := range []string{"app", "x.io/tier", "A1", "a", "x.io/note", "z"} {
		if r.IntN(2) == 0 {
			m[k] = trickyString(r, 3)
		}
	}
	return m
}

// TestDownwardAPIPayload compares apiobjects.DownwardAPIPayload with
// kubelet's downwardapi.CollectData: field paths valid and not, subscripts
// valid and not, resources of app and init containers with the node's
// allocatable standing in for missing limits, divisors, modes.
func TestDownwardAPIPayload(t *testing.T) {
	r := newRand(t)
	n := cases(4000)
	d := differences{t: t}
	for range n {
		pod := &corev1.Pod{}
		pod.Name, pod.Namespace, pod.UID = trickyString(r, 2), pick(r, []string{"", "default", "ns"}), "uid-1"
		pod.Labels, pod.Annotations = randomLabels(r), randomLabels(r)
		pod.Spec.NodeName = "node"
		for _, name := range []string{"app", "side", "init"}[:r.IntN(4)] {
			c := corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Limits: randomResources(r), Requests: randomResources(r)}}
			if name == "init" {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
			} else {
				pod.Spec.Containers = append(pod.Spec.Containers, c)
			}
		}
		var items []corev1.DownwardAPIVolumeFile
		for range r.IntN(4) {
			it := corev1.DownwardAPIVolumeFile{Path: pick(r, payloadPaths)}
			switch r.IntN(5) {
			case 0, 1:
				it.FieldRef = &corev1.ObjectFieldSelector{FieldPath: pick(r, downwardFieldPaths)}
			case 2, 3:
				it.ResourceFieldRef = &corev1.ResourceFieldSelector{ContainerName: pick(r, []string{"app", "side", "init", "none", ""}), Resource: pick(r, downwardResources)}
				if div := pick(r, downwardDivisors); div != "" {
					it.ResourceFieldRef.Divisor = resource.MustParse(div)
				}
			}
			if r.IntN(3) == 0 {
				it.Mode = randomMode(r)
			}
			items = append(items, it)
		}
		allocatable := randomResources(r)
		mode := defaultModeOf(r)
		got, gotErr := apiobjects.DownwardAPIPayload(items, pod, allocatable, mode)
		modes := []*int32{mode}
		for _, it := range items {
			modes = append(modes, it.Mode)
		}
		if !apiValidModes(modes...) {
			refusedMode(&d, "downward API", gotErr)
			continue
		}
		want, wantErr := downwardapi.CollectData(items, pod, allocatableHost{allocatable: allocatable}, mode, nil)
		if diff := samePayload(got, gotErr, want, wantErr); diff != "" {
			d.add("downward API items %s on pod %+v / %+v, allocatable %v: %s", showItems(items), pod.ObjectMeta, pod.Spec.Containers, allocatable, diff)
		}
	}
	d.report(n, "downward API payloads")
}

func showItems(items []corev1.DownwardAPIVolumeFile) string {
	var b strings.Builder
	for _, it := range items {
		fmt.Fprintf(&b, "{%q", it.Path)
		if it.FieldRef != nil {
			fmt.Fprintf(&b, " field %q", it.FieldRef.FieldPath)
		}
		if f := it.ResourceFieldRef; f != nil {
			fmt.Fprintf(&b, " resource %q of %q / %s", f.Resource, f.ContainerName, f.Divisor.String())
		}
		b.WriteString("} ")
	}
	return b.String()
}
