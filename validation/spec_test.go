package validation

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// validPod is a pod every test starts from: valid, and not defaulted.
func validPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u1"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "img"}},
		},
	}
}

// wantErr is one expected field error: its path and type, and a part of
// its message (the API server's wording) when not empty.
type wantErr struct {
	field string
	typ   field.ErrorType
	msg   string
}

func checkErrs(t *testing.T, errs field.ErrorList, want []wantErr) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d: %v", len(errs), len(want), errs)
	}
	for i, w := range want {
		e := errs[i]
		if e.Field != w.field || e.Type != w.typ || !strings.Contains(e.Error(), w.msg) {
			t.Errorf("error %d = %v (%s, %s), want %s %s %q", i, e, e.Field, e.Type, w.field, w.typ, w.msg)
		}
	}
}

func TestPodLevelRules(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		want   []wantErr
	}{
		{"valid", func(*corev1.Pod) {}, nil},
		{"defaultable fields empty", func(p *corev1.Pod) {
			p.Namespace = ""
			p.Spec.RestartPolicy, p.Spec.DNSPolicy = "", ""
		}, nil},
		{"no uid", func(p *corev1.Pod) { p.UID = "" }, []wantErr{{"metadata.uid", field.ErrorTypeRequired, ""}}},
		{"uid escapes", func(p *corev1.Pod) { p.UID = "../../x" }, []wantErr{{"metadata.uid", field.ErrorTypeInvalid, "must not contain '/'"}}},
		{"uid dotdot", func(p *corev1.Pod) { p.UID = ".." }, []wantErr{{"metadata.uid", field.ErrorTypeInvalid, ""}}},
		{"name with slash", func(p *corev1.Pod) { p.Name = "a/b" }, []wantErr{{"metadata.name", field.ErrorTypeInvalid, "RFC 1123 subdomain"}}},
		{"no name", func(p *corev1.Pod) { p.Name = "" }, []wantErr{{"metadata.name", field.ErrorTypeRequired, "name or generateName is required"}}},
		{"namespace dotdot", func(p *corev1.Pod) { p.Namespace = ".." }, []wantErr{{"metadata.namespace", field.ErrorTypeInvalid, "RFC 1123 label"}}},
		{"label key", func(p *corev1.Pod) { p.Labels = map[string]string{"a b": "x"} }, []wantErr{{"metadata.labels", field.ErrorTypeInvalid, "name part must consist"}}},
		{"label value", func(p *corev1.Pod) { p.Labels = map[string]string{"a": "x y"} }, []wantErr{{"metadata.labels", field.ErrorTypeInvalid, "a valid label must be"}}},
		{"annotation key", func(p *corev1.Pod) { p.Annotations = map[string]string{"/x": "y"} }, []wantErr{{"metadata.annotations", field.ErrorTypeInvalid, ""}}},
		{"mirror pod without node", func(p *corev1.Pod) { p.Annotations = map[string]string{mirrorPodAnnotation: "x"} },
			[]wantErr{{"metadata.annotations[kubernetes.io/config.mirror]", field.ErrorTypeInvalid, "must set spec.nodeName"}}},
		{"deletion cost", func(p *corev1.Pod) { p.Annotations = map[string]string{deletionCostAnnotation: "007"} },
			[]wantErr{{"metadata.annotations[controller.kubernetes.io/pod-deletion-cost]", field.ErrorTypeInvalid, "must be a 32bit integer"}}},
		{"deletion cost ok", func(p *corev1.Pod) { p.Annotations = map[string]string{deletionCostAnnotation: "-10"} }, nil},
		{"seccomp annotation escapes", func(p *corev1.Pod) { p.Annotations = map[string]string{seccompPodAnnotation: "localhost/../x"} },
			[]wantErr{{"metadata.annotations.seccomp.security.alpha.kubernetes.io/pod", field.ErrorTypeInvalid, "must not contain '..'"}}},
		{"seccomp annotation unknown", func(p *corev1.Pod) { p.Annotations = map[string]string{seccompContainerAnnotation + "c": "x"} },
			[]wantErr{{"metadata.annotations.container.seccomp.security.alpha.kubernetes.io/c", field.ErrorTypeInvalid, "must be a valid seccomp profile"}}},
		{"apparmor annotation", func(p *corev1.Pod) { p.Annotations = map[string]string{appArmorContainerAnnotation + "x": "bad"} },
			[]wantErr{
				{"metadata.annotations[container.apparmor.security.beta.kubernetes.io/x]", field.ErrorTypeInvalid, "container not found"},
				{"metadata.annotations[container.apparmor.security.beta.kubernetes.io/x]", field.ErrorTypeInvalid, "invalid AppArmor profile name"},
			}},
		{"seccomp annotation and field differ", func(p *corev1.Pod) {
			p.Annotations = map[string]string{seccompContainerAnnotation + "c": "unconfined"}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
		}, []wantErr{{"spec.containers[0].securityContext.seccompProfile.type", field.ErrorTypeForbidden, "seccomp type in annotation and field must match"}}},
		{"seccomp annotation and field agree", func(p *corev1.Pod) {
			p.Annotations = map[string]string{seccompPodAnnotation: "localhost/a.json"}
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("a.json")}}
		}, nil},
		{"apparmor localhost profiles differ", func(p *corev1.Pod) {
			p.Annotations = map[string]string{appArmorContainerAnnotation + "c": "localhost/a"}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("b")}}
		}, []wantErr{{"spec.containers[0].securityContext.appArmorProfile.localhostProfile", field.ErrorTypeForbidden, "apparmor profile in annotation and field must match"}}},
		// The API server copies the annotation into the container's field
		// before it validates (applyAppArmorVersionSkew).
		{"apparmor annotation other than the pod's profile", func(p *corev1.Pod) {
			p.Annotations = map[string]string{appArmorContainerAnnotation + "c": "unconfined"}
			p.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}}
		}, nil},
		{"apparmor annotation naming an ephemeral container", func(p *corev1.Pod) {
			p.Annotations = map[string]string{appArmorContainerAnnotation + "dbg": "unconfined"}
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg", Image: "busybox"}}}
		}, []wantErr{{"metadata.annotations[container.apparmor.security.beta.kubernetes.io/dbg]", field.ErrorTypeInvalid, "container not found"}}},
		{"mirror pod with ephemeral containers", func(p *corev1.Pod) {
			p.Annotations = map[string]string{mirrorPodAnnotation: "x"}
			p.Spec.NodeName = "node-1"
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg", Image: "busybox"}}}
		}, []wantErr{{"[]", field.ErrorTypeForbidden, "static pods do not support ephemeral containers"}}},
		{"negative grace is defaulted to 1", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](-1) }, nil},
		{"restart policy", func(p *corev1.Pod) { p.Spec.RestartPolicy = "Sometimes" }, []wantErr{{"spec.restartPolicy", field.ErrorTypeNotSupported, ""}}},
		{"dns policy", func(p *corev1.Pod) { p.Spec.DNSPolicy = "Cluster" }, []wantErr{{"spec.dnsPolicy", field.ErrorTypeNotSupported, ""}}},
		{"dns none without config", func(p *corev1.Pod) { p.Spec.DNSPolicy = corev1.DNSNone },
			[]wantErr{{"spec.dnsConfig", field.ErrorTypeRequired, "must provide `dnsConfig` when `dnsPolicy` is None"}}},
		{"dns none without nameserver", func(p *corev1.Pod) {
			p.Spec.DNSPolicy = corev1.DNSNone
			p.Spec.DNSConfig = &corev1.PodDNSConfig{}
		}, []wantErr{{"spec.dnsConfig.nameservers", field.ErrorTypeRequired, "at least one DNS nameserver"}}},
		{"dns config", func(p *corev1.Pod) {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{
				Nameservers: []string{"1.1.1.1", "010.0.0.1", "2.2.2.2", "3.3.3.3"},
				Searches:    []string{"a_b.example.", "-x", "."},
				Options:     []corev1.PodDNSConfigOption{{Name: ""}},
			}
		}, []wantErr{
			{"spec.dnsConfig.nameservers", field.ErrorTypeInvalid, "must not have more than 3 nameservers"},
			{"spec.dnsConfig.nameservers[1]", field.ErrorTypeInvalid, ""},
			{"spec.dnsConfig.searches[1]", field.ErrorTypeInvalid, ""},
			{"spec.dnsConfig.options[0]", field.ErrorTypeRequired, "must not be empty"},
		}},
		{"node selector", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"k": "v v"} }, []wantErr{{"spec.nodeSelector", field.ErrorTypeInvalid, ""}}},
		{"run as user", func(p *corev1.Pod) { p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](-1)} },
			[]wantErr{{"spec.securityContext.runAsUser", field.ErrorTypeInvalid, "between 0 and 2147483647"}}},
		{"fsGroup, runAsGroup, supplementalGroups", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1 << 31), RunAsGroup: ptr.To[int64](-2), SupplementalGroups: []int64{5, -1}}
		}, []wantErr{
			{"spec.securityContext.fsGroup", field.ErrorTypeInvalid, ""},
			{"spec.securityContext.runAsGroup", field.ErrorTypeInvalid, ""},
			{"spec.securityContext.supplementalGroups[1]", field.ErrorTypeInvalid, ""},
		}},
		{"sysctls", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{
				{Name: "kernel.shm_rmid_forced"}, {Name: ""}, {Name: "Kernel.x"}, {Name: "kernel.shm_rmid_forced"}, {Name: "net/ipv4/ip_forward"},
			}}
		}, []wantErr{
			{"spec.securityContext.sysctls[1].name", field.ErrorTypeRequired, ""},
			{"spec.securityContext.sysctls[2].name", field.ErrorTypeInvalid, "must have at most 253 characters and match regex"},
			{"spec.securityContext.sysctls[3].name", field.ErrorTypeDuplicate, ""},
		}},
		{"net sysctl with host network", func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ip_forward"}}}
		}, []wantErr{{"spec.securityContext.sysctls[0].name", field.ErrorTypeInvalid, "may not be specified when 'hostNetwork' is true"}}},
		{"ipc sysctl with host ipc", func(p *corev1.Pod) {
			p.Spec.HostIPC = true
			p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "kernel.shm_rmid_forced"}}}
		}, []wantErr{{"spec.securityContext.sysctls[0].name", field.ErrorTypeInvalid, "may not be specified when 'hostIPC' is true"}}},
		{"seccomp localhost without profile", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}}
		}, []wantErr{{"spec.securityContext.seccompProfile.localhostProfile", field.ErrorTypeRequired, "must be set when seccomp type is Localhost"}}},
		{"seccomp localhost escapes", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("/etc/x")}}
		}, []wantErr{{"spec.securityContext.seccompProfile.localhostProfile", field.ErrorTypeInvalid, "must be a relative path"}}},
		{"seccomp profile with runtime default", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault, LocalhostProfile: ptr.To("x")}}
		}, []wantErr{{"spec.securityContext.seccompProfile.localhostProfile", field.ErrorTypeInvalid, "can only be set when seccomp type is Localhost"}}},
		{"seccomp no type", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{}}
		}, []wantErr{{"spec.securityContext.seccompProfile.type", field.ErrorTypeRequired, ""}}},
		{"apparmor padded", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To(" x")}}
		}, []wantErr{{"spec.securityContext.appArmorProfile.localhostProfile", field.ErrorTypeInvalid, "must not be padded with whitespace"}}},
		{"apparmor unknown type", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{AppArmorProfile: &corev1.AppArmorProfile{Type: "x"}}
		}, []wantErr{{"spec.securityContext.appArmorProfile.type", field.ErrorTypeNotSupported, ""}}},
		{"policies", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{
				FSGroupChangePolicy:      ptr.To(corev1.PodFSGroupChangePolicy("x")),
				SupplementalGroupsPolicy: ptr.To(corev1.SupplementalGroupsPolicy("x")),
				SELinuxChangePolicy:      ptr.To(corev1.PodSELinuxChangePolicy("x")),
			}
		}, []wantErr{
			{"spec.securityContext.fsGroupChangePolicy", field.ErrorTypeNotSupported, ""},
			{"spec.securityContext.supplementalGroupsPolicy", field.ErrorTypeNotSupported, ""},
			{"spec.securityContext.seLinuxChangePolicy", field.ErrorTypeNotSupported, ""},
		}},
		{"share process namespace with host pid", func(p *corev1.Pod) {
			p.Spec.HostPID, p.Spec.ShareProcessNamespace = true, ptr.To(true)
		}, []wantErr{{"spec.shareProcessNamespace", field.ErrorTypeInvalid, "ShareProcessNamespace and HostPID cannot both be enabled"}}},
		{"readiness gate", func(p *corev1.Pod) { p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "a b"}} },
			[]wantErr{{"spec.readinessGates[0].conditionType", field.ErrorTypeInvalid, ""}}},
		{"user namespace with host namespaces", func(p *corev1.Pod) {
			p.Spec.HostUsers = ptr.To(false)
			p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = true, true, true
			p.Spec.Volumes = []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}}}
			p.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "d", DevicePath: "/dev/x"}}
		}, []wantErr{
			{"spec.hostNetwork", field.ErrorTypeForbidden, "when `hostUsers` is false"},
			{"spec.HostPID", field.ErrorTypeForbidden, ""},
			{"spec.HostIPC", field.ErrorTypeForbidden, ""},
			{"spec.containers[0].volumeDevices", field.ErrorTypeForbidden, ""},
		}},
		{"hostname override", func(p *corev1.Pod) {
			p.Spec.HostnameOverride = ptr.To("Bad_Name")
			p.Spec.SetHostnameAsFQDN = ptr.To(true)
		}, []wantErr{
			{"spec.hostnameOverride", field.ErrorTypeForbidden, "may not be specified when setHostnameAsFQDN is true"},
			{"spec.hostnameOverride", field.ErrorTypeInvalid, "RFC 1123 subdomain"},
		}},
		{"service account", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "a/b" }, []wantErr{{"spec.serviceAccountName", field.ErrorTypeInvalid, ""}}},
		{"deprecated service account differs", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount = "a", "b" //nolint:staticcheck // the field under test
		}, []wantErr{{"spec.deprecatedServiceAccount", field.ErrorTypeInvalid, `must be the same as serviceAccountName: "a"`}}},
		{"node name", func(p *corev1.Pod) { p.Spec.NodeName = "Node_1" }, []wantErr{{"spec.nodeName", field.ErrorTypeInvalid, ""}}},
		{"active deadline", func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](0) },
			[]wantErr{{"spec.activeDeadlineSeconds", field.ErrorTypeInvalid, "must be between 1 and 2147483647, inclusive"}}},
		{"hostname and subdomain", func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "a.b", "-x" },
			[]wantErr{{"spec.hostname", field.ErrorTypeInvalid, ""}, {"spec.subdomain", field.ErrorTypeInvalid, ""}}},
		{"host aliases", func(p *corev1.Pod) {
			p.Spec.HostAliases = []corev1.HostAlias{{IP: "1.2.3", Hostnames: []string{"ok.example", "not ok"}}}
		}, []wantErr{{"spec.hostAliases[0].ip", field.ErrorTypeInvalid, ""}, {"spec.hostAliases[0].hostnames[1]", field.ErrorTypeInvalid, ""}}},
		{"class names", func(p *corev1.Pod) {
			p.Spec.PriorityClassName, p.Spec.RuntimeClassName = "A", ptr.To("b/c")
		}, []wantErr{{"spec.priorityClassName", field.ErrorTypeInvalid, ""}, {"spec.runtimeClassName", field.ErrorTypeInvalid, ""}}},
		{"preemption policy", func(p *corev1.Pod) { p.Spec.PreemptionPolicy = ptr.To(corev1.PreemptionPolicy("x")) },
			[]wantErr{{"spec.preemptionPolicy", field.ErrorTypeNotSupported, ""}}},
		{"os", func(p *corev1.Pod) { p.Spec.OS = &corev1.PodOS{Name: "plan9"} }, []wantErr{{"spec.os", field.ErrorTypeNotSupported, ""}}},
		{"windows options on linux", func(p *corev1.Pod) {
			p.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
			p.Spec.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{}}
		}, []wantErr{{"spec.securityContext.windowsOptions", field.ErrorTypeForbidden, "windows options cannot be set for a linux pod"}}},
		// The e2e suite's registry pod (test/e2e/framework/registry): no
		// spec.os, hostNetwork, one hostProcess container.
		{"host process with host network", func(p *corev1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{
				RunAsUserName: ptr.To(`NT AUTHORITY\SYSTEM`), HostProcess: ptr.To(true)}}
		}, nil},
		{"host process without host network, beside another", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(false)}}
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "d", Image: "img"})
		}, []wantErr{
			{"spec.containers[0].securityContext.windowsOptions.hostProcess", field.ErrorTypeInvalid, "pod hostProcess value must be identical if both are specified, was true"},
			{"spec", field.ErrorTypeInvalid, "If pod contains any hostProcess containers then all containers must be HostProcess containers"},
			{"spec.hostNetwork", field.ErrorTypeInvalid, "hostNetwork must be true if pod contains any hostProcess containers"},
		}},
		{"host process on linux", func(p *corev1.Pod) {
			p.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}}
		}, []wantErr{{"spec.containers[0].securityContext.windowsOptions", field.ErrorTypeForbidden, "windows options cannot be set for a linux pod"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := validPod()
			tc.mutate(p)
			checkErrs(t, Pod(p), tc.want)
		})
	}
}

func TestCheck(t *testing.T) {
	if err := Check(validPod()); err != nil {
		t.Fatalf("valid pod: %v", err)
	}
	p := validPod()
	p.UID = "../../x"
	err := Check(p)
	var verr *Error
	if !errors.Is(err, ErrInvalidPod) || !errors.As(err, &verr) || !strings.Contains(err.Error(), "metadata.uid") || !strings.Contains(err.Error(), "ns/p") {
		t.Fatalf("Check = %v, want ErrInvalidPod naming ns/p and metadata.uid", err)
	}
	if err := Check(nil); !errors.Is(err, ErrInvalidPod) {
		t.Fatalf("Check(nil) = %v", err)
	}
	vol := corev1.Volume{Name: "../x", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	if err := CheckVolume(validPod(), &vol); !errors.Is(err, ErrInvalidPod) {
		t.Fatalf("CheckVolume(volume ../x) = %v, want ErrInvalidPod", err)
	}
}

// TestCheckRefusesDroppedFields: fields the v1.37 API server drops from a
// new pod (their gates are off by default) pass Pod, as the API server's
// create path accepts the pod without them, and are refused by Check by
// name: podstart does not honour them.
func TestCheckRefusesDroppedFields(t *testing.T) {
	sig := corev1.SIGUSR1
	mode := corev1.GRPCProbeModeTLS
	cases := []struct {
		mutate func(*corev1.Pod)
		field  string
	}{
		{func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Mode: ptr.To[int32](0o4777)}}}}
		}, "spec.volumes[0].emptyDir.mode"},
		{func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultUser: ptr.To[int64](0)}}}}
		}, "spec.volumes[0].secret.defaultUser"},
		{func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Items: []corev1.KeyToPath{{Key: "k", Path: "p", User: ptr.To[int64](7)}}}}}}
		}, "spec.volumes[0].configMap.items[0].user"},
		{func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "n", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}, User: ptr.To[int64](1)}}}}}}}}}
		}, "spec.volumes[0].projected.sources[0].downwardAPI.items[0].user"},
		{func(p *corev1.Pod) { p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{StopSignal: &sig} }, "spec.containers[0].lifecycle.stopSignal"},
		{func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/v", BindMountOptions: []string{string(corev1.BindMountOptionNoExec)}}}
		}, "spec.containers[0].volumeMounts[0].bindMountOptions"},
		{func(p *corev1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9, Mode: &mode}}}
		}, "spec.containers[0].livenessProbe.grpc.mode"},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			p := validPod()
			tc.mutate(p)
			if errs := Pod(p); len(errs) != 0 {
				t.Fatalf("Pod: %v, want none (the API server drops the field)", errs)
			}
			err := Check(p)
			if !errors.Is(err, ErrInvalidPod) || !strings.Contains(err.Error(), tc.field+": Forbidden: the API server drops this field") {
				t.Fatalf("Check = %v, want Forbidden on %s", err, tc.field)
			}
		})
	}
}

// TestCheckRefusesDroppedHTTPProtocol: httpGet.protocol (H2CContainerProbe,
// alpha in v1.37) is dropped by the API server; Check refuses it by name
// on probes and hooks.
func TestCheckRefusesDroppedHTTPProtocol(t *testing.T) {
	h2 := corev1.HTTPProtocolHTTP2
	p := validPod()
	get := &corev1.HTTPGetAction{Port: intstr.FromInt32(80), Protocol: &h2}
	p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: get}}
	p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: get}}
	if errs := Pod(p); len(errs) != 0 {
		t.Fatalf("Pod: %v", errs)
	}
	err := Check(p)
	for _, f := range []string{"spec.containers[0].readinessProbe.httpGet.protocol", "spec.containers[0].lifecycle.preStop.httpGet.protocol"} {
		if !strings.Contains(fmt.Sprint(err), f+": Forbidden") {
			t.Errorf("Check = %v, want Forbidden on %s", err, f)
		}
	}
}
