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
