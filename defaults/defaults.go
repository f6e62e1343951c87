// Package defaults fills in a pod's unset fields as the Kubernetes API
// server does before it stores the pod.
//
// Kubelet never sees a pod the API server has not defaulted, and relies on
// it: an empty imagePullPolicy would pull on every sync, an empty
// terminationMessagePath would write no termination message, an empty
// restartPolicy or dnsPolicy would not mean Always or ClusterFirst. A pod
// read from a file, or built in code, has none of these. Pod applies them
// in place before the pod reaches podsync, as the API server would have.
//
// Pod is the API server's defaulting of a v1 Pod (kubelet v1.37.2's
// k8s.io/kubernetes/pkg/apis/core/v1 with its default feature gates, then
// the pod registry's pod-level resources defaulting on create), applied in
// the same order, and compared with it on random pods in podstart's
// differential tests (test/diff): the result is equal field for field. It
// sets, where unset:
//
//   - containers, init containers and ephemeral containers:
//     imagePullPolicy (Always for an image tagged "latest" or with neither
//     tag nor digest, IfNotPresent otherwise, including names that do not
//     parse), terminationMessagePath /dev/termination-log,
//     terminationMessagePolicy File, protocol TCP on ports, apiVersion v1
//     on fieldRef env sources, optional false on fileKeyRef ones; probes'
//     timeoutSeconds 1, periodSeconds 10, successThreshold 1,
//     failureThreshold 3; httpGet path "/" and scheme HTTP in probes and
//     lifecycle hooks; grpc service "";
//   - requests equal to limits for resources with a limit and no request
//     (containers and init containers); with hostNetwork, hostPort equal to
//     containerPort;
//   - pod-level resources (PodLevelResources with v1.37's
//     PodLevelResourcesFixDefaulting, which moved this from the v1
//     defaulting to the registry's PrepareForCreate, after every other
//     default), when the pod sets a pod-level request or limit: hugepage
//     limits from the containers' limits; cpu and memory requests from the
//     containers' requests, then any cpu, memory or hugepage request from
//     the pod-level limit; and, new in v1.37, a cpu, memory or hugepage
//     limit, when every container (ephemeral ones included) sets one, of
//     the containers' total or the pod-level request if larger;
//   - restartPolicy Always, dnsPolicy ClusterFirst, schedulerName
//     default-scheduler, terminationGracePeriodSeconds 30 (a negative one
//     becomes 1, v1.37), enableServiceLinks true, an empty securityContext;
//     serviceAccountName from the deprecated serviceAccount, and
//     serviceAccount from serviceAccountName, which wins (v1.37);
//   - status: podIPs from podIP, podIP from the first of podIPs, and podIPs
//     replaced by podIP alone when both are set and disagree (v1.37);
//   - volumes: emptyDir when no source is set; defaultMode 0644 for
//     secret, configMap, downwardAPI and projected volumes; hostPath type
//     ""; a projected service account token's expirationSeconds 3600; image
//     volumes' pullPolicy as for containers; the remaining plugins'
//     defaults (iSCSI, RBD, Azure disk, ScaleIO, ephemeral claim volume
//     mode);
//   - every quantity in the spec and in the status resources rounded up to
//     milli-units (0.0001 becomes 1m), as the API server does.
//
// Not applied: the protocol of httpGet probes and hooks, defaulted only
// with the H2CContainerProbe gate (alpha, off in v1.37).
//
// Pod does not apply what else happens in the API server: admission
// (the service account token volume, default tolerations, priority, limit
// ranges), nor the status the registry sets (qosClass, phase). Kubelet
// computes what it needs of those itself.
package defaults

import (
	// The digest algorithms image names may use, as kubelet links them.
	_ "crypto/sha256"
	_ "crypto/sha512"
	"reflect"
	"strings"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Pod applies in place the defaults the API server sets on a v1 Pod; see
// the package documentation for the list. Fields already set are kept, and
// applying it twice changes nothing more.
func Pod(pod *corev1.Pod) {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		pod.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	}
	podOnly(pod)
	spec(&pod.Spec)
	for i := range pod.Spec.Volumes {
		volume(&pod.Spec.Volumes[i])
	}
	for i := range pod.Spec.InitContainers {
		container(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		container(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		container((*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	roundUp(pod.Spec.Overhead)
	requirements(pod.Spec.Resources)
	status(&pod.Status)
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for i := range list {
			roundUp(list[i].AllocatedResources)
			requirements(list[i].Resources)
		}
	}
	roundUp(pod.Status.AllocatedResources)
	requirements(pod.Status.Resources)
	podLevelResources(pod)
}

// PullPolicy is the imagePullPolicy the API server gives a container whose
// policy is unset: Always when the image is tagged "latest" or has neither
// tag nor digest, IfNotPresent otherwise (also for a name that does not
// parse).
func PullPolicy(image string) corev1.PullPolicy {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return corev1.PullIfNotPresent
	}
	tagged, isTagged := named.(reference.Tagged)
	_, isDigested := named.(reference.Digested)
	if isTagged && tagged.Tag() == "latest" || !isTagged && !isDigested {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// podOnly is what the API server defaults on a Pod but not on a pod
// template: requests from limits, service links and host ports.
func podOnly(pod *corev1.Pod) {
	for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			r := &list[i].Resources
			if r.Limits == nil {
				continue
			}
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			for name, limit := range r.Limits {
				if _, ok := r.Requests[name]; !ok {
					r.Requests[name] = limit.DeepCopy()
				}
			}
		}
	}
	if pod.Spec.EnableServiceLinks == nil {
		pod.Spec.EnableServiceLinks = ptr(corev1.DefaultEnableServiceLinks)
	}
	if pod.Spec.HostNetwork {
		for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for i := range list {
				for j := range list[i].Ports {
					if p := &list[i].Ports[j]; p.HostPort == 0 {
						p.HostPort = p.ContainerPort
					}
				}
			}
		}
	}
}

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// podLevelResources is the registry's defaulting of pod-level resources
// (pkg/api/pod DefaultPodLevelResources, run when a pod is created with
// PodLevelResourcesFixDefaulting, on in v1.37), once the pod's other
// defaults are set: when the pod sets a pod-level request or limit,
//
//  1. a hugepage limit the pod neither sets nor requests is the
//     containers' total limit;
//  2. a cpu or memory request the pod does not set is the containers'
//     total request; then a cpu, memory or hugepage resource with a
//     pod-level limit and no pod-level request is requested at its limit;
//  3. a cpu, memory or hugepage resource requested at pod level with no
//     pod-level limit is limited to the larger of that request and the
//     containers' total limit, if every container (init, app and
//     ephemeral) sets a limit for it.
func podLevelResources(pod *corev1.Pod) {
	res := pod.Spec.Resources
	if res == nil || len(res.Limits) == 0 && len(res.Requests) == 0 {
		return
	}
	limitsOf := func(r *corev1.ResourceRequirements) corev1.ResourceList { return r.Limits }
	containerLimits := aggregate(pod, limitsOf)

	limits := res.Limits
	if limits == nil {
		limits = corev1.ResourceList{}
	}
	for name, total := range containerLimits {
		if !isHugePages(name) {
			continue
		}
		if _, requested := res.Requests[name]; requested {
			continue
		}
		if _, ok := limits[name]; !ok {
			limits[name] = total.DeepCopy()
		}
	}
	if len(limits) > 0 {
		res.Limits = limits
	}

	requests := res.Requests
	if requests == nil {
		requests = corev1.ResourceList{}
	}
	for name, total := range aggregate(pod, func(r *corev1.ResourceRequirements) corev1.ResourceList { return r.Requests }) {
		if _, ok := requests[name]; !ok && (name == corev1.ResourceCPU || name == corev1.ResourceMemory) {
			requests[name] = total.DeepCopy()
		}
	}
	for name, limit := range res.Limits {
		if _, ok := requests[name]; !ok && podLevelResource(name) {
			requests[name] = limit.DeepCopy()
		}
	}
	if len(requests) > 0 {
		res.Requests = requests
	}

	for name, request := range res.Requests {
		if _, limited := res.Limits[name]; limited || !podLevelResource(name) || !everyContainerLimits(pod, name) {
			continue
		}
		total, ok := containerLimits[name]
		if !ok {
			continue
		}
		limit := total.DeepCopy()
		if request.Cmp(limit) > 0 {
			limit = request.DeepCopy()
		}
		if res.Limits == nil {
			res.Limits = corev1.ResourceList{}
		}
		res.Limits[name] = limit
	}
}

// podLevelResource reports whether a pod may set name at pod level: cpu,
// memory and hugepages.
func podLevelResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory || isHugePages(name)
}

// everyContainerLimits reports whether every container of the pod, init
// and ephemeral ones included, sets a limit for name.
func everyContainerLimits(pod *corev1.Pod, name corev1.ResourceName) bool {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if _, ok := list[i].Resources.Limits[name]; !ok {
				return false
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if _, ok := pod.Spec.EphemeralContainers[i].Resources.Limits[name]; !ok {
			return false
		}
	}
	return true
}

// aggregate is what a pod's containers need of each resource at most at
// once: the app containers and sidecars together, or, if more, an init
// container together with the sidecars started before it.
func aggregate(pod *corev1.Pod, of func(*corev1.ResourceRequirements) corev1.ResourceList) corev1.ResourceList {
	total := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		add(total, of(&pod.Spec.Containers[i].Resources))
	}
	sidecars, initPeak := corev1.ResourceList{}, corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(total, of(&c.Resources))
			add(sidecars, of(&c.Resources))
			raise(initPeak, sidecars)
			continue
		}
		during := corev1.ResourceList{}
		add(during, of(&c.Resources))
		add(during, sidecars)
		raise(initPeak, during)
	}
	raise(total, initPeak)
	return total
}

// add adds each quantity of more to list.
func add(list, more corev1.ResourceList) {
	for name, q := range more {
		sum, ok := list[name]
		if !ok {
			list[name] = q.DeepCopy()
			continue
		}
		sum.Add(q)
		list[name] = sum
	}
}

// raise sets each quantity of list to that of other where other's is
// larger or list has none.
func raise(list, other corev1.ResourceList) {
	for name, q := range other {
		if cur, ok := list[name]; !ok || q.Cmp(cur) > 0 {
			list[name] = q.DeepCopy()
		}
	}
}

// roundUp rounds every quantity up to milli-units.
func roundUp(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(resource.Milli)
		list[name] = q
	}
}

func requirements(r *corev1.ResourceRequirements) {
	if r != nil {
		roundUp(r.Limits)
		roundUp(r.Requests)
	}
}

func spec(s *corev1.PodSpec) {
	if s.ServiceAccountName == "" {
		s.ServiceAccountName = s.DeprecatedServiceAccount
	}
	s.DeprecatedServiceAccount = s.ServiceAccountName
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptr(int64(corev1.DefaultTerminationGracePeriodSeconds))
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
}

// status keeps podIP and podIPs in agreement: each is filled from the
// other, and podIP wins when both are set and the first of podIPs differs.
func status(s *corev1.PodStatus) {
	switch {
	case s.PodIP != "" && (len(s.PodIPs) == 0 || s.PodIPs[0].IP != s.PodIP):
		s.PodIPs = []corev1.PodIP{{IP: s.PodIP}}
	case s.PodIP == "" && len(s.PodIPs) > 0:
		s.PodIP = s.PodIPs[0].IP
	}
}

func container(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = PullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		from := c.Env[i].ValueFrom
		if from == nil {
			continue
		}
		fieldRef(from.FieldRef)
		if from.FileKeyRef != nil && from.FileKeyRef.Optional == nil {
			from.FileKeyRef.Optional = ptr(false)
		}
	}
	roundUp(c.Resources.Limits)
	roundUp(c.Resources.Requests)
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		probe(p)
	}
	if c.Lifecycle != nil {
		for _, h := range []*corev1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil {
				httpGet(h.HTTPGet)
			}
		}
	}
}

func probe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	httpGet(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptr("")
	}
}

func httpGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func fieldRef(f *corev1.ObjectFieldSelector) {
	if f != nil && f.APIVersion == "" {
		f.APIVersion = "v1"
	}
}

func defaultMode(m **int32, mode int32) {
	if *m == nil {
		*m = ptr(mode)
	}
}

func setIfEmpty(s *string, v string) {
	if *s == "" {
		*s = v
	}
}

func volume(v *corev1.Volume) {
	src := &v.VolumeSource
	if noSource(src) {
		src.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	if src.Image != nil && src.Image.PullPolicy == "" {
		src.Image.PullPolicy = PullPolicy(src.Image.Reference)
	}
	if src.HostPath != nil && src.HostPath.Type == nil {
		src.HostPath.Type = ptr(corev1.HostPathUnset)
	}
	if src.Secret != nil {
		defaultMode(&src.Secret.DefaultMode, corev1.SecretVolumeSourceDefaultMode)
	}
	if src.ISCSI != nil {
		setIfEmpty(&src.ISCSI.ISCSIInterface, "default")
	}
	if src.RBD != nil {
		setIfEmpty(&src.RBD.RBDPool, "rbd")
		setIfEmpty(&src.RBD.RadosUser, "admin")
		setIfEmpty(&src.RBD.Keyring, "/etc/ceph/keyring")
	}
	if src.DownwardAPI != nil {
		defaultMode(&src.DownwardAPI.DefaultMode, corev1.DownwardAPIVolumeSourceDefaultMode)
		for i := range src.DownwardAPI.Items {
			fieldRef(src.DownwardAPI.Items[i].FieldRef)
		}
	}
	if src.ConfigMap != nil {
		defaultMode(&src.ConfigMap.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if d := src.AzureDisk; d != nil {
		if d.CachingMode == nil {
			d.CachingMode = ptr(corev1.AzureDataDiskCachingReadWrite)
		}
		if d.FSType == nil {
			d.FSType = ptr("ext4")
		}
		if d.ReadOnly == nil {
			d.ReadOnly = ptr(false)
		}
		if d.Kind == nil {
			d.Kind = ptr(corev1.AzureSharedBlobDisk)
		}
	}
	if p := src.Projected; p != nil {
		defaultMode(&p.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode)
		for i := range p.Sources {
			if d := p.Sources[i].DownwardAPI; d != nil {
				for j := range d.Items {
					fieldRef(d.Items[j].FieldRef)
				}
			}
			if t := p.Sources[i].ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				t.ExpirationSeconds = ptr(int64(3600))
			}
		}
	}
	if src.ScaleIO != nil {
		setIfEmpty(&src.ScaleIO.StorageMode, "ThinProvisioned")
		setIfEmpty(&src.ScaleIO.FSType, "xfs")
	}
	if e := src.Ephemeral; e != nil && e.VolumeClaimTemplate != nil {
		s := &e.VolumeClaimTemplate.Spec
		if s.VolumeMode == nil {
			s.VolumeMode = ptr(corev1.PersistentVolumeFilesystem)
		}
		roundUp(s.Resources.Limits)
		roundUp(s.Resources.Requests)
	}
}

// noSource reports whether no volume source is set: every field of a
// VolumeSource is a pointer to one.
func noSource(src *corev1.VolumeSource) bool {
	v := reflect.ValueOf(src).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			return false
		}
	}
	return true
}

func ptr[T any](v T) *T { return &v }
