package nodestatus

import (
	"context"
	"fmt"
	"math"
	"net"
	goruntime "runtime"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/internal/hostinfo"
)

// Setter changes a Node in place, as one of kubelet's node status setters
// does. It may change part of the node before it returns an error.
type Setter func(ctx context.Context, node *corev1.Node) error

// RecordFunc records a node event of the given type and reason; kubelet's
// message for it is "Node <name> status is now: <reason>". Nil records
// nothing.
type RecordFunc func(eventType, reason string)

// Kubelet's event reasons for the node.
const (
	EventNodeReady    = "NodeReady"
	EventNodeNotReady = "NodeNotReady"
	EventNodeRebooted = "Rebooted"
)

// Kubelet's defaults for the node status.
const (
	// DefaultMaxPods is kubelet's maxPods.
	DefaultMaxPods = 110
	// DefaultKubeletPort is kubelet's port, the daemon endpoint.
	DefaultKubeletPort = 10250
	// DefaultMaxImages is kubelet's nodeStatusMaxImages.
	DefaultMaxImages = 50
	// MaxNamesPerImage is how many names of one image the status carries.
	MaxNamesPerImage = 5
	// AnnotationProvidedIPAddr is the node IP handed to an external cloud
	// provider (cloud-provider's AnnotationAlphaProvidedIPAddr).
	AnnotationProvidedIPAddr = "alpha.kubernetes.io/provided-node-ip"
)

// AddressConfig is what kubelet's NodeAddress setter reads from its flags.
type AddressConfig struct {
	// NodeIPs is kubelet's --node-ip: the primary IP, then an optional
	// secondary of the other family. 0.0.0.0 or :: means "detect, of that
	// family".
	NodeIPs []net.IP
	// Hostname is the node's hostname (kubelet's --hostname-override).
	Hostname string
	// ExternalCloudProvider is --cloud-provider=external: the provider
	// sets the addresses, kubelet only hints with an annotation.
	ExternalCloudProvider bool
	// ValidateNodeIP refuses an IP the node may not use; nil is kubelet's
	// check (not loopback, multicast, link-local or unspecified, and held
	// by one of the host's interfaces).
	ValidateNodeIP func(net.IP) error
	// LookupIP resolves the node's name; nil is net.LookupIP.
	LookupIP func(host string) ([]net.IP, error)
	// ResolveBindAddress picks the IP of the default route's interface;
	// nil is apimachinery's utilnet.ResolveBindAddress.
	ResolveBindAddress func(net.IP) (net.IP, error)
}

// NodeAddress is kubelet's NodeAddress setter: the node's InternalIP(s)
// and Hostname addresses, from --node-ip, an IP given as hostname, DNS or
// the default route's interface, in that order.
func NodeAddress(cfg AddressConfig) Setter {
	validate, lookup, resolve := cfg.ValidateNodeIP, cfg.LookupIP, cfg.ResolveBindAddress
	if validate == nil {
		validate = ValidateNodeIP
	}
	if lookup == nil {
		lookup = net.LookupIP
	}
	if resolve == nil {
		resolve = resolveBindAddress
	}
	var nodeIP, secondaryNodeIP net.IP
	if len(cfg.NodeIPs) > 0 {
		nodeIP = cfg.NodeIPs[0]
	}
	if len(cfg.NodeIPs) > 1 {
		secondaryNodeIP = cfg.NodeIPs[1]
	}
	preferIPv4 := nodeIP == nil || nodeIP.To4() != nil
	preferred := func(ip net.IP) bool { return (ip.To4() != nil) == preferIPv4 }
	nodeIPSet := nodeIP != nil && !nodeIP.IsUnspecified()
	secondarySet := secondaryNodeIP != nil && !secondaryNodeIP.IsUnspecified()
	hostname := cfg.Hostname

	return func(ctx context.Context, node *corev1.Node) error {
		if nodeIPSet {
			if err := validate(nodeIP); err != nil {
				return fmt.Errorf("failed to validate nodeIP: %v", err)
			}
		}
		if secondarySet {
			if err := validate(secondaryNodeIP); err != nil {
				return fmt.Errorf("failed to validate secondaryNodeIP: %v", err)
			}
		}
		if cfg.ExternalCloudProvider && nodeIPSet {
			if node.Annotations == nil {
				node.Annotations = map[string]string{}
			}
			a := nodeIP.String()
			if secondarySet {
				a += "," + secondaryNodeIP.String()
			}
			node.Annotations[AnnotationProvidedIPAddr] = a
		} else if node.Annotations != nil {
			delete(node.Annotations, AnnotationProvidedIPAddr)
		}
		if cfg.ExternalCloudProvider {
			if len(node.Status.Addresses) > 0 {
				return nil // the provider's addresses win
			}
			if nodeIP == nil {
				node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: hostname}}
				return nil
			}
		}
		if nodeIPSet && secondarySet {
			node.Status.Addresses = []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: nodeIP.String()},
				{Type: corev1.NodeInternalIP, Address: secondaryNodeIP.String()},
				{Type: corev1.NodeHostName, Address: hostname},
			}
			return nil
		}
		var ip net.IP
		var err error
		switch {
		case nodeIPSet:
			ip = nodeIP
		case parseIP(hostname) != nil:
			ip = parseIP(hostname)
		default:
			addrs, _ := lookup(node.Name)
			for _, a := range addrs {
				if err = validate(a); err == nil {
					if preferred(a) {
						ip = a
						break
					} else if ip == nil {
						ip = a
					}
				}
			}
			if ip == nil {
				ip, err = resolve(nodeIP)
			}
		}
		if ip == nil {
			return fmt.Errorf("can't get ip address of node %s. error: %v", node.Name, err)
		}
		node.Status.Addresses = []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: ip.String()},
			{Type: corev1.NodeHostName, Address: hostname},
		}
		return nil
	}
}

// ValidateNodeIP is kubelet's check of a node IP: a valid unicast address
// held by one of the host's interfaces.
func ValidateNodeIP(ip net.IP) error { return hostinfo.ValidateNodeIP(ip) }

// MachineConfig is what kubelet's MachineInfo setter takes besides the
// machine: limits from its configuration and the reservations.
type MachineConfig struct {
	// MaxPods is kubelet's maxPods (0: DefaultMaxPods); PodsPerCore
	// caps it at cores × PodsPerCore when positive.
	MaxPods     int
	PodsPerCore int
	// Reserved is subtracted from capacity to give allocatable (kubelet's
	// kube-reserved + system-reserved + hard eviction thresholds).
	Reserved corev1.ResourceList
	// Extended are capacities reported besides the machine's (device
	// plugins'); allocatable equals capacity for them.
	Extended corev1.ResourceList
	// DevicePlugins, when set, gives the device plugins' resources
	// (kubelet's GetDevicePluginResourceCapacity;
	// devicemanager.Manager.Capacity): capacity and allocatable per
	// resource, and the resources whose plugin is gone, whose capacity
	// is set to 0 (kubelet keeps them in the Node so that they are told
	// apart from cluster-level resources). Not called when the machine
	// is unknown, as kubelet does not.
	DevicePlugins func() (capacity, allocatable corev1.ResourceList, removed []string)
}

// MachineInfo is kubelet's MachineInfo setter: capacity from the machine
// (cpu, memory, huge pages, ephemeral storage, pods), allocatable as
// capacity minus reservations (huge pages also come off memory), node
// info's machine ID, system UUID, boot ID, swap and
// runningInUserNamespace (kubelet v1.37.2). info errors leave cpu
// and memory at zero, as kubelet does. A changed boot ID records one
// Rebooted event.
func MachineInfo(nodeName string, cfg MachineConfig, info func() (*Machine, error), record func(eventType, reason, message string)) Setter {
	maxPods := cfg.MaxPods
	if maxPods == 0 {
		maxPods = DefaultMaxPods
	}
	var rebooted sync.Once
	return func(ctx context.Context, node *corev1.Node) error {
		st := &node.Status
		if st.Capacity == nil {
			st.Capacity = corev1.ResourceList{}
		}
		var capacity, devAlloc corev1.ResourceList
		m, err := info()
		if err != nil {
			st.Capacity[corev1.ResourceCPU] = *resource.NewMilliQuantity(0, resource.DecimalSI)
			st.Capacity[corev1.ResourceMemory] = resource.MustParse("0Gi")
			st.Capacity[corev1.ResourcePods] = *resource.NewQuantity(int64(maxPods), resource.DecimalSI)
		} else {
			st.NodeInfo.MachineID, st.NodeInfo.SystemUUID = m.MachineID, m.SystemUUID
			for k, v := range m.Capacity() {
				st.Capacity[k] = v
			}
			pods := maxPods
			if cfg.PodsPerCore > 0 {
				pods = int(math.Min(float64(m.NumCores*cfg.PodsPerCore), float64(maxPods)))
			}
			st.Capacity[corev1.ResourcePods] = *resource.NewQuantity(int64(pods), resource.DecimalSI)
			if st.NodeInfo.BootID != "" && st.NodeInfo.BootID != m.BootID && record != nil {
				rebooted.Do(func() {
					record(corev1.EventTypeWarning, EventNodeRebooted, fmt.Sprintf("Node %s has been rebooted, boot id: %s", nodeName, m.BootID))
				})
			}
			st.NodeInfo.BootID = m.BootID
			if m.EphemeralStorage > 0 {
				st.Capacity[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(m.EphemeralStorage, resource.BinarySI)
			}
			for k, v := range cfg.Extended {
				st.Capacity[k] = v
			}
			if cfg.DevicePlugins != nil {
				var removed []string
				capacity, devAlloc, removed = cfg.DevicePlugins()
				for k, v := range capacity {
					st.Capacity[k] = v
				}
				for _, r := range removed {
					st.Capacity[corev1.ResourceName(r)] = *resource.NewQuantity(0, resource.DecimalSI)
				}
			}
			if m.SwapCapacity != 0 {
				swap := m.SwapCapacity
				st.NodeInfo.Swap = &corev1.NodeSwapStatus{Capacity: &swap}
			}
			// KubeletInUserNamespace, on by default since v1.37.
			st.NodeInfo.RunningInUserNamespace = m.RunningInUserNamespace
		}
		if st.Allocatable == nil {
			st.Allocatable = corev1.ResourceList{}
		}
		for k := range st.Allocatable {
			if _, ok := st.Capacity[k]; !ok && isExtendedResourceName(k) {
				delete(st.Allocatable, k)
			}
		}
		for k, v := range st.Capacity {
			value := v.DeepCopy()
			if r, ok := cfg.Reserved[k]; ok {
				value.Sub(r)
			}
			if value.Sign() < 0 {
				value.Set(0)
			}
			st.Allocatable[k] = value
		}
		for k, v := range devAlloc {
			st.Allocatable[k] = v
		}
		for k, v := range st.Capacity {
			if strings.HasPrefix(string(k), corev1.ResourceHugePagesPrefix) {
				mem := st.Allocatable[corev1.ResourceMemory]
				mem.Sub(v)
				if mem.Sign() < 0 {
					mem.Set(0)
				}
				st.Allocatable[corev1.ResourceMemory] = mem
			}
		}
		return nil
	}
}

// VersionInfo is kubelet's VersionInfo setter: kernel and OS image, the
// runtime as "<name>://<version>" (the version parsed as kubelet does,
// "Unknown" when the runtime does not answer), and kubelet's version.
// kubeProxyVersion is cleared (DisableNodeKubeProxyVersion, on by default).
func VersionInfo(kernelVersion, osImage string, runtimeVersion func(ctx context.Context) (*runtimeapi.VersionResponse, error), kubeletVersion string) Setter {
	return func(ctx context.Context, node *corev1.Node) error {
		ni := &node.Status.NodeInfo
		ni.KernelVersion, ni.OSImage = kernelVersion, osImage
		name, ver := "", "Unknown"
		if v, err := runtimeVersion(ctx); err == nil {
			name = v.GetRuntimeName()
			if s, err := ParseRuntimeVersion(v.GetRuntimeVersion()); err == nil {
				ver = s
			}
		}
		ni.ContainerRuntimeVersion = name + "://" + ver
		ni.KubeletVersion = kubeletVersion
		//lint:ignore SA1019 kubelet clears the deprecated field (DisableNodeKubeProxyVersion)
		ni.KubeProxyVersion = ""
		return nil
	}
}

// DaemonEndpoints is kubelet's DaemonEndpoints setter: the port kubelet's
// server listens on (0: DefaultKubeletPort).
func DaemonEndpoints(port int32) Setter {
	if port == 0 {
		port = DefaultKubeletPort
	}
	return func(ctx context.Context, node *corev1.Node) error {
		node.Status.DaemonEndpoints = corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: port}}
		return nil
	}
}

// Images is kubelet's Images setter: the node's images, largest first
// (ties by ID, descending, as kubelet's image cache sorts them), at most
// maxImages of them (-1: all), each with up to MaxNamesPerImage names,
// digests first.
func Images(maxImages int32, list func(ctx context.Context) ([]*runtimeapi.Image, error)) Setter {
	return func(ctx context.Context, node *corev1.Node) error {
		imgs, err := list(ctx)
		if err != nil {
			node.Status.Images = nil
			return fmt.Errorf("error getting image list: %v", err)
		}
		imgs = append([]*runtimeapi.Image(nil), imgs...)
		sort.SliceStable(imgs, func(i, j int) bool {
			if imgs[i].GetSize() == imgs[j].GetSize() {
				return imgs[i].GetId() > imgs[j].GetId()
			}
			return imgs[i].GetSize() > imgs[j].GetSize()
		})
		if maxImages > -1 && int(maxImages) < len(imgs) {
			imgs = imgs[:maxImages]
		}
		var out []corev1.ContainerImage
		for _, im := range imgs {
			names := append(append([]string{}, im.GetRepoDigests()...), im.GetRepoTags()...)
			if len(names) > MaxNamesPerImage {
				names = names[:MaxNamesPerImage]
			}
			out = append(out, corev1.ContainerImage{Names: names, SizeBytes: int64(im.GetSize())})
		}
		node.Status.Images = out
		return nil
	}
}

// GoRuntime is kubelet's GoRuntime setter: the node's OS and architecture.
func GoRuntime() Setter {
	return func(ctx context.Context, node *corev1.Node) error {
		node.Status.NodeInfo.OperatingSystem = goruntime.GOOS
		node.Status.NodeInfo.Architecture = goruntime.GOARCH
		return nil
	}
}

// ReadyCondition is kubelet's ReadyCondition setter. The node is Ready
// ("KubeletReady", "kubelet is posting ready status") unless errs returns
// errors or capacity lacks cpu, memory, pods (and ephemeral-storage with
// localStorageCapacityIsolation, kubelet's default): then NotReady
// ("KubeletNotReady") with the errors aggregated as kubelet does. The
// transition time is kept while the status holds; a change records
// NodeReady or NodeNotReady. softRequirements, if not nil, is appended to
// the message as a warning.
func ReadyCondition(now func() time.Time, errs func() []error, softRequirements func() error, localStorageCapacityIsolation bool, record RecordFunc) Setter {
	return func(ctx context.Context, node *corev1.Node) error {
		t := metav1.NewTime(now())
		c := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "kubelet is posting ready status", LastHeartbeatTime: t}
		var all []error
		if errs != nil {
			all = errs()
		}
		required := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods}
		if localStorageCapacityIsolation {
			required = append(required, corev1.ResourceEphemeralStorage)
		}
		var missing []string
		for _, r := range required {
			if _, ok := node.Status.Capacity[r]; !ok {
				missing = append(missing, string(r))
			}
		}
		if len(missing) > 0 {
			all = append(all, fmt.Errorf("missing node capacity for resources: %s", strings.Join(missing, ", ")))
		}
		if agg := utilerrors.NewAggregate(all); agg != nil {
			c = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
				Message: agg.Error(), LastHeartbeatTime: t}
		}
		if softRequirements != nil {
			if err := softRequirements(); err != nil {
				c.Message = fmt.Sprintf("%s. WARNING: %s", c.Message, err.Error())
			}
		}
		for i := range node.Status.Conditions {
			if node.Status.Conditions[i].Type != corev1.NodeReady {
				continue
			}
			old := node.Status.Conditions[i]
			c.LastTransitionTime = t
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			node.Status.Conditions[i] = c
			if old.Status != c.Status && record != nil {
				if c.Status == corev1.ConditionTrue {
					record(corev1.EventTypeNormal, EventNodeReady)
				} else {
					record(corev1.EventTypeNormal, EventNodeNotReady)
				}
			}
			return nil
		}
		c.LastTransitionTime = t
		node.Status.Conditions = append(node.Status.Conditions, c)
		return nil
	}
}

// pressure is one of kubelet's pressure conditions: its reasons, messages
// and events for true and false.
type pressure struct {
	typ                       corev1.NodeConditionType
	trueReason, trueMessage   string
	trueEvent                 string
	falseReason, falseMessage string
	falseEvent                string
}

var (
	memoryPressure = pressure{corev1.NodeMemoryPressure,
		"KubeletHasInsufficientMemory", "kubelet has insufficient memory available", "NodeHasInsufficientMemory",
		"KubeletHasSufficientMemory", "kubelet has sufficient memory available", "NodeHasSufficientMemory"}
	diskPressure = pressure{corev1.NodeDiskPressure,
		"KubeletHasDiskPressure", "kubelet has disk pressure", "NodeHasDiskPressure",
		"KubeletHasNoDiskPressure", "kubelet has no disk pressure", "NodeHasNoDiskPressure"}
	pidPressure = pressure{corev1.NodePIDPressure,
		"KubeletHasInsufficientPID", "kubelet has insufficient PID available", "NodeHasInsufficientPID",
		"KubeletHasSufficientPID", "kubelet has sufficient PID available", "NodeHasSufficientPID"}
)

// MemoryPressureCondition is kubelet's MemoryPressureCondition setter.
// under nil means never under pressure (a node without an eviction
// manager).
func MemoryPressureCondition(now func() time.Time, under func() bool, record RecordFunc) Setter {
	return memoryPressure.setter(now, under, record)
}

// DiskPressureCondition is kubelet's DiskPressureCondition setter.
func DiskPressureCondition(now func() time.Time, under func() bool, record RecordFunc) Setter {
	return diskPressure.setter(now, under, record)
}

// PIDPressureCondition is kubelet's PIDPressureCondition setter.
func PIDPressureCondition(now func() time.Time, under func() bool, record RecordFunc) Setter {
	return pidPressure.setter(now, under, record)
}

// setter: the heartbeat time always moves; status, reason, message and
// transition time change (and an event is recorded) only on a transition,
// a new condition starting as Unknown.
func (p pressure) setter(now func() time.Time, under func() bool, record RecordFunc) Setter {
	return func(ctx context.Context, node *corev1.Node) error {
		t := metav1.NewTime(now())
		var c *corev1.NodeCondition
		for i := range node.Status.Conditions {
			if node.Status.Conditions[i].Type == p.typ {
				c = &node.Status.Conditions[i]
			}
		}
		isNew := c == nil
		if isNew {
			c = &corev1.NodeCondition{Type: p.typ, Status: corev1.ConditionUnknown}
		}
		c.LastHeartbeatTime = t
		status, reason, message, event := corev1.ConditionFalse, p.falseReason, p.falseMessage, p.falseEvent
		if under != nil && under() {
			status, reason, message, event = corev1.ConditionTrue, p.trueReason, p.trueMessage, p.trueEvent
		}
		if c.Status != status {
			c.Status, c.Reason, c.Message, c.LastTransitionTime = status, reason, message, t
			if record != nil {
				record(corev1.EventTypeNormal, event)
			}
		}
		if isNew {
			node.Status.Conditions = append(node.Status.Conditions, *c)
		}
		return nil
	}
}

// StatusChanged is kubelet's nodeStatusHasChanged: whether the status
// differs in anything but the conditions' heartbeat times (conditions
// compared by type, in any order).
func StatusChanged(old, cur *corev1.NodeStatus) bool {
	if old == nil || cur == nil {
		return old != cur
	}
	if len(old.Conditions) != len(cur.Conditions) {
		return true
	}
	a := append([]corev1.NodeCondition(nil), old.Conditions...)
	b := append([]corev1.NodeCondition(nil), cur.Conditions...)
	sort.SliceStable(a, func(i, j int) bool { return a[i].Type < a[j].Type })
	sort.SliceStable(b, func(i, j int) bool { return b[i].Type < b[j].Type })
	for i := range a {
		a[i].LastHeartbeatTime, b[i].LastHeartbeatTime = metav1.Time{}, metav1.Time{}
		if !equality.Semantic.DeepEqual(&a[i], &b[i]) {
			return true
		}
	}
	oc, cc := old.DeepCopy(), cur.DeepCopy()
	oc.Conditions, cc.Conditions = nil, nil
	return !equality.Semantic.DeepEqual(oc, cc)
}

// VolumesInUse is kubelet's VolumesInUse setter: node.status.volumesInUse
// is inUse's answer (volumemanager's VolumesInUse) once synced says the
// volume manager's states are synced (nil: always). It leaves the field
// as it was before then, so a restarted agent does not report its
// volumes unused before it has found them.
func VolumesInUse(synced func() bool, inUse func() []corev1.UniqueVolumeName) Setter {
	return func(_ context.Context, node *corev1.Node) error {
		if synced == nil || synced() {
			node.Status.VolumesInUse = inUse()
		}
		return nil
	}
}
