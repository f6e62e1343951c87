package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/defaults"
)

// rl is a resource list of name, quantity pairs.
func rl(pairs ...string) corev1.ResourceList {
	list := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		list[corev1.ResourceName(pairs[i])] = q(pairs[i+1])
	}
	return list
}

// podLevel sets the pod's spec.resources.
func podLevel(requests, limits corev1.ResourceList) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Resources = &corev1.ResourceRequirements{Requests: requests, Limits: limits}
	}
}

// withContainers sets the pod-level resources and gives the pod one app
// container per requirement.
func withContainers(requests, limits corev1.ResourceList, ctrs ...corev1.ResourceRequirements) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		podLevel(requests, limits)(p)
		p.Spec.Containers = nil
		for i, r := range ctrs {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: string(rune('a' + i)), Image: "img", Resources: r})
		}
	}
}

func reqs(requests corev1.ResourceList) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: requests}
}

func lims(limits corev1.ResourceList) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Limits: limits}
}

const hp2 = "hugepages-2Mi"

// podResourceCases are pod-level resources and overhead, each row one rule
// of validatePodResources or validateOverhead as the API server's create
// path applies them (after its defaulting). They port the cases of
// TestValidatePodResources, TestValidatePodResourceConsistency,
// TestValidatePodResourceNames, TestValidatePodSpec's pod-level resources
// and TestValidateOverhead of k8s.io/kubernetes' validation_test.go, with
// the errors the defaulting before validation adds, and the defaulting
// cases of TestApplyPodLevelResourceDefaults that change an answer.
func podResourceCases() []containerCase {
	const r = "spec.resources"
	const o = "spec.overhead"
	const aggrReq = "must be greater than or equal to aggregate container requests of "
	return []containerCase{
		// TestValidatePodSpec, TestValidatePodResources.
		{"limits only, container without resources", podLevel(nil, rl("cpu", "100m", "memory", "200Mi")), nil},
		{"limits only, linux", func(p *corev1.Pod) {
			podLevel(nil, rl("cpu", "100m", "memory", "200Mi"))(p)
			p.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
		}, nil},
		{"requests and limits with hugepages", podLevel(rl("cpu", "10", "memory", "10Mi"), rl("cpu", "20", "memory", "20Mi", hp2, "100Mi")), nil},
		{"empty resources", func(p *corev1.Pod) { p.Spec.Resources = &corev1.ResourceRequirements{} }, nil},
		{"empty maps", podLevel(corev1.ResourceList{}, corev1.ResourceList{}), nil},
		{"windows pod, a container limit above the pod's hidden", func(p *corev1.Pod) {
			podLevel(nil, rl("cpu", "100m", "memory", "200Mi"))(p)
			c0(p).Resources = lims(rl("cpu", "200m", "memory", "200Mi"))
			p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
		}, []wantErr{{r, forb, "may not be set for a windows pod"}}},
		{"claims at pod level", func(p *corev1.Pod) {
			podLevel(rl("cpu", "10"), nil)(p)
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "claim", ResourceClaimName: ptr.To("c")}}
			p.Spec.Resources.Claims = []corev1.ResourceClaim{{Name: "claim"}}
		}, []wantErr{{r + ".claims", forb, "claims may not be set for Resources at pod-level"}}},
		{"empty claims at pod level", func(p *corev1.Pod) {
			podLevel(rl("cpu", "10"), nil)(p)
			p.Spec.Resources.Claims = []corev1.ResourceClaim{}
		}, []wantErr{{r + ".claims", forb, "claims may not be set for Resources at pod-level"}}},
		{"claim at pod level not among the pod's", func(p *corev1.Pod) {
			podLevel(rl("cpu", "10"), nil)(p)
			p.Spec.Resources.Claims = []corev1.ResourceClaim{{Name: "claim"}}
		}, []wantErr{
			{r + ".claims", forb, "claims may not be set for Resources at pod-level"},
			{r + ".claims[0]", nf, "must be one of the names in pod.spec.resourceClaims which is empty"},
		}},

		// TestValidatePodResourceNames.
		{"ephemeral-storage request", podLevel(rl("ephemeral-storage", "1Gi"), nil),
			[]wantErr{{r + ".requests[ephemeral-storage]", nsup, `supported values: "cpu", "hugepages-", "memory"`}}},
		{"storage limit", podLevel(nil, rl("cpu", "1", "storage", "1Gi")),
			[]wantErr{{r + ".limits[storage]", nsup, `supported values: "cpu", "hugepages-", "memory"`}}},
		{"extended resource limit", podLevel(nil, rl("cpu", "1", "example.com/foo", "1")),
			[]wantErr{{r + ".limits[example.com/foo]", nsup, ""}}},
		{"kubernetes.io/cpu request", podLevel(rl("kubernetes.io/cpu", "1"), nil),
			[]wantErr{{r + ".requests[kubernetes.io/cpu]", nsup, ""}}},
		{"unprefixed non-standard name", podLevel(rl("network", "1"), nil),
			[]wantErr{{r + ".requests[network]", inv, "must be a standard resource type or fully qualified"}}},
		{"requests.cpu", podLevel(rl("requests.cpu", "1"), nil),
			[]wantErr{{r + ".requests[requests.cpu]", nsup, ""}}},
		{"name not qualified", podLevel(rl("my.favorite.app.co/_12345", "1"), nil),
			[]wantErr{
				{r + ".requests[my.favorite.app.co/_12345]", inv, "name part must consist of"},
				{r + ".limits", req, "Limit must be set for non overcommitable resources"},
			}},

		// validateResourceRequirements at pod level.
		{"negative limit, and the request defaulted from it", podLevel(nil, rl("cpu", "-1")), []wantErr{
			{r + ".limits[cpu]", inv, "must be greater than or equal to 0"},
			{r + ".requests[cpu]", inv, "must be greater than or equal to 0"},
		}},
		{"request above limit", podLevel(rl("cpu", "2"), rl("cpu", "1")),
			[]wantErr{{r + ".requests", inv, "must be less than or equal to cpu limit of 1"}}},
		{"hugepages without cpu or memory", podLevel(nil, rl(hp2, "2Mi")),
			[]wantErr{{r, forb, "HugePages require cpu or memory"}}},
		{"hugepages limit not a page multiple, and the request defaulted from it", podLevel(nil, rl("cpu", "1", hp2, "3Mi")), []wantErr{
			{r + ".limits[hugepages-2Mi]", inv, "3Mi is not positive integer multiple of hugepages-2Mi"},
			{r + ".requests[hugepages-2Mi]", inv, "3Mi is not positive integer multiple of hugepages-2Mi"},
		}},
		{"hugepages request without a limit", podLevel(rl("cpu", "1", hp2, "2Mi"), nil),
			[]wantErr{{r + ".limits", req, "Limit must be set for non overcommitable resources"}}},
		{"hugepages request below the limit", podLevel(rl("cpu", "1", hp2, "2Mi"), rl(hp2, "4Mi")),
			[]wantErr{{r + ".requests", inv, "must be equal to hugepages-2Mi limit of 4Mi"}}},
		{"sub-milli limit rounded up", podLevel(nil, rl("cpu", "0.0001", "memory", "1.5")), nil},

		// TestValidatePodResourceConsistency, on the defaulted pod.
		{"aggregate container requests below pod requests", withContainers(rl("cpu", "10", "memory", "10Mi"), nil,
			reqs(rl("cpu", "5", "memory", "5Mi")), reqs(rl("cpu", "4", "memory", "3Mi"))), nil},
		{"aggregate container requests equal to pod requests", withContainers(rl("cpu", "10", "memory", "10Mi"), nil,
			reqs(rl("cpu", "5", "memory", "5Mi")), reqs(rl("cpu", "5", "memory", "5Mi"))), nil},
		{"aggregate container requests above pod requests", withContainers(rl("cpu", "10", "memory", "10Mi"), nil,
			reqs(rl("cpu", "6", "memory", "5Mi")), reqs(rl("cpu", "8", "memory", "7Mi"))), []wantErr{
			{r + ".requests[cpu]", inv, aggrReq + "14"},
			{r + ".requests[memory]", inv, aggrReq + "12Mi"},
		}},
		{"container requests of a resource pod-level resources do not support", withContainers(rl("cpu", "10", "memory", "10Mi"), nil,
			reqs(rl("cpu", "6", "memory", "5Mi", "ephemeral-storage", "10Gi")), reqs(rl("cpu", "4", "memory", "3Mi", "ephemeral-storage", "5Gi"))), nil},
		{"aggregate container limits below pod limits", withContainers(nil, rl("cpu", "10", "memory", "10Mi", hp2, "10Mi"),
			lims(rl("cpu", "5", "memory", "5Mi", hp2, "4Mi")), lims(rl("cpu", "4", "memory", "3Mi", hp2, "4Mi"))), nil},
		{"aggregate container limits equal to pod limits", withContainers(nil, rl("cpu", "10", "memory", "10Mi", hp2, "8Mi"),
			lims(rl("cpu", "5", "memory", "5Mi", hp2, "4Mi")), lims(rl("cpu", "5", "memory", "5Mi", hp2, "4Mi"))), nil},
		// The containers' requests (their limits) become the pod's, above
		// its limits.
		{"aggregate container limits above pod limits", withContainers(nil, rl("cpu", "10", "memory", "10Mi"),
			lims(rl("cpu", "5", "memory", "5Mi")), lims(rl("cpu", "6", "memory", "9Mi"))), []wantErr{
			{r + ".requests", inv, "must be less than or equal to cpu limit of 10"},
			{r + ".requests", inv, "must be less than or equal to memory limit of 10Mi"},
		}},
		{"hugepage aggregate container limits above pod limits", withContainers(nil, rl("cpu", "10", hp2, "4Mi"),
			lims(rl("cpu", "6", hp2, "4Mi")), lims(rl("cpu", "6", hp2, "4Mi"))), []wantErr{
			{r + ".requests", inv, "must be less than or equal to cpu limit of 10"},
			{r + ".requests[hugepages-2Mi]", inv, aggrReq + "8Mi"},
			{r + ".limits[hugepages-2Mi]", inv, "must be greater than or equal to aggregate container limits of 8Mi"},
		}},
		{"container limits above pod limits", withContainers(nil, rl("cpu", "10", "memory", "10Mi", hp2, "2Mi"),
			lims(rl("cpu", "11", "memory", "12Mi", hp2, "4Mi"))), []wantErr{
			{r + ".requests", inv, "must be less than or equal to cpu limit of 10"},
			{r + ".requests", inv, "must be less than or equal to memory limit of 10Mi"},
			{r + ".requests[hugepages-2Mi]", inv, aggrReq + "4Mi"},
			{r + ".limits[hugepages-2Mi]", inv, "must be greater than or equal to aggregate container limits of 4Mi"},
			{r + ".containers[0][cpu].limits", inv, "must be less than or equal to pod limits of 10"},
			{r + ".containers[0][memory].limits", inv, "must be less than or equal to pod limits of 10Mi"},
			{r + ".containers[0][hugepages-2Mi].limits", inv, "must be less than or equal to pod limits of 2Mi"},
		}},
		{"init container requests above pod requests", func(p *corev1.Pod) {
			podLevel(rl("cpu", "3"), nil)(p)
			c0(p).Resources = reqs(rl("cpu", "2"))
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "img", Resources: reqs(rl("cpu", "4"))}}
		}, []wantErr{{r + ".requests[cpu]", inv, aggrReq + "4"}}},
		{"sidecar requests add to the app containers'", func(p *corev1.Pod) {
			podLevel(rl("cpu", "3"), nil)(p)
			c0(p).Resources = reqs(rl("cpu", "2"))
			s := sidecar("s")
			s.Resources = reqs(rl("cpu", "1500m"))
			p.Spec.InitContainers = []corev1.Container{s}
		}, []wantErr{{r + ".requests[cpu]", inv, aggrReq + "3500m"}}},
		{"sidecar and app containers within pod requests", func(p *corev1.Pod) {
			podLevel(rl("cpu", "3"), nil)(p)
			c0(p).Resources = reqs(rl("cpu", "2"))
			s := sidecar("s")
			s.Resources = reqs(rl("cpu", "1"))
			p.Spec.InitContainers = []corev1.Container{s}
		}, nil},

		// DefaultPodLevelResources (TestApplyPodLevelResourceDefaults).
		{"cpu request defaulted from containers' when only requests are set", withContainers(rl("memory", "1Gi"), nil,
			reqs(rl("cpu", "5m")), reqs(rl("cpu", "6m"))), nil},
		{"limit defaulted to the request above the containers' limits", withContainers(rl("cpu", "2"), nil,
			lims(rl("cpu", "1"))), nil},
		{"hugepages limit defaulted from the containers'", withContainers(rl("cpu", "1"), nil,
			lims(rl("cpu", "1", hp2, "2Mi"))), nil},
		{"hugepages limit defaulted from the containers' is above the request", withContainers(rl("cpu", "1", hp2, "2Mi"), nil,
			lims(rl("cpu", "1", hp2, "4Mi"))), []wantErr{
			{r + ".requests", inv, "must be equal to hugepages-2Mi limit of 4Mi"},
			{r + ".requests[hugepages-2Mi]", inv, aggrReq + "4Mi"},
		}},
		{"hugepages request, limit defaulted from every container's", func(p *corev1.Pod) {
			withContainers(rl("cpu", "1", hp2, "2Mi"), nil, lims(rl("cpu", "1", hp2, "2Mi")))(p)
		}, nil},
		{"hugepages request, an init container without limits", func(p *corev1.Pod) {
			withContainers(rl("cpu", "1", hp2, "2Mi"), nil, lims(rl("cpu", "1", hp2, "2Mi")))(p)
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "img"}}
		}, []wantErr{{r + ".limits", req, "Limit must be set for non overcommitable resources"}}},
		{"hugepages request, an ephemeral container without limits", func(p *corev1.Pod) {
			withContainers(rl("cpu", "1", hp2, "2Mi"), nil, lims(rl("cpu", "1", hp2, "2Mi")))(p)
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e", Image: "img"}}}
		}, []wantErr{{r + ".limits", req, "Limit must be set for non overcommitable resources"}}},
		{"hugepages request, a sidecar's limits count", func(p *corev1.Pod) {
			withContainers(rl("cpu", "1", hp2, "4Mi"), nil, lims(rl("cpu", "1", hp2, "2Mi")))(p)
			s := sidecar("s")
			s.Resources = lims(rl("cpu", "1", hp2, "2Mi"))
			p.Spec.InitContainers = []corev1.Container{s}
		}, []wantErr{
			{r + ".requests[cpu]", inv, aggrReq + "2"},
		}},

		// TestValidateOverhead.
		{"overhead cpu and memory", func(p *corev1.Pod) { p.Spec.Overhead = rl("cpu", "10", "memory", "10G") }, nil},
		{"overhead empty", func(p *corev1.Pod) { p.Spec.Overhead = corev1.ResourceList{} }, nil},
		{"overhead unqualified name", func(p *corev1.Pod) { p.Spec.Overhead = rl("my.org", "10m") }, []wantErr{
			{o + ".limits[my.org]", inv, "must be a standard resource type or fully qualified"},
			{o + ".limits[my.org]", inv, "must be a standard resource for containers"},
		}},
		{"overhead negative", func(p *corev1.Pod) { p.Spec.Overhead = rl("cpu", "-1") },
			[]wantErr{{o + ".limits[cpu]", inv, "must be greater than or equal to 0"}}},
		{"overhead extended resource not whole", func(p *corev1.Pod) { p.Spec.Overhead = rl("cpu", "1", "example.com/foo", "500m") },
			[]wantErr{{o + ".limits[example.com/foo]", inv, "must be an integer"}}},
		{"overhead extended resource without a request", func(p *corev1.Pod) { p.Spec.Overhead = rl("cpu", "1", "example.com/foo", "1") }, nil},
		{"overhead hugepages only", func(p *corev1.Pod) { p.Spec.Overhead = rl(hp2, "2Mi") },
			[]wantErr{{o, forb, "HugePages require cpu or memory"}}},
		{"overhead hugepages not a page multiple", func(p *corev1.Pod) { p.Spec.Overhead = rl("cpu", "1", hp2, "1Mi") },
			[]wantErr{{o + ".limits[hugepages-2Mi]", inv, "1Mi is not positive integer multiple of hugepages-2Mi"}}},
	}
}

// TestPodResources: each row's errors, and the same errors for the pod
// defaults.Pod gives.
func TestPodResources(t *testing.T) {
	for _, tc := range podResourceCases() {
		t.Run(tc.name, func(t *testing.T) {
			pod := validPod()
			tc.mutate(pod)
			matchErrs(t, Pod(pod), tc.want)
			d := pod.DeepCopy()
			defaults.Pod(d)
			t.Run("defaulted", func(t *testing.T) { matchErrs(t, Pod(d), tc.want) })
		})
	}
}
