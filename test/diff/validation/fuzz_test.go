package validationdiff

import (
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/validation"
)

// FuzzValidatePod decodes a v1 pod from JSON (or, for input that is not
// JSON, generates one seeded by it, with up to three mutations it picks)
// and checks that podstart never
// accepts a pod the API server refuses, that its answer (accept or refuse)
// is the same before and after the API server's defaulting, and that it
// never panics. Fields outside the comparison (doc.go) are cleared first:
// the metadata other than name, namespace, UID, labels and annotations, the
// status, and the spec fields validation does not check.
//
// The seed corpus (testdata/fuzz/FuzzValidatePod) runs with go test; with
// -fuzz the fuzzer mutates the JSON:
//
//	go test -run '^$' -fuzz FuzzValidatePod -fuzztime 5m .
func FuzzValidatePod(f *testing.F) {
	g := &gen{r: rand.New(rand.NewPCG(1, 2))}
	for i := range 4 { // valid and hostile pods; testdata holds more
		pod := g.pod()
		if i%2 == 1 {
			g.mutate(pod)
		}
		js, err := json.Marshal(pod)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(js)
	}
	f.Add([]byte("\x01\x02\x03\x04\x05\x06\x07\x08\x10\x20\x30")) // a generated pod, three mutations
	f.Fuzz(func(t *testing.T, data []byte) {
		var pod corev1.Pod
		if err := json.Unmarshal(data, &pod); err != nil {
			// Not JSON: the bytes seed the generator and pick its
			// mutations (a structured decoder of sorts), so that most
			// inputs still make a pod.
			if len(data) < 8 {
				return
			}
			g := &gen{r: rand.New(rand.NewPCG(binary.LittleEndian.Uint64(data), uint64(len(data))))}
			pod = *g.pod()
			for _, b := range data[8:min(len(data), 11)] {
				catalogue[int(b)%len(catalogue)].apply(g, &pod)
			}
		}
		inComparison(&pod)
		v := compare(&pod) // a panic in validation.Pod fails the input
		if len(v.api) == 1 && v.api[0].Type == "InternalError" {
			t.Skipf("the API server's path failed: %v", v.api[0])
		}
		if len(v.api) > 0 && len(withoutDeliberate(v.podstart)) == 0 {
			t.Errorf("the API server refuses the pod, podstart accepts it:%s\npod: %s", errList(v.api), data)
		}
		if (len(v.podstart) == 0) != (len(v.podstartDefaulted) == 0) {
			t.Errorf("podstart's answers differ before and after defaulting:%s\nafter:%s\npod: %s", errList(v.podstart), errList(v.podstartDefaulted), data)
		}
		_ = validation.Check(&pod) // and Check does not panic either
	})
}

// inComparison clears what TestValidatePod keeps at zero (doc.go): the
// fields validation does not check, and what the API server sets itself.
func inComparison(pod *corev1.Pod) {
	pod.ObjectMeta = metav1.ObjectMeta{
		Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, Labels: pod.Labels, Annotations: pod.Annotations,
	}
	pod.Status = corev1.PodStatus{}
	s := &pod.Spec
	s.Affinity = nil
	s.Tolerations = nil
	s.TopologySpreadConstraints = nil
	s.SchedulingGates = nil
	s.ResourceClaims = nil
	s.SchedulerName = ""
	s.Priority = nil
	s.SchedulingGroup = nil
	s.EvictionResponders = nil
	if s.OS != nil && s.OS.Name == corev1.Windows {
		s.OS = nil
	}
	if s.SecurityContext != nil {
		s.SecurityContext.WindowsOptions = nil
	}
	for _, c := range containers(pod) {
		c.Resources.Claims = nil
		if c.SecurityContext != nil {
			c.SecurityContext.WindowsOptions = nil
		}
	}
}
