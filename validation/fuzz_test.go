package validation

import (
	"encoding/json"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/podstart/podstart/defaults"
)

// FuzzPod: any pod decoded from JSON is checked without a panic, and the
// answer does not change when the pod is defaulted first (defaults.Pod is
// the API server's defaulting): Pod accepts exactly the empty fields
// defaulting fills. The seeds are testdata's pods and the hostile pods of
// testdata/fuzz/FuzzPod.
func FuzzPod(f *testing.F) {
	for _, name := range []string{"testdata/demo-pod.yaml"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(b)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(j)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var pod corev1.Pod
		if json.Unmarshal(data, &pod) != nil {
			return
		}
		errs := Pod(&pod)
		defaulted := pod.DeepCopy()
		defaults.Pod(defaulted)
		derrs := Pod(defaulted)
		if (len(errs) == 0) != (len(derrs) == 0) {
			t.Fatalf("undefaulted: %v\ndefaulted: %v", errs.ToAggregate(), derrs.ToAggregate())
		}
	})
}
