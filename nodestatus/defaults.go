package nodestatus

import (
	"context"
	"errors"
	"strings"
	"sync"

	apiruntime "k8s.io/apimachinery/pkg/runtime"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

var errNoRuntime = errors.New("no runtime")

// EventRecorder has the method of client-go's record.EventRecorder that
// the node's events need, so a caller's recorder fits unchanged.
type EventRecorder interface {
	Eventf(object apiruntime.Object, eventtype, reason, messageFmt string, args ...any)
}

// Versioner is the runtime's CRI Version call (runtime.RuntimeService has it).
type Versioner interface {
	Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error)
}

// ImageLister is the runtime's CRI ListImages call (runtime.ImageService has it).
type ImageLister interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
}

// SetterConfig is what kubelet's default node status setters read.
type SetterConfig struct {
	// NodeName names the node in events.
	NodeName string
	// Address configures NodeAddress; its Hostname defaults to NodeName.
	Address AddressConfig
	// Machine configures MachineInfo. MachineInfo, if not nil, describes
	// the machine; nil reads it once with MachineFromHost(RootDir), as
	// kubelet caches cAdvisor's answer.
	Machine     MachineConfig
	MachineInfo func() (*Machine, error)
	RootDir     string
	// KernelVersion and OSImage go to node info; empty ones are read from
	// the host (/proc/sys/kernel/osrelease, PRETTY_NAME of /etc/os-release).
	KernelVersion, OSImage string
	// Runtime is asked for its version on every update.
	Runtime Versioner
	// Images, if not nil, gives the node's image list, MaxImages of them
	// (0: DefaultMaxImages, -1: all).
	Images    ImageLister
	MaxImages int32
	// KubeletVersion is reported as the node's kubelet version.
	KubeletVersion string
	// KubeletPort is the daemon endpoint (0: DefaultKubeletPort).
	KubeletPort int32
	// State feeds ReadyCondition (nil: no runtime errors). ShutdownErrors
	// and StorageErrors, if set, add their errors as kubelet's shutdown
	// manager and storage state do.
	State                           *RuntimeState
	StorageErrors, ShutdownErrors   func() error
	MemoryPressure, DiskPressure    func() bool
	PIDPressure                     func() bool
	NoLocalStorageCapacityIsolation bool
	// Clock stamps the conditions (default: the real clock).
	Clock clock.PassiveClock
	// Recorder receives the node's events (nil: none).
	Recorder EventRecorder
	// EventRef names the node in those events (nil: NewEventRef(NodeName)).
	// Give the one your other node events use, so they all carry the
	// Node's UID once a status update has seen it.
	EventRef *EventRef
}

// DefaultSetters is kubelet's defaultNodeStatusFuncs, in its order (after
// the EventRef's Setter, which learns the Node's UID for events):
// addresses, machine info, version info, daemon endpoints, images (if
// Images is set), OS and architecture, then the memory, disk and PID
// pressure conditions and Ready last.
func DefaultSetters(cfg SetterConfig) []Setter {
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	if cfg.Address.Hostname == "" {
		cfg.Address.Hostname = cfg.NodeName
	}
	info := cfg.MachineInfo
	if info == nil {
		info = sync.OnceValues(func() (*Machine, error) {
			m := MachineFromHost(cfg.RootDir)
			return &m, nil
		})
	}
	if cfg.KernelVersion == "" {
		cfg.KernelVersion = readTrimmed("/proc/sys/kernel/osrelease")
	}
	if cfg.OSImage == "" {
		cfg.OSImage = osImage(readTrimmed("/etc/os-release"))
	}
	nodeRef := cfg.EventRef
	if nodeRef == nil {
		nodeRef = NewEventRef(cfg.NodeName)
	}
	var record RecordFunc
	var recordMsg func(eventType, reason, message string)
	if cfg.Recorder != nil {
		record = func(eventType, reason string) {
			cfg.Recorder.Eventf(nodeRef.Ref(), eventType, reason, "Node %s status is now: %s", cfg.NodeName, reason)
		}
		recordMsg = func(eventType, reason, message string) {
			cfg.Recorder.Eventf(nodeRef.Ref(), eventType, reason, "%s", message)
		}
	}
	version := func(ctx context.Context) (*runtimeapi.VersionResponse, error) {
		if cfg.Runtime == nil {
			return nil, errNoRuntime
		}
		return cfg.Runtime.Version(ctx, "v1")
	}
	setters := []Setter{
		nodeRef.Setter(),
		NodeAddress(cfg.Address),
		MachineInfo(cfg.NodeName, cfg.Machine, info, recordMsg),
		VersionInfo(cfg.KernelVersion, cfg.OSImage, version, cfg.KubeletVersion),
		DaemonEndpoints(cfg.KubeletPort),
	}
	if cfg.Images != nil {
		max := cfg.MaxImages
		if max == 0 {
			max = DefaultMaxImages
		}
		setters = append(setters, Images(max, func(ctx context.Context) ([]*runtimeapi.Image, error) {
			return cfg.Images.ListImages(ctx, nil)
		}))
	}
	errs := func() []error {
		var out []error
		if cfg.State != nil {
			out = append(out, cfg.State.Errors()...)
		}
		for _, f := range []func() error{cfg.StorageErrors, cfg.ShutdownErrors} {
			if f != nil {
				out = append(out, f())
			}
		}
		return out
	}
	return append(setters,
		GoRuntime(),
		MemoryPressureCondition(clk.Now, cfg.MemoryPressure, record),
		DiskPressureCondition(clk.Now, cfg.DiskPressure, record),
		PIDPressureCondition(clk.Now, cfg.PIDPressure, record),
		ReadyCondition(clk.Now, errs, nil, !cfg.NoLocalStorageCapacityIsolation, record),
	)
}

// osImage is cAdvisor's container OS version: PRETTY_NAME of os-release,
// "Linux" without one.
func osImage(osRelease string) string {
	for _, l := range strings.Split(osRelease, "\n") {
		if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	return "Linux"
}
