package dratier

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// knownDifferences are the report fields where podstart deliberately or
// knowingly differs from kubelet v1.37.2, with why; TestCompare fails on
// a difference in any other field.
var knownDifferences = map[string]string{
	"Status.resources": "not DRA: at the moment the pod is Ready, podstart's status has the BestEffort pod's " +
		"pod-level limits.memory read from its cgroup v1 pod cgroup (the kernel's unlimited value, 9007199254740988Ki), " +
		"kubelet's {}: kubelet fills status.resources from the cgroup only when the pod it generates the status " +
		"from is Running in the API (convertToAPIPodLevelResourcesStatus), which it is at kubelet's next sync, " +
		"not yet at the one that made it Ready; apistatus.podResources makes the same check, so podstart " +
		"generated again after the API had it Running (left to the lead: which sync, and whether kubelet's next " +
		"one reports the same value)",
}

// TestCompare diffs what the podstart node and kubelet v1.37.2 did for the
// same pods with the same driver (run.sh runs it after both nodes' runs).
func TestCompare(t *testing.T) {
	if os.Getenv("PODSTART_DRA_COMPARE") != "1" {
		t.Skip("TestCompare runs from test/dra/run.sh after both nodes' runs (PODSTART_DRA_COMPARE=1)")
	}
	dir := os.Getenv("PODSTART_DRA_REPORT")
	for _, scenario := range []string{"template", "direct"} {
		t.Run(scenario, func(t *testing.T) {
			ps, kl := readReport(t, dir, "podstart", scenario), readReport(t, dir, "kubelet", scenario)
			splitStatus(ps)
			splitStatus(kl)
			for field := range kl {
				d := cmp.Diff(kl[field], ps[field])
				if d == "" {
					t.Logf("%s: same", field)
					continue
				}
				if why, ok := knownDifferences[field]; ok {
					t.Logf("%s differs (known: %s) (-kubelet +podstart):\n%s", field, why, d)
					continue
				}
				t.Errorf("%s differs (-kubelet +podstart):\n%s", field, d)
			}
		})
	}
}

// splitStatus compares the pod-level resources of the status on their
// own (a known difference, not DRA's) and masks the generated suffix of
// the service account token volume's name.
func splitStatus(m map[string]any) {
	st, ok := m["Status"].(map[string]any)
	if !ok {
		return
	}
	m["Status.resources"] = st["resources"]
	delete(st, "resources")
	m["Status"] = maskValue("", st)
}

func readReport(t *testing.T, dir, kind, scenario string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, kind+"."+scenario+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
