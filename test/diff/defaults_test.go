package diff

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/core"
	k8scorev1 "k8s.io/kubernetes/pkg/apis/core/v1"
	"sigs.k8s.io/randfill"

	"github.com/podstart/podstart/defaults"
)

var (
	quantities = []string{
		"0", "1", "2", "100m", "0.0001", "1.0005", "1.5", "3.3333", "2000m", "1e3", "1k", "1Gi", "512Mi", "0.5Gi",
		"123456789012345678901234567890", "1.0000000001", "-1", "1n", "999999999999999999",
	}
	resourceNames = []corev1.ResourceName{
		"cpu", "memory", "hugepages-2Mi", "hugepages-1Gi", "ephemeral-storage", "storage", "example.com/gpu",
		"kubernetes.io/x", "requests.cpu", "pods",
	}
	// words are the strings that mean something to defaulting or to
	// kubelet: image names with and without tags and digests, enum values.
	words = []string{
		"nginx", "nginx:latest", "busybox:1.35", "localhost:5000/team/app", "r.io/a:latest@sha256:" + strings.Repeat("ab", 32),
		"r.io/a@sha256:" + strings.Repeat("0f", 32), "r.io/a@sha256:abc", "Nginx", "a:b:c", ":latest", "nginx:LATEST",
		"Always", "IfNotPresent", "Never", "OnFailure", "TCP", "UDP", "v1", "/", "HTTP", "HTTPS", "File",
		"ClusterFirst", "None", "default", "Directory",
	}
)

// randomPod fills every field of a pod at random (randfill), then empties
// or rewrites about two thirds of its strings and half of its integers,
// so that defaults apply and values mean something: without that, hardly
// any random field would be unset.
func randomPod(r *rand.Rand) *corev1.Pod {
	f := randfill.NewWithSeed(int64(r.Uint64())).NilChance(0.4).NumElements(0, 3).MaxDepth(24).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = resource.MustParse(quantities[c.Intn(len(quantities))])
		},
		func(n *corev1.ResourceName, c randfill.Continue) {
			*n = resourceNames[c.Intn(len(resourceNames))]
		},
		func(t *metav1.Time, c randfill.Continue) { *t = metav1.Time{} },
		func(v *intstr.IntOrString, c randfill.Continue) {
			if c.Intn(2) == 0 {
				*v = intstr.FromInt32(c.Int31n(100))
			} else {
				*v = intstr.FromString(words[c.Intn(len(words))])
			}
		},
		// One volume source or none, as a valid pod has.
		func(s *corev1.VolumeSource, c randfill.Continue) {
			*s = corev1.VolumeSource{}
			v := reflect.ValueOf(s).Elem()
			if i := c.Intn(v.NumField() + 5); i < v.NumField() {
				field := v.Field(i)
				field.Set(reflect.New(field.Type().Elem()))
				c.Fill(field.Interface())
			}
		},
		// Pointers to strings and integers stay nil as often as others.
		func(p **string, c randfill.Continue) {
			if c.Intn(2) == 0 {
				*p = new(string)
				c.Fill(*p)
			}
		},
		func(p **int32, c randfill.Continue) {
			if c.Intn(2) == 0 {
				*p = new(c.Int31())
			}
		},
		func(p **int64, c randfill.Continue) {
			if c.Intn(2) == 0 {
				*p = new(c.Int63())
			}
		},
	)
	pod := &corev1.Pod{}
	f.Fill(pod)
	pod.ManagedFields = nil // raw JSON, which random bytes are not
	blank(r, reflect.ValueOf(pod).Elem())
	return pod
}

// blank walks v and sets strings to "" or to a meaningful word, and
// integers to 0, at random.
func blank(r *rand.Rand, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			blank(r, v.Elem())
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[resource.Quantity]() {
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				blank(r, v.Field(i))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			blank(r, v.Index(i))
		}
	case reflect.String:
		if v.Type() == reflect.TypeFor[corev1.ContainerRestartPolicy]() {
			v.SetString(pick(r, []string{"", "Always", "Always", "Never"})) // sidecars
			return
		}
		switch r.IntN(3) {
		case 0:
			v.SetString("")
		case 1:
			v.SetString(pick(r, words))
		}
	case reflect.Int32, reflect.Int64:
		if r.IntN(2) == 0 {
			v.SetInt(0)
		}
	}
}

// apiServerDefaults is what the API server does to a v1 Pod before it
// stores it, as far as defaulting goes: pkg/apis/core/v1's defaulting
// functions registered in a scheme (applied when the pod is decoded), then
// the registry's pod-level resources defaulting (PrepareForCreate's
// podutil.DefaultPodLevelResources, on the internal pod, with v1.37's
// PodLevelResourcesFixDefaulting).
func apiServerDefaults(t *testing.T, scheme *runtime.Scheme, pod *corev1.Pod) {
	t.Helper()
	scheme.Default(pod)
	var internal core.Pod
	if err := k8scorev1.Convert_v1_Pod_To_core_Pod(pod, &internal, nil); err != nil {
		t.Fatal(err)
	}
	podutil.DefaultPodLevelResources(&internal)
	if internal.Spec.Resources == nil {
		return
	}
	var res corev1.ResourceRequirements
	if err := k8scorev1.Convert_core_ResourceRequirements_To_v1_ResourceRequirements(internal.Spec.Resources, &res, nil); err != nil {
		t.Fatal(err)
	}
	pod.Spec.Resources = &res
}

// TestDefaultsPod compares defaults.Pod with the API server's defaulting of
// a v1 Pod (apiServerDefaults, kubelet v1.37.2's default feature gates) on
// random pods: the two results must be deeply equal, quantities'
// representation included.
func TestDefaultsPod(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := k8scorev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	r := newRand(t)
	n := cases(5000)
	d := differences{t: t}
	sidecars, podLevel := 0, 0
	for range n {
		pod := randomPod(r)
		want := pod.DeepCopy()
		apiServerDefaults(t, scheme, want)
		got := pod.DeepCopy()
		defaults.Pod(got)
		if reflect.DeepEqual(got, want) {
			if pod.Spec.Resources != nil && len(pod.Spec.Resources.Limits) > 0 {
				podLevel++
			}
			for _, c := range pod.Spec.InitContainers {
				if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
					sidecars++
					break
				}
			}
			continue
		}
		diff := cmp.Diff(want, got, cmp.Transformer("quantity", func(q resource.Quantity) string {
			b, _ := json.Marshal(q)
			return string(b)
		}))
		if diff == "" {
			diff = "(only in the quantities' internal form)"
		}
		d.add("defaults.Pod differs from the API server's defaulting (-apiserver +podstart):\n%s", diff)
	}
	d.report(n, "pods")
	t.Logf("%d random pods, %d with pod-level limits, %d with a sidecar", n, podLevel, sidecars)
}
