package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/defaults"
)

// Error types, short.
const (
	req  = field.ErrorTypeRequired
	inv  = field.ErrorTypeInvalid
	nsup = field.ErrorTypeNotSupported
	dup  = field.ErrorTypeDuplicate
	forb = field.ErrorTypeForbidden
	nf   = field.ErrorTypeNotFound
	many = field.ErrorTypeTooMany
	long = field.ErrorTypeTooLong
)

// c0 is the base pod's container.
func c0(p *corev1.Pod) *corev1.Container { return &p.Spec.Containers[0] }

func q(s string) resource.Quantity { return resource.MustParse(s) }

func exec() corev1.ProbeHandler {
	return corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}
}

// sidecar is an init container with restartPolicy Always.
func sidecar(name string) corev1.Container {
	return corev1.Container{Name: name, Image: "img", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}
}

type containerCase struct {
	name   string
	mutate func(*corev1.Pod)
	want   []wantErr
}

// runContainerCases checks each case's errors, and that defaulting the pod
// first (defaults.Pod, the API server's) changes nothing of the answer.
func runContainerCases(t *testing.T, cases []containerCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := validPod()
			tc.mutate(pod)
			errs := Pod(pod)
			checkErrs(t, errs, tc.want)
			d := pod.DeepCopy()
			defaults.Pod(d)
			if derrs := Pod(d); (len(derrs) == 0) != (len(errs) == 0) {
				t.Errorf("defaulted pod: %v, undefaulted: %v", derrs, errs)
			}
		})
	}
}

func TestContainerNamesAndImages(t *testing.T) {
	runContainerCases(t, []containerCase{
		{"valid", func(*corev1.Pod) {}, nil},
		{"no containers", func(p *corev1.Pod) { p.Spec.Containers = nil },
			[]wantErr{{"spec.containers", req, ""}}},
		{"no name", func(p *corev1.Pod) { c0(p).Name = "" },
			[]wantErr{{"spec.containers[0].name", req, ""}}},
		{"name not a DNS label", func(p *corev1.Pod) { c0(p).Name = "Bad_Name" },
			[]wantErr{{"spec.containers[0].name", inv, "a lowercase RFC 1123 label must consist of"}}},
		{"name too long", func(p *corev1.Pod) { c0(p).Name = strings.Repeat("a", 64) },
			[]wantErr{{"spec.containers[0].name", inv, "must be no more than 63 characters"}}},
		{"duplicate app container", func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c", Image: "img"})
		}, []wantErr{{"spec.containers[1].name", dup, `Duplicate value: "c"`}}},
		{"two app containers without names", func(p *corev1.Pod) {
			p.Spec.Containers = []corev1.Container{{Image: "img"}, {Image: "img"}}
		}, []wantErr{{"spec.containers[0].name", req, ""}, {"spec.containers[1].name", req, ""}, {"spec.containers[1].name", dup, ""}}},
		{"init container named as app container", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "c", Image: "img"}}
		}, []wantErr{{"spec.initContainers[0].name", dup, ""}}},
		{"two init containers with one name", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "img"}, {Name: "i", Image: "img"}}
		}, []wantErr{{"spec.initContainers[1].name", dup, ""}}},
		{"two init containers without names", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Image: "img"}, {Image: "img"}}
		}, []wantErr{{"spec.initContainers[0].name", req, ""}, {"spec.initContainers[1].name", req, ""}}},
		{"ephemeral container named as init container", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "img"}}
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "i", Image: "img"}}}
		}, []wantErr{{"spec.ephemeralContainers[0].name", dup, ""}}},
		{"no image", func(p *corev1.Pod) { c0(p).Image = "" },
			[]wantErr{{"spec.containers[0].image", req, ""}}},
		{"init container without image", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i"}}
		}, []wantErr{{"spec.initContainers[0].image", req, ""}}},
		{"image with leading space", func(p *corev1.Pod) { c0(p).Image = " img" },
			[]wantErr{{"spec.containers[0].image", inv, "must not have leading or trailing whitespace"}}},
		{"init image with trailing newline", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "img\n"}}
		}, []wantErr{{"spec.initContainers[0].image", inv, "must not have leading or trailing whitespace"}}},
		{"image only spaces", func(p *corev1.Pod) { c0(p).Image = "  " },
			[]wantErr{{"spec.containers[0].image", inv, "whitespace"}}},
		{"pull policy empty is defaulted", func(p *corev1.Pod) { c0(p).ImagePullPolicy = "" }, nil},
		{"pull policy Never", func(p *corev1.Pod) { c0(p).ImagePullPolicy = corev1.PullNever }, nil},
		{"pull policy bad", func(p *corev1.Pod) { c0(p).ImagePullPolicy = "Sometimes" },
			[]wantErr{{"spec.containers[0].imagePullPolicy", nsup, `supported values: "Always", "IfNotPresent", "Never"`}}},
		{"termination message policy FallbackToLogsOnError", func(p *corev1.Pod) {
			c0(p).TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
		}, nil},
		{"termination message policy bad", func(p *corev1.Pod) { c0(p).TerminationMessagePolicy = "Log" },
			[]wantErr{{"spec.containers[0].terminationMessagePolicy", nsup, `supported values: "File", "FallbackToLogsOnError"`}}},
		{"termination message path any", func(p *corev1.Pod) { c0(p).TerminationMessagePath = "relative/../x" }, nil},
	})
}

func TestContainerPorts(t *testing.T) {
	ports := func(ps ...corev1.ContainerPort) func(*corev1.Pod) {
		return func(p *corev1.Pod) { c0(p).Ports = ps }
	}
	runContainerCases(t, []containerCase{
		{"valid", ports(
			corev1.ContainerPort{Name: "http", ContainerPort: 80},
			corev1.ContainerPort{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP, HostPort: 53, HostIP: "10.0.0.1"},
			corev1.ContainerPort{ContainerPort: 9, Protocol: corev1.ProtocolSCTP},
			corev1.ContainerPort{ContainerPort: 65535, HostPort: 65535},
		), nil},
		{"no containerPort", ports(corev1.ContainerPort{Name: "p"}),
			[]wantErr{{"spec.containers[0].ports[0].containerPort", req, ""}}},
		{"containerPort too large", ports(corev1.ContainerPort{ContainerPort: 65536}),
			[]wantErr{{"spec.containers[0].ports[0].containerPort", inv, "must be between 1 and 65535, inclusive"}}},
		{"containerPort negative", ports(corev1.ContainerPort{ContainerPort: -1}),
			[]wantErr{{"spec.containers[0].ports[0].containerPort", inv, "must be between 1 and 65535"}}},
		{"hostPort too large", ports(corev1.ContainerPort{ContainerPort: 80, HostPort: 70000}),
			[]wantErr{{"spec.containers[0].ports[0].hostPort", inv, "must be between 1 and 65535"}}},
		{"hostPort negative", ports(corev1.ContainerPort{ContainerPort: 80, HostPort: -1}),
			[]wantErr{{"spec.containers[0].ports[0].hostPort", inv, "must be between 1 and 65535"}}},
		{"protocol bad", ports(corev1.ContainerPort{ContainerPort: 80, Protocol: "tcp"}),
			[]wantErr{{"spec.containers[0].ports[0].protocol", nsup, `supported values: "SCTP", "TCP", "UDP"`}}},
		{"name too long", ports(corev1.ContainerPort{Name: "abcdefghijklmnop", ContainerPort: 80}),
			[]wantErr{{"spec.containers[0].ports[0].name", inv, "must be no more than 15 characters"}}},
		{"name without letters", ports(corev1.ContainerPort{Name: "123", ContainerPort: 80}),
			[]wantErr{{"spec.containers[0].ports[0].name", inv, "must contain at least one letter"}}},
		{"name with underscore", ports(corev1.ContainerPort{Name: "a_b", ContainerPort: 80}),
			[]wantErr{{"spec.containers[0].ports[0].name", inv, "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"}}},
		{"duplicate name", ports(corev1.ContainerPort{Name: "p", ContainerPort: 80}, corev1.ContainerPort{Name: "p", ContainerPort: 81}),
			[]wantErr{{"spec.containers[0].ports[1].name", dup, `Duplicate value: "p"`}}},
		{"duplicate invalid name once each", ports(corev1.ContainerPort{Name: "a_b", ContainerPort: 80}, corev1.ContainerPort{Name: "a_b", ContainerPort: 81}),
			[]wantErr{{"spec.containers[0].ports[0].name", inv, ""}, {"spec.containers[0].ports[1].name", inv, ""}}},
		{"same containerPort twice", ports(corev1.ContainerPort{ContainerPort: 80}, corev1.ContainerPort{ContainerPort: 80}), nil},
		{"duplicate hostPort in a container", ports(corev1.ContainerPort{ContainerPort: 80, HostPort: 8080}, corev1.ContainerPort{ContainerPort: 81, HostPort: 8080, Protocol: corev1.ProtocolTCP}),
			[]wantErr{{"spec.containers[0].ports[1].hostPort", dup, `Duplicate value: "TCP//8080"`}}},
		{"hostPort on two protocols", ports(corev1.ContainerPort{ContainerPort: 53, HostPort: 53}, corev1.ContainerPort{ContainerPort: 53, HostPort: 53, Protocol: corev1.ProtocolUDP}), nil},
		{"hostPort on two host IPs", ports(corev1.ContainerPort{ContainerPort: 80, HostPort: 80, HostIP: "10.0.0.1"}, corev1.ContainerPort{ContainerPort: 80, HostPort: 80, HostIP: "10.0.0.2"}), nil},
		{"duplicate hostPort across app containers", func(p *corev1.Pod) {
			c0(p).Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80}}
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "d", Image: "img", Ports: []corev1.ContainerPort{{ContainerPort: 81, HostPort: 80}}})
		}, []wantErr{{"spec.containers[1].ports[0].hostPort", dup, "TCP//80"}}},
		{"init container may reuse an app container's hostPort", func(p *corev1.Pod) {
			c0(p).Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80}}
			p.Spec.InitContainers = []corev1.Container{
				{Name: "i", Image: "img", Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80}}},
				{Name: "j", Image: "img", Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80}}},
			}
		}, nil},
		{"duplicate hostPort in an init container is named as the first", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{
				{Name: "i", Image: "img"},
				{Name: "j", Image: "img", Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80}, {ContainerPort: 81, HostPort: 80}}},
			}
		}, []wantErr{{"spec.initContainers[0].ports[1].hostPort", dup, "TCP//80"}}},
		{"hostNetwork: hostPort unset is containerPort", func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			c0(p).Ports = []corev1.ContainerPort{{ContainerPort: 80}}
		}, nil},
		{"hostNetwork: hostPort differs", func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			c0(p).Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		}, []wantErr{{"spec.containers[0].ports[0].hostPort", inv, "must match `containerPort` when `hostNetwork` is true"}}},
		{"hostNetwork: defaulted hostPorts collide", func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			c0(p).Ports = []corev1.ContainerPort{{ContainerPort: 80}}
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "d", Image: "img", Ports: []corev1.ContainerPort{{ContainerPort: 80}}})
		}, []wantErr{{"spec.containers[1].ports[0].hostPort", dup, "TCP//80"}}},
		{"hostNetwork: init container's hostPort may differ", func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "img", Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 81}}}}
		}, nil},
	})
}
