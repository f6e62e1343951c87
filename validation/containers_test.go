package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
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
			matchErrs(t, errs, tc.want)
			d := pod.DeepCopy()
			defaults.Pod(d)
			if derrs := Pod(d); (len(derrs) == 0) != (len(errs) == 0) {
				t.Errorf("defaulted pod: %v, undefaulted: %v", derrs, errs)
			}
		})
	}
}

// matchErrs is checkErrs in any order: the API server's order depends on
// map iteration (resources) and on which function checks a rule first.
func matchErrs(t *testing.T, errs field.ErrorList, want []wantErr) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d: %v", len(errs), len(want), errs)
	}
	used := make([]bool, len(errs))
next:
	for _, w := range want {
		for i, e := range errs {
			if !used[i] && e.Field == w.field && e.Type == w.typ && strings.Contains(e.Error(), w.msg) {
				used[i] = true
				continue next
			}
		}
		t.Errorf("no error %s %s %q in %v", w.field, w.typ, w.msg, errs)
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

func TestContainerEnv(t *testing.T) {
	env := func(vars ...corev1.EnvVar) func(*corev1.Pod) {
		return func(p *corev1.Pod) { c0(p).Env = vars }
	}
	from := func(s corev1.EnvVarSource) corev1.EnvVar { return corev1.EnvVar{Name: "V", ValueFrom: &s} }
	fieldRef := func(path string) corev1.EnvVar {
		return from(corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}})
	}
	resRef := func(res, divisor string) corev1.EnvVar {
		s := &corev1.ResourceFieldSelector{Resource: res}
		if divisor != "" {
			s.Divisor = q(divisor)
		}
		return from(corev1.EnvVarSource{ResourceFieldRef: s})
	}
	emptyDir := func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "env", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	}
	fileRef := func(vol, path, key string) corev1.EnvVar {
		return from(corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: vol, Path: path, Key: key}})
	}
	const vf = "spec.containers[0].env[0].valueFrom"
	runContainerCases(t, []containerCase{
		{"valid", env(
			corev1.EnvVar{Name: "A", Value: "a"},
			corev1.EnvVar{Name: "a.b-c"},
			corev1.EnvVar{Name: "1st with space and =?"[:3]},
			fieldRef("metadata.name"),
			fieldRef("spec.host"),
			fieldRef("status.podIPs"),
			fieldRef("metadata.labels['app']"),
			fieldRef("metadata.annotations['Example.com/Key']"),
			resRef("limits.memory", "1Mi"),
			resRef("requests.cpu", "1m"),
			resRef("limits.hugepages-2Mi", "1Ki"),
			from(corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "k.e-y_1"}}),
			from(corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}),
		), nil},
		{"relaxed name: any printable but '='", env(corev1.EnvVar{Name: "my var$!"}), nil},
		{"no name", env(corev1.EnvVar{Value: "a"}),
			[]wantErr{{"spec.containers[0].env[0].name", req, ""}}},
		{"name with '='", env(corev1.EnvVar{Name: "A=B"}),
			[]wantErr{{"spec.containers[0].env[0].name", inv, "a valid environment variable name must consist only of printable ASCII characters other than '='"}}},
		{"name with a tab", env(corev1.EnvVar{Name: "A\tB"}),
			[]wantErr{{"spec.containers[0].env[0].name", inv, "printable ASCII"}}},
		{"valueFrom empty", env(from(corev1.EnvVarSource{})),
			[]wantErr{{vf, inv, "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"}}},
		{"value and valueFrom", env(corev1.EnvVar{Name: "V", Value: "x", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}),
			[]wantErr{{vf, inv, "may not be specified when `value` is not empty"}}},
		{"two sources", env(from(corev1.EnvVarSource{
			FieldRef:        &corev1.ObjectFieldSelector{FieldPath: "metadata.name"},
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, Key: "k"},
		})), []wantErr{{vf, inv, "may not have more than one field specified at a time"}}},
		{"fieldRef apiVersion v1 explicit", env(from(corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.uid"}})), nil},
		{"fieldRef apiVersion v2", env(from(corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.uid"}})),
			[]wantErr{{vf + ".fieldRef.fieldPath", inv, "error converting fieldPath: unsupported pod version: v2"}}},
		{"fieldRef no path", env(fieldRef("")),
			[]wantErr{{vf + ".fieldRef.fieldPath", req, ""}}},
		{"fieldRef unknown path", env(fieldRef("metadata.foo")),
			[]wantErr{{vf + ".fieldRef.fieldPath", inv, "error converting fieldPath: field label not supported: metadata.foo"}}},
		{"fieldRef path the conversion knows but env does not", env(fieldRef("status.phase")),
			[]wantErr{{vf + ".fieldRef.fieldPath", nsup, `supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"`}}},
		{"fieldRef all labels", env(fieldRef("metadata.labels")),
			[]wantErr{{vf + ".fieldRef.fieldPath", nsup, ""}}},
		{"fieldRef subscript of a plain field", env(fieldRef("metadata.name['x']")),
			[]wantErr{{vf + ".fieldRef.fieldPath", inv, "field label does not support subscript: metadata.name['x']"}}},
		{"fieldRef bad label key", env(fieldRef("metadata.labels['a b']")),
			[]wantErr{{vf + ".fieldRef", inv, "name part must consist of alphanumeric characters"}}},
		{"resourceFieldRef no resource", env(resRef("", "")),
			[]wantErr{{vf + ".resourceFieldRef.resource", req, ""}}},
		{"resourceFieldRef unknown resource", env(resRef("limits.gpu", "")),
			[]wantErr{{vf + ".resourceFieldRef.resource", nsup, `supported values: "limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"`}}},
		{"resourceFieldRef cpu divisor", env(resRef("limits.cpu", "2")),
			[]wantErr{{vf + ".resourceFieldRef.divisor", inv, "only divisor's values 1m and 1 are supported with the cpu resource"}}},
		{"resourceFieldRef memory divisor", env(resRef("requests.memory", "1m")),
			[]wantErr{{vf + ".resourceFieldRef.divisor", inv, "with the memory resource"}}},
		{"resourceFieldRef storage divisor", env(resRef("limits.ephemeral-storage", "3")),
			[]wantErr{{vf + ".resourceFieldRef.divisor", inv, "with the local ephemeral storage resource"}}},
		{"resourceFieldRef hugepages divisor", env(resRef("requests.hugepages-1Gi", "2Mi")),
			[]wantErr{{vf + ".resourceFieldRef.divisor", inv, "with the hugepages resource"}}},
		{"resourceFieldRef zero divisor is unset", env(resRef("limits.cpu", "0")), nil},
		{"configMapKeyRef no name", env(from(corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{Key: "k"}})),
			[]wantErr{{vf + ".configMapKeyRef.name", inv, "RFC 1123 subdomain"}}},
		{"configMapKeyRef no key", env(from(corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}})),
			[]wantErr{{vf + ".configMapKeyRef.key", req, ""}}},
		{"secretKeyRef bad key", env(from(corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "a/b"}})),
			[]wantErr{{vf + ".secretKeyRef.key", inv, "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"}}},
		{"secretKeyRef bad name", env(from(corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "S"}, Key: "k"}})),
			[]wantErr{{vf + ".secretKeyRef.name", inv, ""}}},
		{"fileKeyRef valid", func(p *corev1.Pod) { emptyDir(p); c0(p).Env = []corev1.EnvVar{fileRef("env", "vars.env", "KEY")} }, nil},
		{"fileKeyRef of a volume with no source (an emptyDir)", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "env"}}
			c0(p).Env = []corev1.EnvVar{fileRef("env", "vars.env", "KEY")}
		}, nil},
		{"fileKeyRef empty", func(p *corev1.Pod) { emptyDir(p); c0(p).Env = []corev1.EnvVar{fileRef("", "", "")} },
			[]wantErr{{vf + ".fileKeyRef.key", req, ""}, {vf + ".fileKeyRef.volumeName", req, ""}, {vf + ".fileKeyRef.path", req, ""}, {vf + ".fileKeyRef.volumeName", nf, ""}}},
		{"fileKeyRef path escapes", func(p *corev1.Pod) { emptyDir(p); c0(p).Env = []corev1.EnvVar{fileRef("env", "../x", "K")} },
			[]wantErr{{vf + ".fileKeyRef.path", inv, "must not contain '..'"}}},
		{"fileKeyRef absolute path allowed", func(p *corev1.Pod) { emptyDir(p); c0(p).Env = []corev1.EnvVar{fileRef("env", "/x", "K")} }, nil},
		{"fileKeyRef bad key", func(p *corev1.Pod) { emptyDir(p); c0(p).Env = []corev1.EnvVar{fileRef("env", "x", "A=B")} },
			[]wantErr{{vf + ".fileKeyRef.key", inv, "printable ASCII"}}},
		{"fileKeyRef bad volume name", func(p *corev1.Pod) { emptyDir(p); c0(p).Env = []corev1.EnvVar{fileRef("Env", "x", "K")} },
			[]wantErr{{vf + ".fileKeyRef.volumeName", inv, "RFC 1123 label"}, {vf + ".fileKeyRef.volumeName", nf, ""}}},
		{"fileKeyRef of a configMap volume", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "env", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}}
			c0(p).Env = []corev1.EnvVar{fileRef("env", "x", "K")}
		}, []wantErr{{vf + ".fileKeyRef.volumeName", inv, "referenced volume must be of type emptyDir"}}},
		{"envFrom valid", func(p *corev1.Pod) {
			c0(p).EnvFrom = []corev1.EnvFromSource{
				{Prefix: "P_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
				{Prefix: "1 odd prefix", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s-"}}},
			}
		}, nil},
		{"envFrom no source", func(p *corev1.Pod) { c0(p).EnvFrom = []corev1.EnvFromSource{{Prefix: "P"}} },
			[]wantErr{{"spec.containers[0].envFrom", inv, "must specify one of: `configMapRef` or `secretRef`"}}},
		{"envFrom two sources", func(p *corev1.Pod) {
			c0(p).EnvFrom = []corev1.EnvFromSource{{
				ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}},
				SecretRef:    &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}},
			}}
		}, []wantErr{{"spec.containers[0].envFrom", inv, "may not have more than one field specified at a time"}}},
		{"envFrom no name", func(p *corev1.Pod) {
			c0(p).EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{}}}
		}, []wantErr{{"spec.containers[0].envFrom[0].secretRef.name", req, ""}}},
		{"envFrom bad name", func(p *corev1.Pod) {
			c0(p).EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "a_b"}}}}
		}, []wantErr{{"spec.containers[0].envFrom[0].configMapRef.name", inv, "RFC 1123 subdomain"}}},
		{"envFrom bad prefix", func(p *corev1.Pod) {
			c0(p).EnvFrom = []corev1.EnvFromSource{{Prefix: "A=", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}
		}, []wantErr{{"spec.containers[0].envFrom[0].prefix", inv, "printable ASCII"}}},
	})
}

func TestContainerVolumeMounts(t *testing.T) {
	// Rows with alpha fields are checked as with their gates on.
	s, b, g, h := containerStopSignals, volumeBindMountOptions, grpcContainerProbeTLS, h2cContainerProbe
	containerStopSignals, volumeBindMountOptions, grpcContainerProbeTLS, h2cContainerProbe = true, true, true, true
	t.Cleanup(func() {
		containerStopSignals, volumeBindMountOptions, grpcContainerProbeTLS, h2cContainerProbe = s, b, g, h
	})
	vols := func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
			{Name: "blk", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}},
			{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "example.com/x:1"}}},
		}
	}
	mounts := func(m ...corev1.VolumeMount) func(*corev1.Pod) {
		return func(p *corev1.Pod) { vols(p); c0(p).VolumeMounts = m }
	}
	devices := func(m []corev1.VolumeMount, d ...corev1.VolumeDevice) func(*corev1.Pod) {
		return func(p *corev1.Pod) { vols(p); c0(p).VolumeMounts = m; c0(p).VolumeDevices = d }
	}
	privileged := func(f func(*corev1.Pod)) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			f(p)
			c0(p).SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}
	}
	prop := func(m corev1.MountPropagationMode) *corev1.MountPropagationMode { return &m }
	rro := func(m corev1.RecursiveReadOnlyMode) *corev1.RecursiveReadOnlyMode { return &m }
	const vm = "spec.containers[0].volumeMounts"
	runContainerCases(t, []containerCase{
		{"valid", mounts(
			corev1.VolumeMount{Name: "data", MountPath: "/data"},
			corev1.VolumeMount{Name: "data", MountPath: "/sub", SubPath: "a/b"},
			corev1.VolumeMount{Name: "data", MountPath: "/expr", SubPathExpr: "$(POD_NAME)"},
			corev1.VolumeMount{Name: "cfg", MountPath: "relative:path", ReadOnly: true, RecursiveReadOnly: rro(corev1.RecursiveReadOnlyEnabled)},
			corev1.VolumeMount{Name: "cfg", MountPath: "/cfg2", ReadOnly: true, RecursiveReadOnly: rro(corev1.RecursiveReadOnlyIfPossible), MountPropagation: prop(corev1.MountPropagationNone)},
			corev1.VolumeMount{Name: "cfg", MountPath: "/cfg3", RecursiveReadOnly: rro(corev1.RecursiveReadOnlyDisabled), MountPropagation: prop(corev1.MountPropagationHostToContainer)},
			corev1.VolumeMount{Name: "data", MountPath: "/opts", BindMountOptions: []string{"nodev", "noexec", "nosuid"}},
			corev1.VolumeMount{Name: "img", MountPath: "/img"},
		), nil},
		{"no name", mounts(corev1.VolumeMount{MountPath: "/x"}),
			[]wantErr{{vm + "[0].name", req, ""}, {vm + "[0].name", nf, ""}}},
		{"unknown volume", mounts(corev1.VolumeMount{Name: "nope", MountPath: "/x"}),
			[]wantErr{{vm + "[0].name", nf, `Not found: "nope"`}}},
		{"no mountPath", mounts(corev1.VolumeMount{Name: "data"}),
			[]wantErr{{vm + "[0].mountPath", req, ""}}},
		{"mountPath twice", mounts(corev1.VolumeMount{Name: "data", MountPath: "/x"}, corev1.VolumeMount{Name: "cfg", MountPath: "/x"}),
			[]wantErr{{vm + "[1].mountPath", inv, "must be unique"}}},
		{"subPath absolute", mounts(corev1.VolumeMount{Name: "data", MountPath: "/x", SubPath: "/etc"}),
			[]wantErr{{vm + ".subPath", inv, "must be a relative path"}}},
		{"subPath backsteps", mounts(corev1.VolumeMount{Name: "data", MountPath: "/x", SubPath: "a/../../b"}),
			[]wantErr{{vm + ".subPath", inv, "must not contain '..'"}}},
		{"subPath dots in a name", mounts(corev1.VolumeMount{Name: "data", MountPath: "/x", SubPath: "a..b/..c"}), nil},
		{"subPathExpr and subPath", mounts(corev1.VolumeMount{Name: "data", MountPath: "/x", SubPath: "a", SubPathExpr: "b"}),
			[]wantErr{{vm + "[0].subPathExpr", inv, "subPathExpr and subPath are mutually exclusive"}}},
		{"subPathExpr absolute with backsteps", mounts(corev1.VolumeMount{Name: "data", MountPath: "/x", SubPathExpr: "/$(A)/.."}),
			[]wantErr{{vm + ".subPathExpr", inv, "must be a relative path"}, {vm + ".subPathExpr", inv, "must not contain '..'"}}},
		{"propagation bad", mounts(corev1.VolumeMount{Name: "data", MountPath: "/x", MountPropagation: prop("Shared")}),
			[]wantErr{{vm + ".mountPropagation", nsup, `supported values: "Bidirectional", "HostToContainer", "None"`}}},
		{"bidirectional unprivileged", mounts(corev1.VolumeMount{Name: "data", MountPath: "/x", MountPropagation: prop(corev1.MountPropagationBidirectional)}),
			[]wantErr{{vm + ".mountPropagation", forb, "Bidirectional mount propagation is available only to privileged containers"}}},
		{"bidirectional privileged", privileged(mounts(corev1.VolumeMount{Name: "data", MountPath: "/x", MountPropagation: prop(corev1.MountPropagationBidirectional)})), nil},
		{"recursiveReadOnly without readOnly", mounts(corev1.VolumeMount{Name: "data", MountPath: "/x", RecursiveReadOnly: rro(corev1.RecursiveReadOnlyEnabled)}),
			[]wantErr{{vm + ".recursiveReadOnly", forb, "may only be specified when readOnly is true"}}},
		{"recursiveReadOnly with propagation", mounts(corev1.VolumeMount{Name: "data", MountPath: "/x", ReadOnly: true, RecursiveReadOnly: rro(corev1.RecursiveReadOnlyIfPossible), MountPropagation: prop(corev1.MountPropagationHostToContainer)}),
			[]wantErr{{vm + ".recursiveReadOnly", forb, "may only be specified when mountPropagation is None or not specified"}}},
		{"recursiveReadOnly bad", mounts(corev1.VolumeMount{Name: "data", MountPath: "/x", RecursiveReadOnly: rro("Always")}),
			[]wantErr{{vm + ".recursiveReadOnly", nsup, `supported values: "Disabled", "Enabled", "IfPossible"`}}},
		{"bindMountOptions bad and twice", mounts(corev1.VolumeMount{Name: "data", MountPath: "/x", BindMountOptions: []string{"ro", "nodev", "nodev"}}),
			[]wantErr{{vm + "[0].bindMountOptions[0]", nsup, `supported values: "nodev", "noexec", "nosuid"`}, {vm + "[0].bindMountOptions[2]", dup, ""}}},
		{"bindMountOptions on an image volume", mounts(corev1.VolumeMount{Name: "img", MountPath: "/x", BindMountOptions: []string{"noexec"}}),
			[]wantErr{{vm + "[0].bindMountOptions", inv, "bindMountOptions may not be used with image volumes"}}},
		{"device valid", devices(nil, corev1.VolumeDevice{Name: "blk", DevicePath: "/dev/xvda"}), nil},
		{"device of a non-PVC volume", devices(nil, corev1.VolumeDevice{Name: "data", DevicePath: "/dev/xvda"}),
			[]wantErr{{"spec.containers[0].volumeDevices[0].name", inv, "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"}}},
		{"device unknown", devices(nil, corev1.VolumeDevice{Name: "nope", DevicePath: "/dev/xvda"}),
			[]wantErr{{"spec.containers[0].volumeDevices[0].name", nf, ""}}},
		{"device empty", devices(nil, corev1.VolumeDevice{}),
			[]wantErr{{"spec.containers[0].volumeDevices[0].name", req, ""}, {"spec.containers[0].volumeDevices[0].name", nf, ""}, {"spec.containers[0].volumeDevices[0].devicePath", req, ""}}},
		{"device twice", devices(nil, corev1.VolumeDevice{Name: "blk", DevicePath: "/dev/a"}, corev1.VolumeDevice{Name: "blk", DevicePath: "/dev/a"}),
			[]wantErr{{"spec.containers[0].volumeDevices[1].name", inv, "must be unique"}, {"spec.containers[0].volumeDevices[1].devicePath", inv, "must be unique"}}},
		{"device path backsteps", devices(nil, corev1.VolumeDevice{Name: "blk", DevicePath: "/dev/../etc"}),
			[]wantErr{{"spec.containers[0].volumeDevices[0].devicePath", inv, "can not contain backsteps ('..')"}}},
		{"device and mount of one volume", devices([]corev1.VolumeMount{{Name: "blk", MountPath: "/m"}}, corev1.VolumeDevice{Name: "blk", DevicePath: "/dev/a"}),
			[]wantErr{{vm + "[0].name", inv, "must not already exist in volumeDevices"}, {"spec.containers[0].volumeDevices[0].name", inv, "must not already exist in volumeMounts"}}},
		{"device at a mount's path", devices([]corev1.VolumeMount{{Name: "data", MountPath: "/m"}}, corev1.VolumeDevice{Name: "blk", DevicePath: "/m"}),
			[]wantErr{{vm + "[0].mountPath", inv, "must not already exist as a path in volumeDevices"}, {"spec.containers[0].volumeDevices[0].devicePath", inv, "must not already exist as a path in volumeMounts"}}},
	})
}

func TestContainerProbesAndLifecycle(t *testing.T) {
	// Rows with alpha fields are checked as with their gates on.
	s, b, g, h := containerStopSignals, volumeBindMountOptions, grpcContainerProbeTLS, h2cContainerProbe
	containerStopSignals, volumeBindMountOptions, grpcContainerProbeTLS, h2cContainerProbe = true, true, true, true
	t.Cleanup(func() {
		containerStopSignals, volumeBindMountOptions, grpcContainerProbeTLS, h2cContainerProbe = s, b, g, h
	})
	live := func(pr corev1.Probe) func(*corev1.Pod) { return func(p *corev1.Pod) { c0(p).LivenessProbe = &pr } }
	ready := func(pr corev1.Probe) func(*corev1.Pod) { return func(p *corev1.Pod) { c0(p).ReadinessProbe = &pr } }
	start := func(pr corev1.Probe) func(*corev1.Pod) { return func(p *corev1.Pod) { c0(p).StartupProbe = &pr } }
	hook := func(pre corev1.LifecycleHandler) func(*corev1.Pod) {
		return func(p *corev1.Pod) { c0(p).Lifecycle = &corev1.Lifecycle{PreStop: &pre} }
	}
	httpGet := func(h corev1.HTTPGetAction) corev1.Probe {
		return corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &h}}
	}
	signal := func(os corev1.OSName, s corev1.Signal) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			if os != "" {
				p.Spec.OS = &corev1.PodOS{Name: os}
			}
			c0(p).Lifecycle = &corev1.Lifecycle{StopSignal: &s}
		}
	}
	const lp = "spec.containers[0].livenessProbe"
	runContainerCases(t, []containerCase{
		{"valid, thresholds defaulted", func(p *corev1.Pod) {
			c0(p).LivenessProbe = &corev1.Probe{ProbeHandler: exec()}
			c0(p).ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}}, SuccessThreshold: 3}
			c0(p).StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9000, Mode: ptr.To(corev1.GRPCProbeModeTLS)}}, TerminationGracePeriodSeconds: ptr.To[int64](5)}
		}, nil},
		{"valid httpGet, path and scheme defaulted", live(httpGet(corev1.HTTPGetAction{Port: intstr.FromInt32(8080), HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Custom", Value: "v"}}})), nil},
		{"valid HTTP2", live(httpGet(corev1.HTTPGetAction{Port: intstr.FromInt32(8080), Scheme: corev1.URISchemeHTTP, Protocol: ptr.To(corev1.HTTPProtocolHTTP2)})), nil},
		{"no handler", live(corev1.Probe{}),
			[]wantErr{{lp, req, "must specify a handler type"}}},
		{"two handlers", live(corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"x"}}, TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(1)}}}),
			[]wantErr{{lp + ".tcpSocket", forb, "may not specify more than 1 handler type"}}},
		{"exec without command", live(corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{}}}),
			[]wantErr{{lp + ".exec.command", req, ""}}},
		{"httpGet port 0", live(httpGet(corev1.HTTPGetAction{Port: intstr.FromInt32(0)})),
			[]wantErr{{lp + ".httpGet.port", inv, "must be between 1 and 65535, inclusive"}}},
		{"httpGet port name bad", live(httpGet(corev1.HTTPGetAction{Port: intstr.FromString("a_b")})),
			[]wantErr{{lp + ".httpGet.port", inv, ""}}},
		{"httpGet scheme bad", live(httpGet(corev1.HTTPGetAction{Port: intstr.FromInt32(80), Scheme: "FTP"})),
			[]wantErr{{lp + ".httpGet.scheme", nsup, `supported values: "HTTP", "HTTPS"`}}},
		{"httpGet header name bad", live(httpGet(corev1.HTTPGetAction{Port: intstr.FromInt32(80), HTTPHeaders: []corev1.HTTPHeader{{Name: "X Bad"}}})),
			[]wantErr{{lp + ".httpGet.httpHeaders", inv, "a valid HTTP header must consist of alphanumeric characters or '-'"}}},
		{"httpGet protocol bad", live(httpGet(corev1.HTTPGetAction{Port: intstr.FromInt32(80), Protocol: ptr.To[corev1.HTTPProtocol]("HTTP3")})),
			[]wantErr{{lp + ".httpGet.protocol", nsup, `supported values: "HTTP1", "HTTP2"`}}},
		{"httpGet HTTP2 over HTTPS", live(httpGet(corev1.HTTPGetAction{Port: intstr.FromInt32(80), Scheme: corev1.URISchemeHTTPS, Protocol: ptr.To(corev1.HTTPProtocolHTTP2)})),
			[]wantErr{{lp + ".httpGet.protocol", inv, "is only supported with HTTP (H2C)"}}},
		{"httpGet HTTP2 with host", live(httpGet(corev1.HTTPGetAction{Port: intstr.FromInt32(80), Host: "example.com", Protocol: ptr.To(corev1.HTTPProtocolHTTP2)})),
			[]wantErr{{lp + ".httpGet.host", inv, "must be empty when `protocol` is \"HTTP2\""}}},
		{"grpc port and mode bad", live(corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 70000, Mode: ptr.To[corev1.GRPCProbeMode]("mTLS")}}}),
			[]wantErr{{lp + ".grpc.port", inv, "must be between 1 and 65535"}, {lp + ".grpc.mode", nsup, `supported values: "Plaintext", "TLS"`}}},
		{"negative timings", live(corev1.Probe{ProbeHandler: exec(), InitialDelaySeconds: -1, TimeoutSeconds: -1, PeriodSeconds: -1, FailureThreshold: -1}),
			[]wantErr{
				{lp + ".initialDelaySeconds", inv, "must be greater than or equal to 0"},
				{lp + ".timeoutSeconds", inv, "must be greater than or equal to 0"},
				{lp + ".periodSeconds", inv, "must be greater than or equal to 0"},
				{lp + ".failureThreshold", inv, "must be greater than or equal to 0"},
			}},
		{"liveness successThreshold 2", live(corev1.Probe{ProbeHandler: exec(), SuccessThreshold: 2}),
			[]wantErr{{lp + ".successThreshold", inv, "must be 1"}}},
		{"liveness successThreshold negative", live(corev1.Probe{ProbeHandler: exec(), SuccessThreshold: -1}),
			[]wantErr{{lp + ".successThreshold", inv, "must be greater than or equal to 0"}, {lp + ".successThreshold", inv, "must be 1"}}},
		{"startup successThreshold 2", start(corev1.Probe{ProbeHandler: exec(), SuccessThreshold: 2}),
			[]wantErr{{"spec.containers[0].startupProbe.successThreshold", inv, "must be 1"}}},
		{"probe grace 0", live(corev1.Probe{ProbeHandler: exec(), TerminationGracePeriodSeconds: ptr.To[int64](0)}),
			[]wantErr{{lp + ".terminationGracePeriodSeconds", inv, "must be greater than 0"}}},
		{"readiness probe grace", ready(corev1.Probe{ProbeHandler: exec(), TerminationGracePeriodSeconds: ptr.To[int64](10)}),
			[]wantErr{{"spec.containers[0].readinessProbe.terminationGracePeriodSeconds", inv, "must not be set for readinessProbes"}}},
		{"preStop sleep within default grace", hook(corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 30}}), nil},
		{"preStop sleep 0", hook(corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 0}}), nil},
		{"preStop sleep over default grace", hook(corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 31}}),
			[]wantErr{{"spec.containers[0].lifecycle.preStop.sleep", inv, "must be non-negative and less than terminationGracePeriodSeconds (30)"}}},
		{"preStop sleep negative", hook(corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: -1}}),
			[]wantErr{{"spec.containers[0].lifecycle.preStop.sleep", inv, "(30)"}}},
		{"preStop sleep over the pod's grace", func(p *corev1.Pod) {
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
			c0(p).Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 6}}}
		}, []wantErr{{"spec.containers[0].lifecycle.postStart.sleep", inv, "(5)"}}},
		{"preStop sleep with a negative grace (defaulted to 1)", func(p *corev1.Pod) {
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](-5)
			c0(p).Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}}
		}, nil},
		{"preStop two handlers", hook(corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"x"}}, Sleep: &corev1.SleepAction{Seconds: 1}}),
			[]wantErr{{"spec.containers[0].lifecycle.preStop.sleep", forb, "may not specify more than 1 handler type"}}},
		{"preStop empty", hook(corev1.LifecycleHandler{}),
			[]wantErr{{"spec.containers[0].lifecycle.preStop", req, "must specify a handler type"}}},
		{"preStop httpGet", hook(corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}), nil},
		{"empty lifecycle", func(p *corev1.Pod) { c0(p).Lifecycle = &corev1.Lifecycle{} }, nil},
		{"stop signal without os", signal("", corev1.SIGTERM),
			[]wantErr{{"spec.containers[0].lifecycle.stopSignal", forb, "may not be set for containers with empty `spec.os.name`"}}},
		{"stop signal linux", signal(corev1.Linux, corev1.SIGRTMAXMINUS3), nil},
		{"stop signal linux bad", signal(corev1.Linux, "SIGFOO"),
			[]wantErr{{"spec.containers[0].lifecycle.stopSignal", nsup, `"SIGABRT", "SIGALRM"`}}},
		{"init container probes and lifecycle", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "img",
				Lifecycle:      &corev1.Lifecycle{},
				LivenessProbe:  &corev1.Probe{ProbeHandler: exec()},
				ReadinessProbe: &corev1.Probe{ProbeHandler: exec()},
				StartupProbe:   &corev1.Probe{ProbeHandler: exec()},
			}}
		}, []wantErr{
			{"spec.initContainers[0].lifecycle", forb, "may not be set for init containers without restartPolicy=Always"},
			{"spec.initContainers[0].livenessProbe", forb, ""},
			{"spec.initContainers[0].readinessProbe", forb, ""},
			{"spec.initContainers[0].startupProbe", forb, ""},
		}},
		{"sidecar probes and lifecycle", func(p *corev1.Pod) {
			s := sidecar("s")
			s.LivenessProbe = &corev1.Probe{ProbeHandler: exec()}
			s.ReadinessProbe = &corev1.Probe{ProbeHandler: exec()}
			s.StartupProbe = &corev1.Probe{ProbeHandler: exec()}
			s.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}}
			p.Spec.InitContainers = []corev1.Container{s}
		}, nil},
		{"sidecar probe invalid", func(p *corev1.Pod) {
			s := sidecar("s")
			s.LivenessProbe = &corev1.Probe{}
			p.Spec.InitContainers = []corev1.Container{s}
		}, []wantErr{{"spec.initContainers[0].livenessProbe", req, "must specify a handler type"}}},
	})
}

func TestContainerResources(t *testing.T) {
	res := func(limits, requests corev1.ResourceList) func(*corev1.Pod) {
		return func(p *corev1.Pod) { c0(p).Resources = corev1.ResourceRequirements{Limits: limits, Requests: requests} }
	}
	const r = "spec.containers[0].resources"
	runContainerCases(t, []containerCase{
		{"valid", res(
			corev1.ResourceList{"cpu": q("1"), "memory": q("1Gi"), "ephemeral-storage": q("1Gi"), "hugepages-2Mi": q("4Mi"), "example.com/gpu": q("2")},
			corev1.ResourceList{"cpu": q("500m"), "memory": q("512Mi"), "hugepages-2Mi": q("4Mi"), "example.com/gpu": q("2")},
		), nil},
		{"limits only: requests defaulted", res(corev1.ResourceList{"cpu": q("1"), "example.com/gpu": q("1")}, nil), nil},
		{"requests only", res(nil, corev1.ResourceList{"cpu": q("1"), "memory": q("1Gi")}), nil},
		{"request over limit", res(corev1.ResourceList{"cpu": q("1")}, corev1.ResourceList{"cpu": q("2")}),
			[]wantErr{{r + ".requests", inv, "must be less than or equal to cpu limit of 1"}}},
		{"request over limit by less than a milli-unit (rounded equal)", res(corev1.ResourceList{"cpu": q("1.0001")}, corev1.ResourceList{"cpu": q("1.0002")}), nil},
		{"negative limit", res(corev1.ResourceList{"memory": q("-1")}, nil),
			[]wantErr{{r + ".limits[memory]", inv, "must be greater than or equal to 0"}, {r + ".requests[memory]", inv, "must be greater than or equal to 0"}}},
		{"negative request", res(nil, corev1.ResourceList{"cpu": q("-100m")}),
			[]wantErr{{r + ".requests[cpu]", inv, "must be greater than or equal to 0"}}},
		{"unknown standard name", res(nil, corev1.ResourceList{"gpu": q("1")}),
			[]wantErr{{r + ".requests[gpu]", inv, "must be a standard resource type or fully qualified"}, {r + ".requests[gpu]", inv, "must be a standard resource for containers"}}},
		{"standard but not a container's", res(nil, corev1.ResourceList{"pods": q("1")}),
			[]wantErr{{r + ".requests[pods]", inv, "must be a standard resource for containers"}}},
		{"name not qualified", res(nil, corev1.ResourceList{"a/b/c": q("1")}),
			[]wantErr{{r + ".requests[a/b/c]", inv, "must consist of alphanumeric characters"}, {r + ".requests[a/b/c]", inv, "doesn't follow extended resource name standard"}, {r + ".limits", req, "Limit must be set"}}},
		{"kubernetes.io name is native", res(nil, corev1.ResourceList{"kubernetes.io/foo": q("1.5")}), nil},
		{"extended resource fraction", res(corev1.ResourceList{"example.com/gpu": q("1.5")}, nil),
			[]wantErr{{r + ".limits[example.com/gpu]", inv, "must be an integer"}, {r + ".requests[example.com/gpu]", inv, "must be an integer"}}},
		{"extended resource fraction rounded to a whole (0.9999 is 1)", res(corev1.ResourceList{"example.com/gpu": q("0.9999")}, nil), nil},
		{"extended resource request without limit", res(nil, corev1.ResourceList{"example.com/gpu": q("1")}),
			[]wantErr{{r + ".limits", req, "Limit must be set for non overcommitable resources"}}},
		{"extended resource request below limit", res(corev1.ResourceList{"example.com/gpu": q("2")}, corev1.ResourceList{"example.com/gpu": q("1")}),
			[]wantErr{{r + ".requests", inv, "must be equal to example.com/gpu limit of 2"}}},
		{"hugepages without cpu or memory", res(corev1.ResourceList{"hugepages-2Mi": q("2Mi")}, nil),
			[]wantErr{{r, forb, "HugePages require cpu or memory"}}},
		{"hugepages not a multiple of the page", res(corev1.ResourceList{"hugepages-2Mi": q("3Mi"), "memory": q("1Gi")}, nil),
			[]wantErr{{r + ".limits[hugepages-2Mi]", inv, "3Mi is not positive integer multiple of hugepages-2Mi"}, {r + ".requests[hugepages-2Mi]", inv, "is not positive integer multiple"}}},
		{"hugepages bad page size", res(corev1.ResourceList{"hugepages-x": q("2Mi"), "cpu": q("1")}, nil),
			[]wantErr{{r + ".limits[hugepages-x]", inv, "is not positive integer multiple of hugepages-x"}, {r + ".requests[hugepages-x]", inv, ""}}},
		{"hugepages request differs from limit", res(corev1.ResourceList{"hugepages-2Mi": q("4Mi"), "cpu": q("1")}, corev1.ResourceList{"hugepages-2Mi": q("2Mi")}),
			[]wantErr{{r + ".requests", inv, "must be equal to hugepages-2Mi limit of 4Mi"}}},
		{"claims", func(p *corev1.Pod) {
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("c")}}
			c0(p).Resources.Claims = []corev1.ResourceClaim{{Name: "gpu", Request: "a"}, {Name: "gpu", Request: "b"}}
		}, nil},
		{"claim unknown", func(p *corev1.Pod) {
			c0(p).Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
		}, []wantErr{{r + ".claims[0]", nf, "must be one of the names in pod.spec.resourceClaims which is empty"}}},
		{"claim twice and empty", func(p *corev1.Pod) {
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("c")}}
			c0(p).Resources.Claims = []corev1.ResourceClaim{{Name: "gpu", Request: "a"}, {Name: "gpu"}, {Name: ""}, {Name: "gpu", Request: "B"}}
		}, []wantErr{{r + ".claims[1]", dup, ""}, {r + ".claims[2]", req, ""}, {r + ".claims[3]", dup, ""}}},
		{"resize policy valid", func(p *corev1.Pod) {
			c0(p).ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: corev1.NotRequired}, {ResourceName: "memory", RestartPolicy: corev1.RestartContainer}}
		}, nil},
		{"resize policy bad", func(p *corev1.Pod) {
			c0(p).ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: "Sometimes"}, {ResourceName: "cpu"}, {ResourceName: "gpu", RestartPolicy: corev1.NotRequired}}
		}, []wantErr{
			{"spec.containers[0].resizePolicy", nsup, `supported values: "NotRequired", "RestartContainer"`},
			{"spec.containers[0].resizePolicy[1]", dup, ""},
			{"spec.containers[0].resizePolicy", req, ""},
			{"spec.containers[0].resizePolicy", nsup, `supported values: "cpu", "memory"`},
		}},
		{"resize restart with pod restartPolicy Never", func(p *corev1.Pod) {
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			c0(p).ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: corev1.RestartContainer}}
		}, []wantErr{{"spec.containers[0].resizePolicy", inv, "must be 'NotRequired' when pod `restartPolicy` is 'Never'"}}},
		{"resize policy on a sidecar", func(p *corev1.Pod) {
			s := sidecar("s")
			s.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: corev1.RestartContainer}}
			p.Spec.InitContainers = []corev1.Container{s}
		}, nil},
		{"resize restart on an init container", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "img", ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: corev1.RestartContainer}}}}
		}, []wantErr{{"spec.initContainers[0].resizePolicy[0].restartPolicy", inv, "must not be set to 'RestartContainer' for non-sidecar initContainers"}}},
	})
}

func TestContainerRestartPolicy(t *testing.T) {
	rules := func(n int, r corev1.ContainerRestartRule) []corev1.ContainerRestartRule {
		out := make([]corev1.ContainerRestartRule, n)
		for i := range out {
			out[i] = r
		}
		return out
	}
	onExit := corev1.ContainerRestartRule{Action: corev1.ContainerRestartRuleActionRestart, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}
	runContainerCases(t, []containerCase{
		{"app container restart policy and rules", func(p *corev1.Pod) {
			c0(p).RestartPolicy = ptr.To(corev1.ContainerRestartPolicyNever)
			c0(p).RestartPolicyRules = []corev1.ContainerRestartRule{onExit, {Action: corev1.ContainerRestartRuleActionRestartAllContainers, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpNotIn}}}
		}, nil},
		{"app container restart policy bad", func(p *corev1.Pod) { c0(p).RestartPolicy = ptr.To[corev1.ContainerRestartPolicy]("Sometimes") },
			[]wantErr{{"spec.containers[0].restartPolicy", nsup, `supported values: "Always", "Never", "OnFailure"`}}},
		{"rules without policy", func(p *corev1.Pod) { c0(p).RestartPolicyRules = []corev1.ContainerRestartRule{{Action: "Stop"}} },
			[]wantErr{
				{"spec.containers[0].restartPolicy", req, "must specify restartPolicy when restart rules are used"},
				{"spec.containers[0].restartPolicyRules[0].action", nsup, `supported values: "Restart", "RestartAllContainers"`},
				{"spec.containers[0].restartPolicyRules[0].exitCodes", req, "must be specified"},
			}},
		{"rule operator bad and too many values", func(p *corev1.Pod) {
			c0(p).RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
			c0(p).RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestart, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: "Is", Values: make([]int32, 256)}}}
		}, []wantErr{
			{"spec.containers[0].restartPolicyRules[0].exitCodes.operator", nsup, `supported values: "In", "NotIn"`},
			{"spec.containers[0].restartPolicyRules[0].exitCodes.values", many, "must have at most 255 items"},
		}},
		{"too many rules", func(p *corev1.Pod) {
			c0(p).RestartPolicy = ptr.To(corev1.ContainerRestartPolicyOnFailure)
			c0(p).RestartPolicyRules = rules(21, onExit)
		}, []wantErr{{"spec.containers[0].restartPolicyRules", many, "must have at most 20 items"}}},
		{"init container rules without policy: only that", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "img", RestartPolicyRules: []corev1.ContainerRestartRule{{Action: "Stop"}}}}
		}, []wantErr{{"spec.initContainers[0].restartPolicy", req, "must specify restartPolicy when restart rules are used"}}},
		{"init container restart policy Never with rules", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "img", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyNever), RestartPolicyRules: []corev1.ContainerRestartRule{onExit}}}
		}, nil},
		{"sidecar with rules", func(p *corev1.Pod) {
			s := sidecar("s")
			s.RestartPolicyRules = []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestartAllContainers, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn}}}
			p.Spec.InitContainers = []corev1.Container{s}
		}, nil},
		{"init container restart policy bad", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "i", Image: "img", RestartPolicy: ptr.To[corev1.ContainerRestartPolicy]("")}}
		}, []wantErr{{"spec.initContainers[0].restartPolicy", nsup, ""}}},
	})
}

func TestContainerSecurityContext(t *testing.T) {
	sc := func(s corev1.SecurityContext) func(*corev1.Pod) {
		return func(p *corev1.Pod) { c0(p).SecurityContext = &s }
	}
	win := func(w corev1.WindowsSecurityContextOptions) func(*corev1.Pod) {
		return sc(corev1.SecurityContext{WindowsOptions: &w})
	}
	const s = "spec.containers[0].securityContext"
	runContainerCases(t, []containerCase{
		{"valid", sc(corev1.SecurityContext{
			RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](2147483647), RunAsNonRoot: ptr.To(true),
			Privileged: ptr.To(true), AllowPrivilegeEscalation: ptr.To(true),
			Capabilities:    &corev1.Capabilities{Add: []corev1.Capability{"CAP_SYS_ADMIN", "NET_ADMIN"}, Drop: []corev1.Capability{"ALL"}},
			SELinuxOptions:  &corev1.SELinuxOptions{User: "u", Role: "r", Type: "t", Level: "s0"},
			ProcMount:       ptr.To(corev1.DefaultProcMount),
			SeccompProfile:  &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("profiles/audit.json")},
			AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("k8s-apparmor")},
		}), nil},
		{"runAsUser negative", sc(corev1.SecurityContext{RunAsUser: ptr.To[int64](-1)}),
			[]wantErr{{s + ".runAsUser", inv, "must be between 0 and 2147483647, inclusive"}}},
		{"runAsGroup too large", sc(corev1.SecurityContext{RunAsGroup: ptr.To[int64](1 << 31)}),
			[]wantErr{{s + ".runAsGroup", inv, "must be between 0 and 2147483647, inclusive"}}},
		{"privileged without escalation", sc(corev1.SecurityContext{Privileged: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false)}),
			[]wantErr{{s, inv, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"}}},
		{"CAP_SYS_ADMIN without escalation", sc(corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"CAP_SYS_ADMIN"}}}),
			[]wantErr{{s, inv, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"}}},
		{"SYS_ADMIN spelled short without escalation", sc(corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}), nil},
		{"procMount bad", sc(corev1.SecurityContext{ProcMount: ptr.To[corev1.ProcMountType]("Masked")}),
			[]wantErr{{s + ".procMount", nsup, `supported values: "Default", "Unmasked"`}}},
		{"procMount Unmasked with host users", sc(corev1.SecurityContext{ProcMount: ptr.To(corev1.UnmaskedProcMount)}),
			[]wantErr{{s + ".procMount", inv, "`hostUsers` must be false to use `Unmasked`"}}},
		{"procMount Unmasked in a user namespace", func(p *corev1.Pod) {
			p.Spec.HostUsers = ptr.To(false)
			c0(p).SecurityContext = &corev1.SecurityContext{ProcMount: ptr.To(corev1.UnmaskedProcMount)}
		}, nil},
		{"seccomp no type", sc(corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{}}),
			[]wantErr{{s + ".seccompProfile.type", req, "type is required when seccompProfile is set"}}},
		{"seccomp localhost without profile", sc(corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}}),
			[]wantErr{{s + ".seccompProfile.localhostProfile", req, "must be set when seccomp type is Localhost"}}},
		{"seccomp localhost escapes", sc(corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("../x")}}),
			[]wantErr{{s + ".seccompProfile.localhostProfile", inv, "must not contain '..'"}}},
		{"seccomp profile with RuntimeDefault", sc(corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault, LocalhostProfile: ptr.To("x")}}),
			[]wantErr{{s + ".seccompProfile.localhostProfile", inv, "can only be set when seccomp type is Localhost"}}},
		{"apparmor bad type", sc(corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: "Custom"}}),
			[]wantErr{{s + ".appArmorProfile.type", nsup, `supported values: "Localhost", "RuntimeDefault", "Unconfined"`}}},
		{"apparmor padded", sc(corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To(" p")}}),
			[]wantErr{{s + ".appArmorProfile.localhostProfile", inv, "must not be padded with whitespace"}}},
		{"apparmor too long", sc(corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To(strings.Repeat("p", 4096))}}),
			[]wantErr{{s + ".appArmorProfile.localhostProfile", long, "may not be more than 4095 bytes"}}},
		{"windows valid", win(corev1.WindowsSecurityContextOptions{
			GMSACredentialSpecName: ptr.To("gmsa"), GMSACredentialSpec: ptr.To("{}"), RunAsUserName: ptr.To(`NT AUTHORITY\NETWORK SERVICE`), HostProcess: ptr.To(false),
		}), nil},
		{"windows DNS domain", win(corev1.WindowsSecurityContextOptions{RunAsUserName: ptr.To(`Example.com\user`)}), nil},
		{"windows bad credential spec name", win(corev1.WindowsSecurityContextOptions{GMSACredentialSpecName: ptr.To("A_B")}),
			[]wantErr{{s + ".windowsOptions.gmsaCredentialSpecName", inv, "RFC 1123 subdomain"}}},
		{"windows empty credential spec", win(corev1.WindowsSecurityContextOptions{GMSACredentialSpec: ptr.To("")}),
			[]wantErr{{s + ".windowsOptions.gmsaCredentialSpec", inv, "gmsaCredentialSpec cannot be an empty string"}}},
		{"windows huge credential spec", win(corev1.WindowsSecurityContextOptions{GMSACredentialSpec: ptr.To(strings.Repeat("x", 64*1024+1))}),
			[]wantErr{{s + ".windowsOptions.gmsaCredentialSpec", inv, "gmsaCredentialSpec size must be under 64 KiB"}}},
		{"windows user empty", win(corev1.WindowsSecurityContextOptions{RunAsUserName: ptr.To("")}),
			[]wantErr{{s + ".windowsOptions.runAsUserName", inv, "runAsUserName cannot be an empty string"}}},
		{"windows user control character", win(corev1.WindowsSecurityContextOptions{RunAsUserName: ptr.To("a\x7fb")}),
			[]wantErr{{s + ".windowsOptions.runAsUserName", inv, "runAsUserName cannot contain control characters"}}},
		{"windows user two backslashes", win(corev1.WindowsSecurityContextOptions{RunAsUserName: ptr.To(`a\b\c`)}),
			[]wantErr{{s + ".windowsOptions.runAsUserName", inv, "runAsUserName cannot contain more than one backslash"}}},
		{"windows user bad domain, empty user", win(corev1.WindowsSecurityContextOptions{RunAsUserName: ptr.To(`.bad\`)}),
			[]wantErr{
				{s + ".windowsOptions.runAsUserName", inv, "runAsUserName's Domain doesn't match the NetBios nor the DNS format"},
				{s + ".windowsOptions.runAsUserName", inv, "runAsUserName's User cannot be empty"},
			}},
		{"windows long domain", win(corev1.WindowsSecurityContextOptions{RunAsUserName: ptr.To(strings.Repeat("a", 256) + `\u`)}),
			[]wantErr{
				{s + ".windowsOptions.runAsUserName", inv, "runAsUserName's Domain length must be under 256 characters"},
				{s + ".windowsOptions.runAsUserName", inv, "NetBios nor the DNS format"},
			}},
		{"windows user long, dots, characters", win(corev1.WindowsSecurityContextOptions{RunAsUserName: ptr.To(strings.Repeat("u", 105))}),
			[]wantErr{{s + ".windowsOptions.runAsUserName", inv, "runAsUserName's User length must not be longer than 104 characters"}}},
		{"windows user only dots", win(corev1.WindowsSecurityContextOptions{RunAsUserName: ptr.To(". .")}),
			[]wantErr{{s + ".windowsOptions.runAsUserName", inv, "runAsUserName's User cannot contain only periods or spaces"}}},
		{"windows user bad characters", win(corev1.WindowsSecurityContextOptions{RunAsUserName: ptr.To("a@b")}),
			[]wantErr{{s + ".windowsOptions.runAsUserName", inv, `runAsUserName's User cannot contain the following characters: "/\:;|=,+*?<>@[]`}}},
	})
}

func TestEphemeralContainers(t *testing.T) {
	eph := func(ec corev1.EphemeralContainerCommon) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: ec, TargetContainerName: "c"}}
		}
	}
	const e = "spec.ephemeralContainers[0]"
	runContainerCases(t, []containerCase{
		{"valid", eph(corev1.EphemeralContainerCommon{
			Name: "debug", Image: "busybox", Command: []string{"sh"}, Stdin: true, TTY: true,
			Env:             []corev1.EnvVar{{Name: "A", Value: "1"}},
			SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_PTRACE"}}},
		}), nil},
		{"no target", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
		}, nil},
		{"target unknown", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}, TargetContainerName: "nope"}}
		}, []wantErr{{e + ".targetContainerName", nf, `Not found: "nope"`}}},
		{"target another ephemeral container", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{
				{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "d1", Image: "busybox"}},
				{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "d2", Image: "busybox"}, TargetContainerName: "d1"},
			}
		}, []wantErr{{"spec.ephemeralContainers[1].targetContainerName", nf, ""}}},
		{"no name, no image, image padded", eph(corev1.EphemeralContainerCommon{Image: " busybox"}),
			[]wantErr{{e + ".name", req, ""}, {e + ".image", inv, "must not have leading or trailing whitespace"}}},
		{"no image", eph(corev1.EphemeralContainerCommon{Name: "debug"}),
			[]wantErr{{e + ".image", req, ""}}},
		{"named as the app container", eph(corev1.EphemeralContainerCommon{Name: "c", Image: "busybox"}),
			[]wantErr{{e + ".name", dup, ""}}},
		{"two with one name", func(p *corev1.Pod) {
			ec := corev1.EphemeralContainerCommon{Name: "d", Image: "busybox"}
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: ec}, {EphemeralContainerCommon: ec}}
		}, []wantErr{{"spec.ephemeralContainers[1].name", dup, ""}}},
		{"forbidden fields", eph(corev1.EphemeralContainerCommon{
			Name: "debug", Image: "busybox",
			Ports:              []corev1.ContainerPort{},
			Resources:          corev1.ResourceRequirements{Requests: corev1.ResourceList{}},
			ResizePolicy:       []corev1.ContainerResizePolicy{},
			RestartPolicy:      ptr.To(corev1.ContainerRestartPolicyAlways),
			RestartPolicyRules: []corev1.ContainerRestartRule{},
			LivenessProbe:      &corev1.Probe{ProbeHandler: exec()},
			ReadinessProbe:     &corev1.Probe{ProbeHandler: exec()},
			StartupProbe:       &corev1.Probe{ProbeHandler: exec()},
			Lifecycle:          &corev1.Lifecycle{},
		}), []wantErr{
			{e + ".ports", forb, "cannot be set for an Ephemeral Container"},
			{e + ".resources", forb, ""},
			{e + ".resizePolicy", forb, ""},
			{e + ".restartPolicy", forb, ""},
			{e + ".restartPolicyRules", forb, ""},
			{e + ".livenessProbe", forb, ""},
			{e + ".readinessProbe", forb, ""},
			{e + ".startupProbe", forb, ""},
			{e + ".lifecycle", forb, ""},
		}},
		{"subPath and subPathExpr", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			eph(corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox", VolumeMounts: []corev1.VolumeMount{
				{Name: "v", MountPath: "/a"},
				{Name: "v", MountPath: "/b", SubPath: "x"},
				{Name: "v", MountPath: "/c", SubPathExpr: "$(X)"},
			}})(p)
		}, []wantErr{{e + ".volumeMounts[1].subPath", forb, "cannot be set for an Ephemeral Container"}, {e + ".volumeMounts[2].subPathExpr", forb, ""}}},
		{"common rules apply: bad env and pull policy", eph(corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox", Env: []corev1.EnvVar{{Name: ""}}, ImagePullPolicy: "Sometimes"}),
			[]wantErr{{e + ".env[0].name", req, ""}, {e + ".imagePullPolicy", nsup, ""}}},
		{"hostNetwork does not default an ephemeral container's hostPort", func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			eph(corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox", Ports: []corev1.ContainerPort{{ContainerPort: 70000}}})(p)
		}, []wantErr{{e + ".ports[0].containerPort", inv, ""}, {e + ".ports", forb, ""}}},
	})
}
