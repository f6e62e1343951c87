package kubeletrun

import (
	"testing"

	"sigs.k8s.io/yaml"
)

// The tiers' kubelet shares containerd with podstart's tests: it must not
// rotate their containers' logs (see Config), in every configuration.
func TestYAMLTurnsLogRotationOff(t *testing.T) {
	for _, c := range []Config{
		{Endpoint: "unix:///x.sock", Port: 10250, PodLogsDir: "/logs"},
		{Endpoint: "unix:///x.sock", Port: 10250, PodLogsDir: "/logs", PodCgroups: true, CgroupRoot: "/tier", StaticPodPath: "/manifests"},
	} {
		var cfg map[string]any
		if err := yaml.Unmarshal([]byte(c.YAML()), &cfg); err != nil {
			t.Fatal(err)
		}
		// kubelet's NewContainerLogManager: a negative maximum size is a
		// manager that does nothing.
		if got := cfg["containerLogMaxSize"]; got != "-1" {
			t.Errorf("containerLogMaxSize %v (%T), want \"-1\" (rotation off)", got, got)
		}
	}
}
