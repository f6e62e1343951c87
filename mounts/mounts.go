package mounts

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/internal/expansion"
	"github.com/podstart/podstart/validation"
)

// Errors of Make; each error it returns matches one with errors.Is.
var (
	ErrVolumeNotFound     = errors.New("volume not found")
	ErrInvalidSubPath     = errors.New("invalid subPath")
	ErrSubPathEscape      = errors.New("subPath resolves outside its volume")
	ErrSubPath            = errors.New("subPath could not be prepared")
	ErrInvalidPropagation = errors.New("invalid mount propagation")
	ErrRecursiveReadOnly  = errors.New("invalid recursive read-only mount")
	ErrInvalidHostAlias   = errors.New("invalid host alias")
	ErrHostsFile          = errors.New("hosts file could not be written")
)

// Names and paths kubelet uses.
const (
	EtcHostsPath       = "/etc/hosts"
	EtcHostsVolumeName = "k8s-managed-etc-hosts"
)

// Volume is a pod volume as mounted on the host.
type Volume struct {
	// HostPath is where the volume is on the host.
	HostPath string
	// ReadOnly: the volume must be mounted read-only whatever the
	// volumeMount says.
	ReadOnly bool
	// SELinuxRelabel: the volume is managed and supports relabelling.
	SELinuxRelabel bool
	// Image is set for an image volume (ImageVolume): the runtime mounts
	// the image itself, so HostPath is empty and a volumeMount's subPath
	// is a path inside the image, not made on the host.
	Image *ImageVolume
}

// ImageVolume is the image an image volume mounts, once present.
type ImageVolume struct {
	// Ref is the runtime's reference of the pulled image (what
	// EnsureImageExists returns).
	Ref string
	// Requested is the image as the pod names it.
	Requested string
	// RuntimeHandler and Annotations are those the image was pulled
	// with (the pod's runtime handler and annotations, as kubelet's).
	RuntimeHandler string
	Annotations    map[string]string
}

// VolumeMap maps a pod volume's name to its mounted volume. Callers with a
// volume manager supply theirs.
type VolumeMap map[string]Volume

// Mount is one mount for a container, before it becomes a CRI mount.
type Mount struct {
	Name              string
	ContainerPath     string
	HostPath          string
	ReadOnly          bool
	RecursiveReadOnly bool
	SELinuxRelabel    bool
	Propagation       Propagation
	// Image and ImageSubPath: an image volume's mount (HostPath empty);
	// ImageSubPath is the volumeMount's subPath inside the image.
	Image        *ImageVolume
	ImageSubPath string
}

// Request is what Make needs for one container.
type Request struct {
	Pod       *corev1.Pod
	Container *corev1.Container
	Volumes   VolumeMap
	// PodDir is the pod's directory (kubelet: <root>/pods/<uid>): the
	// hosts file and termination message files are written under it.
	PodDir string
	// PodIPs are the sandbox's IPs, for the hosts file.
	PodIPs []string
	// Env is the container's final environment, for subPathExpr.
	Env map[string]string
}

// Option configures Make.
type Option func(*options)

type options struct {
	disk          Disk
	clusterDomain string
	nodeHostsFile string
	rroSupported  bool
	noTermination bool
	checked       bool
}

// WithDisk sets where side effects go (default: OSDisk).
func WithDisk(d Disk) Option { return func(o *options) { o.disk = d } }

// WithClusterDomain sets the domain for pods with a subdomain: kubelet's
// clusterDomain. The default is kubelet's, none: such a pod's domain is
// then "<subdomain>.<namespace>.svc." as kubelet makes it.
func WithClusterDomain(d string) Option { return func(o *options) { o.clusterDomain = d } }

// WithNodeHostsFile sets the node's hosts file copied for host-network pods
// (default /etc/hosts).
func WithNodeHostsFile(p string) Option { return func(o *options) { o.nodeHostsFile = p } }

// WithRecursiveReadOnlySupport says the runtime handler supports recursive
// read-only mounts (CRI RuntimeHandlerFeatures.RecursiveReadOnlyMounts).
func WithRecursiveReadOnlySupport(ok bool) Option { return func(o *options) { o.rroSupported = ok } }

// WithCheckedPod says the caller has just checked Request.Pod with
// validation.Check and the pod has not changed since, so Make does not
// check it again: podsync's SyncPod checks a pod once per sync, then makes
// the mounts of each container it starts.
func WithCheckedPod() Option { return func(o *options) { o.checked = true } }

// WithoutTerminationMessage leaves out the termination message mount (for
// callers that only want the volume mounts).
func WithoutTerminationMessage() Option { return func(o *options) { o.noTermination = true } }

// Make is kubelet's makeMounts followed by kuberuntime's termination
// message mount: the container's volume mounts in spec order, then the
// managed /etc/hosts, then the termination message file. Any error aborts
// the container, as in kubelet, except a termination file that cannot be
// created, which only drops that mount. A pod the API server would refuse
// (validation.Check: names that would take a host path outside its root,
// hostile subPaths, ...) is refused first, with an error matching
// validation.ErrInvalidPod (and ErrInvalidName).
func Make(ctx context.Context, req Request, opts ...Option) ([]Mount, error) {
	o := options{disk: OSDisk{}, nodeHostsFile: EtcHostsPath}
	for _, opt := range opts {
		opt(&o)
	}
	pod, c := req.Pod, req.Container
	if !o.checked {
		if err := validation.Check(pod); err != nil {
			return nil, err
		}
	}
	mountHosts := ShouldMountHostsFile(pod, req.PodIPs)
	out := make([]Mount, 0, len(c.VolumeMounts)+2)
	for i := range c.VolumeMounts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		vm := &c.VolumeMounts[i]
		if vm.MountPath == EtcHostsPath {
			mountHosts = false
		}
		m, err := makeOne(vm, c, req, o.disk, o.rroSupported)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if mountHosts {
		m, err := hostsMount(pod, req, o)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if c.TerminationMessagePath != "" && !o.noTermination && req.PodDir != "" {
		dir := path.Join(req.PodDir, "containers", c.Name)
		if file, err := o.disk.CreateTerminationFile(dir); err == nil {
			// Relabelled whenever SELinux is on, as kubelet does.
			out = append(out, Mount{ContainerPath: c.TerminationMessagePath, HostPath: file, SELinuxRelabel: true, Propagation: PropagationPrivate})
		}
	}
	return out, nil
}

func makeOne(vm *corev1.VolumeMount, c *corev1.Container, req Request, disk Disk, rroSupported bool) (Mount, error) {
	if vm.Name == "" {
		return Mount{}, errorf(ErrVolumeNotFound, "a volumeMount of container %q has no volume name", c.Name)
	}
	vol, ok := req.Volumes[vm.Name]
	if !ok {
		return Mount{}, errorf(ErrVolumeNotFound, "cannot find volume %q to mount into container %q", vm.Name, c.Name)
	}
	if vol.HostPath == "" && (vol.Image == nil || vol.Image.Ref == "") {
		// Kubelet's makeMounts refuses it too; a runtime would otherwise
		// get a mount of "" (or of its own working directory).
		return Mount{}, errorf(ErrVolumeNotFound, "volume %q of container %q: path is empty", vm.Name, c.Name)
	}
	hostPath := vol.HostPath
	subPath := vm.SubPath
	if vm.SubPathExpr != "" {
		var err error
		if subPath, err = ExpandSubPathExpr(vm.SubPathExpr, req.Env); err != nil {
			return Mount{}, err
		}
	}
	if subPath != "" {
		if err := ValidateSubPath(subPath); err != nil {
			return Mount{}, err
		}
	}
	var image *ImageVolume
	imageSubPath := ""
	if vol.Image != nil {
		// The runtime resolves the subPath inside the image (kubelet's
		// ImageSubPath); nothing is made or resolved on the host.
		image, imageSubPath, hostPath = vol.Image, subPath, ""
	} else if subPath != "" {
		if err := disk.MakeSubPathDir(vol.HostPath, subPath); err != nil {
			return Mount{}, &SubPathError{Msg: fmt.Sprintf("failed to create subPath directory for volumeMount %q of container %q", vm.Name, c.Name), Err: err}
		}
		p, err := disk.ResolveSubPath(vol.HostPath, subPath)
		if err != nil {
			return Mount{}, &SubPathError{Msg: fmt.Sprintf("failed to prepare subPath for volumeMount %q of container %q", vm.Name, c.Name), Err: err}
		}
		hostPath = p
	}
	containerPath := vm.MountPath
	if !path.IsAbs(containerPath) {
		containerPath = path.Clean("/" + containerPath)
	}
	prop, err := PropagationFor(vm.MountPropagation)
	if err != nil {
		return Mount{}, err
	}
	readOnly := vm.ReadOnly || vol.ReadOnly
	rro, err := resolveRecursiveReadOnly(vm, readOnly, rroSupported)
	if err != nil {
		return Mount{}, err
	}
	return Mount{
		Name: vm.Name, ContainerPath: containerPath, HostPath: hostPath,
		ReadOnly: readOnly, RecursiveReadOnly: rro, SELinuxRelabel: vol.SELinuxRelabel, Propagation: prop,
		Image: image, ImageSubPath: imageSubPath,
	}, nil
}

// SubPathError hides a subPath failure's details from its message, as
// kubelet does, while keeping them for errors.Is and errors.As.
type SubPathError struct {
	Msg string
	Err error
}

// Error is kubelet's message, without the details.
func (e *SubPathError) Error() string { return e.Msg }

// Unwrap gives the details.
func (e *SubPathError) Unwrap() []error { return []error{ErrSubPath, e.Err} }

// ValidateSubPath applies kubelet's string checks: not absolute, no ".."
// element (so "..foo" and "a..b" pass), and, beyond kubelet, no NUL byte.
func ValidateSubPath(p string) error {
	if strings.IndexByte(p, 0) >= 0 {
		return errorf(ErrInvalidSubPath, "SubPath %q must not contain a NUL byte", p)
	}
	if path.IsAbs(p) {
		return errorf(ErrInvalidSubPath, "error SubPath `%s` must not be an absolute path", p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return errorf(ErrInvalidSubPath, "unable to provision SubPath `%s`: must not contain '..'", p)
		}
	}
	return nil
}

// ExpandSubPathExpr expands $(VAR) from env and fails, naming the sorted
// variables, when any reference is missing or empty.
func ExpandSubPathExpr(expr string, env map[string]string) (string, error) {
	missing := map[string]bool{}
	out := expansion.Expand(expr, func(name string) string {
		v := env[name]
		if v == "" {
			missing[name] = true
		}
		return v
	})
	if len(missing) > 0 {
		names := make([]string, 0, len(missing))
		for n := range missing {
			names = append(names, n)
		}
		sort.Strings(names)
		return "", errorf(ErrInvalidSubPath, "missing value for %s", strings.Join(names, ", "))
	}
	return out, nil
}

// Propagation is a mount's propagation, with CRI's values
// (runtime.v1.MountPropagation) so a conversion is a cast.
type Propagation int32

// Propagations.
const (
	PropagationPrivate         Propagation = 0 // none; kubelet's default
	PropagationHostToContainer Propagation = 1 // rslave
	PropagationBidirectional   Propagation = 2 // rshared
)

// String is CRI's name for the propagation.
func (p Propagation) String() string {
	switch p {
	case PropagationPrivate:
		return "PROPAGATION_PRIVATE"
	case PropagationHostToContainer:
		return "PROPAGATION_HOST_TO_CONTAINER"
	case PropagationBidirectional:
		return "PROPAGATION_BIDIRECTIONAL"
	}
	return fmt.Sprintf("Propagation(%d)", int32(p))
}

// PropagationFor translates a volumeMount's mountPropagation: unset and None
// are private, HostToContainer is rslave, Bidirectional is rshared.
func PropagationFor(mode *corev1.MountPropagationMode) (Propagation, error) {
	if mode == nil {
		return PropagationPrivate, nil
	}
	switch *mode {
	case corev1.MountPropagationNone:
		return PropagationPrivate, nil
	case corev1.MountPropagationHostToContainer:
		return PropagationHostToContainer, nil
	case corev1.MountPropagationBidirectional:
		return PropagationBidirectional, nil
	}
	return 0, errorf(ErrInvalidPropagation, "invalid MountPropagation mode: %q", *mode)
}

func resolveRecursiveReadOnly(vm *corev1.VolumeMount, readOnly, supported bool) (bool, error) {
	if vm.RecursiveReadOnly == nil || *vm.RecursiveReadOnly == corev1.RecursiveReadOnlyDisabled {
		return false, nil
	}
	if !readOnly {
		return false, errorf(ErrRecursiveReadOnly, "volume %q requested recursive read-only mode, but it is not read-only", vm.Name)
	}
	if vm.MountPropagation != nil && *vm.MountPropagation != corev1.MountPropagationNone {
		return false, errorf(ErrRecursiveReadOnly, "volume %q requested recursive read-only mode, but it is not compatible with propagation %q", vm.Name, *vm.MountPropagation)
	}
	switch *vm.RecursiveReadOnly {
	case corev1.RecursiveReadOnlyIfPossible:
		return supported, nil
	case corev1.RecursiveReadOnlyEnabled:
		if !supported {
			return false, errorf(ErrRecursiveReadOnly, "volume %q requested recursive read-only mode, but it is not supported by the runtime", vm.Name)
		}
		return true, nil
	}
	return false, errorf(ErrRecursiveReadOnly, "unknown recursive read-only mode %q", *vm.RecursiveReadOnly)
}

// classError has kubelet's exact message and matches its class.
type classError struct {
	class error
	msg   string
}

func (e *classError) Error() string        { return e.msg }
func (e *classError) Is(target error) bool { return target == e.class }

func errorf(class error, format string, args ...any) error {
	return &classError{class: class, msg: fmt.Sprintf(format, args...)}
}
