package criconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ErrNotCrictlReadable: a config cannot be written as a file crictl reads
// back unchanged.
var ErrNotCrictlReadable = errors.New("config cannot be read by crictl")

// SandboxJSON writes cfg as the pod-config.json `crictl runp` reads:
// crictl decodes its file with apimachinery's YAML-or-JSON decoder, that
// is encoding/json over cri-api's Go types, so the JSON has their field
// names (snake_case: "log_directory", "cgroup_parent"), enums as numbers,
// and zero fields left out. It is indented for people. A config crictl
// would refuse (no metadata, name or namespace) is an error matching
// ErrNotCrictlReadable; crictl makes up a UID when metadata has none.
func SandboxJSON(cfg *runtimeapi.PodSandboxConfig) ([]byte, error) {
	if cfg.GetMetadata().GetName() == "" || cfg.GetMetadata().GetNamespace() == "" {
		return nil, fmt.Errorf("%w: a pod sandbox config needs metadata with a name and a namespace", ErrNotCrictlReadable)
	}
	return json.MarshalIndent(cfg, "", "  ")
}

// ContainerJSON writes cfg as the container-config.json `crictl create`
// reads, as SandboxJSON does (environment values are strings, cri-api's
// own JSON form). A config without metadata or name, or with an
// environment value that is not UTF-8 (cri-api's JSON form would replace
// its bytes), is an error matching ErrNotCrictlReadable.
func ContainerJSON(cfg *runtimeapi.ContainerConfig) ([]byte, error) {
	if cfg.GetMetadata().GetName() == "" {
		return nil, fmt.Errorf("%w: a container config needs metadata with a name", ErrNotCrictlReadable)
	}
	for _, e := range cfg.GetEnvs() {
		if !utf8.Valid(e.GetValue()) {
			return nil, fmt.Errorf("%w: environment variable %q is not UTF-8", ErrNotCrictlReadable, e.GetKey())
		}
	}
	return json.MarshalIndent(cfg, "", "  ")
}
