package cgroups

import (
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/criconfig"
)

// Cgroup drivers, kubelet's cgroupDriver values.
const (
	DriverCgroupfs = "cgroupfs"
	DriverSystemd  = "systemd"
)

// Name is a cgroup's name as its components, independent of the driver
// (kubelet's CgroupName): {"kubepods", "burstable", "pod<uid>"}.
type Name []string

// NewName appends components to base, refusing those kubelet's
// NewCgroupName panics on: a "/" or "_" in a component ("_" is reserved
// for the systemd driver's escaping of "-"). It also refuses what kubelet
// lets through but would name another cgroup's path: a component "." or
// "..", or one with a NUL byte.
func NewName(base Name, components ...string) (Name, error) {
	for _, c := range components {
		if err := checkComponent(c); err != nil {
			return nil, err
		}
	}
	return append(append(Name{}, base...), components...), nil
}

// checkComponent is NewName's check of one component.
func checkComponent(c string) error {
	if strings.ContainsAny(c, "/_\x00") || c == "." || c == ".." {
		return fmt.Errorf("%w: component %q", ErrInvalidName, c)
	}
	return nil
}

// check refuses a name whose path would not be the cgroup it names: a
// component with "/" or NUL, or "." or "..". Every method of a Manager
// that reaches the file system or systemd checks its name with it.
func (n Name) check() error {
	for _, c := range n {
		if strings.ContainsAny(c, "/\x00") || c == "." || c == ".." {
			return fmt.Errorf("%w: component %q", ErrInvalidName, c)
		}
	}
	return nil
}

// Cgroupfs is the name under the cgroupfs driver: "/kubepods/burstable".
func (n Name) Cgroupfs() string { return "/" + path.Join(n...) }

// Systemd is the name under the systemd driver, expanded to its path in
// the cgroup file system as kubelet's ToSystemd does:
// "/kubepods.slice/kubepods-burstable.slice". Every "-" of a component
// becomes "_". An empty component (other than the root's) is refused
// (kubelet panics).
func (n Name) Systemd() (string, error) {
	if len(n) == 0 || len(n) == 1 && n[0] == "" {
		return "/", nil
	}
	if err := n.check(); err != nil {
		return "", err
	}
	var b strings.Builder
	prefix := ""
	for _, c := range n {
		if c == "" || strings.Contains(c, "/") {
			return "", fmt.Errorf("%w: %q as a systemd slice", ErrInvalidName, []string(n))
		}
		c = strings.ReplaceAll(c, "-", "_")
		b.WriteString("/" + prefix + c + ".slice")
		prefix += c + "-"
	}
	return b.String(), nil
}

// Path is the name under driver ("cgroupfs", "" or "systemd"): the
// cgroup's path from the root of a cgroup hierarchy. A name whose path
// would be another cgroup's (a component "." or "..", or with "/" or NUL)
// is refused with ErrInvalidName.
func (n Name) Path(driver string) (string, error) {
	if driver == DriverSystemd {
		return n.Systemd()
	}
	if err := n.check(); err != nil {
		return "", err
	}
	return n.Cgroupfs(), nil
}

// ParseCgroupfs is kubelet's ParseCgroupfsToCgroupName.
func ParseCgroupfs(s string) Name {
	c := strings.Split(strings.TrimPrefix(s, "/"), "/")
	if len(c) == 1 && c[0] == "" {
		return Name{}
	}
	return Name(c)
}

// ParseSystemd is kubelet's ParseSystemdToCgroupName: the last slice of
// the path, split at "-", each "_" back to "-".
func ParseSystemd(s string) Name {
	base := strings.TrimSuffix(path.Base(s), ".slice")
	parts := strings.Split(base, "-")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(p, "_", "-")
	}
	return Name(parts)
}

// Parse parses a path of the cgroup file system under driver.
func Parse(driver, s string) Name {
	if driver == DriverSystemd {
		return ParseSystemd(s)
	}
	return ParseCgroupfs(s)
}

// The node allocatable cgroup's name (kubelet's
// defaultNodeAllocatableCgroupName) and the prefix of pod cgroups.
const (
	KubepodsName = "kubepods"
	podPrefix    = "pod"
)

// Root is the cgroup holding all pods for kubelet's cgroupRoot (a cgroupfs
// path, "" or "/" for the root) and cgroupsPerQOS: <cgroupRoot>/kubepods
// with cgroupsPerQOS, the cgroupRoot itself without.
func Root(cgroupRoot string, cgroupsPerQOS bool) Name {
	n := ParseCgroupfs(cgroupRoot)
	if cgroupsPerQOS {
		n = append(n, KubepodsName)
	}
	return n
}

// QOSNames are the cgroups of the QoS tiers: Guaranteed pods live in the
// root itself, the others in its burstable and besteffort children.
type QOSNames struct {
	Guaranteed, Burstable, BestEffort Name
}

// QOS returns the tiers' names under root.
func QOS(root Name) QOSNames {
	return QOSNames{
		Guaranteed: append(Name{}, root...),
		Burstable:  append(append(Name{}, root...), "burstable"),
		BestEffort: append(append(Name{}, root...), "besteffort"),
	}
}

// For returns the tier of class.
func (q QOSNames) For(class corev1.PodQOSClass) Name {
	switch class {
	case corev1.PodQOSBurstable:
		return q.Burstable
	case corev1.PodQOSBestEffort:
		return q.BestEffort
	}
	return q.Guaranteed
}

// PodName is the pod's cgroup, kubelet's GetPodContainerName: pod<uid>
// under its QoS tier under root. Its path under the node's driver equals
// criconfig.CgroupParent, the parent the sandbox is created with. A UID
// NewName would refuse as a component (a "/", "_" or NUL in it, "." or
// "..") and an empty UID are refused with ErrInvalidName: "x/../../.."
// would otherwise name the cgroup root.
func PodName(root Name, pod *corev1.Pod) (Name, error) {
	uid := string(pod.UID)
	if uid == "" {
		return nil, fmt.Errorf("%w: pod %s/%s has no UID", ErrInvalidName, pod.Namespace, pod.Name)
	}
	if err := checkComponent(uid); err != nil {
		return nil, fmt.Errorf("pod %s/%s UID: %w", pod.Namespace, pod.Name, err)
	}
	return NewName(QOS(root).For(criconfig.QOSClass(pod)), podPrefix+uid)
}

// PodUID is kubelet's IsPodCgroup: the UID of a pod cgroup name, a direct
// child "pod<uid>" of one of the tiers under root. kubelet looks only at
// the name's length; PodUID also requires the tier to be its parent.
func PodUID(root Name, n Name) (types.UID, bool) {
	q := QOS(root)
	for _, tier := range []Name{q.BestEffort, q.Burstable, q.Guaranteed} {
		if len(n) != len(tier)+1 || !slices.Equal(n[:len(tier)], tier) {
			continue
		}
		uid, ok := strings.CutPrefix(n[len(tier)], podPrefix)
		if !ok || strings.Contains(uid, podPrefix) {
			return "", false
		}
		return types.UID(uid), true
	}
	return "", false
}
