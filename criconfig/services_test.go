package criconfig_test

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/criconfig"
)

// kubelet's TestFromServices (pkg/kubelet/envvars/envvars_test.go,
// v1.36.3): the same Services, the same variables in the same order.
func TestServiceEnvVarsKubelet(t *testing.T) {
	svc := func(name, ip string, ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"bar": "baz"}, ClusterIP: ip, Ports: ports}}
	}
	port := func(name string, n int32, proto corev1.Protocol) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Port: n, Protocol: proto}
	}
	sl := []*corev1.Service{
		svc("foo-bar", "1.2.3.4", port("", 8080, "TCP")),
		svc("abc-123", "5.6.7.8", port("u-d-p", 8081, "UDP"), port("t-c-p", 8081, "TCP")),
		svc("q-u-u-x", "9.8.7.6", port("", 8082, "TCP"), port("8083", 8083, "TCP")),
		svc("svrc-clusterip-none", "None", port("", 8082, "TCP")),
		svc("svrc-clusterip-empty", "", port("", 8082, "TCP")),
		svc("super-ipv6", "2001:DB8::", port("u-d-p", 8084, "UDP"), port("t-c-p", 8084, "TCP")),
		svc("sctp-1", "1.2.3.4", port("", 777, "SCTP")),
	}
	want := []criconfig.EnvVar{
		{Name: "FOO_BAR_SERVICE_HOST", Value: "1.2.3.4"},
		{Name: "FOO_BAR_SERVICE_PORT", Value: "8080"},
		{Name: "FOO_BAR_PORT", Value: "tcp://1.2.3.4:8080"},
		{Name: "FOO_BAR_PORT_8080_TCP", Value: "tcp://1.2.3.4:8080"},
		{Name: "FOO_BAR_PORT_8080_TCP_PROTO", Value: "tcp"},
		{Name: "FOO_BAR_PORT_8080_TCP_PORT", Value: "8080"},
		{Name: "FOO_BAR_PORT_8080_TCP_ADDR", Value: "1.2.3.4"},
		{Name: "ABC_123_SERVICE_HOST", Value: "5.6.7.8"},
		{Name: "ABC_123_SERVICE_PORT", Value: "8081"},
		{Name: "ABC_123_SERVICE_PORT_U_D_P", Value: "8081"},
		{Name: "ABC_123_SERVICE_PORT_T_C_P", Value: "8081"},
		{Name: "ABC_123_PORT", Value: "udp://5.6.7.8:8081"},
		{Name: "ABC_123_PORT_8081_UDP", Value: "udp://5.6.7.8:8081"},
		{Name: "ABC_123_PORT_8081_UDP_PROTO", Value: "udp"},
		{Name: "ABC_123_PORT_8081_UDP_PORT", Value: "8081"},
		{Name: "ABC_123_PORT_8081_UDP_ADDR", Value: "5.6.7.8"},
		{Name: "ABC_123_PORT_8081_TCP", Value: "tcp://5.6.7.8:8081"},
		{Name: "ABC_123_PORT_8081_TCP_PROTO", Value: "tcp"},
		{Name: "ABC_123_PORT_8081_TCP_PORT", Value: "8081"},
		{Name: "ABC_123_PORT_8081_TCP_ADDR", Value: "5.6.7.8"},
		{Name: "Q_U_U_X_SERVICE_HOST", Value: "9.8.7.6"},
		{Name: "Q_U_U_X_SERVICE_PORT", Value: "8082"},
		{Name: "Q_U_U_X_SERVICE_PORT_8083", Value: "8083"},
		{Name: "Q_U_U_X_PORT", Value: "tcp://9.8.7.6:8082"},
		{Name: "Q_U_U_X_PORT_8082_TCP", Value: "tcp://9.8.7.6:8082"},
		{Name: "Q_U_U_X_PORT_8082_TCP_PROTO", Value: "tcp"},
		{Name: "Q_U_U_X_PORT_8082_TCP_PORT", Value: "8082"},
		{Name: "Q_U_U_X_PORT_8082_TCP_ADDR", Value: "9.8.7.6"},
		{Name: "Q_U_U_X_PORT_8083_TCP", Value: "tcp://9.8.7.6:8083"},
		{Name: "Q_U_U_X_PORT_8083_TCP_PROTO", Value: "tcp"},
		{Name: "Q_U_U_X_PORT_8083_TCP_PORT", Value: "8083"},
		{Name: "Q_U_U_X_PORT_8083_TCP_ADDR", Value: "9.8.7.6"},
		{Name: "SUPER_IPV6_SERVICE_HOST", Value: "2001:DB8::"},
		{Name: "SUPER_IPV6_SERVICE_PORT", Value: "8084"},
		{Name: "SUPER_IPV6_SERVICE_PORT_U_D_P", Value: "8084"},
		{Name: "SUPER_IPV6_SERVICE_PORT_T_C_P", Value: "8084"},
		{Name: "SUPER_IPV6_PORT", Value: "udp://[2001:DB8::]:8084"},
		{Name: "SUPER_IPV6_PORT_8084_UDP", Value: "udp://[2001:DB8::]:8084"},
		{Name: "SUPER_IPV6_PORT_8084_UDP_PROTO", Value: "udp"},
		{Name: "SUPER_IPV6_PORT_8084_UDP_PORT", Value: "8084"},
		{Name: "SUPER_IPV6_PORT_8084_UDP_ADDR", Value: "2001:DB8::"},
		{Name: "SUPER_IPV6_PORT_8084_TCP", Value: "tcp://[2001:DB8::]:8084"},
		{Name: "SUPER_IPV6_PORT_8084_TCP_PROTO", Value: "tcp"},
		{Name: "SUPER_IPV6_PORT_8084_TCP_PORT", Value: "8084"},
		{Name: "SUPER_IPV6_PORT_8084_TCP_ADDR", Value: "2001:DB8::"},
		{Name: "SCTP_1_SERVICE_HOST", Value: "1.2.3.4"},
		{Name: "SCTP_1_SERVICE_PORT", Value: "777"},
		{Name: "SCTP_1_PORT", Value: "sctp://1.2.3.4:777"},
		{Name: "SCTP_1_PORT_777_SCTP", Value: "sctp://1.2.3.4:777"},
		{Name: "SCTP_1_PORT_777_SCTP_PROTO", Value: "sctp"},
		{Name: "SCTP_1_PORT_777_SCTP_PORT", Value: "777"},
		{Name: "SCTP_1_PORT_777_SCTP_ADDR", Value: "1.2.3.4"},
	}
	if got := criconfig.ServiceEnvVars(sl); !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%v\nwant\n%v", got, want)
	}
	// An unset protocol is TCP; a Service without ports gives nothing
	// (kubelet would panic on it).
	noProto := svc("p", "10.0.0.1", port("", 80, ""))
	if got := criconfig.ServiceEnvVars([]*corev1.Service{noProto, svc("none", "10.0.0.2")}); len(got) != 7 || got[3] != (criconfig.EnvVar{Name: "P_PORT_80_TCP", Value: "tcp://10.0.0.1:80"}) {
		t.Fatalf("got %v", got)
	}
}

// Which Services a pod sees: the projection of kubelet's
// getServiceEnvVarMap, with the Services of kubelet's
// TestMakeEnvironmentVariables (kubelet_pods_test.go, v1.36.3).
func TestServiceEnv(t *testing.T) {
	build := func(name, ns, ip string, port int32) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: []corev1.ServicePort{{Protocol: "TCP", Port: port}}}}
	}
	services := []*corev1.Service{
		build("kubernetes", "default", "1.2.3.1", 8081),
		build("test", "test1", "1.2.3.3", 8083),
		build("kubernetes", "test2", "1.2.3.4", 8084),
		build("test", "test2", "1.2.3.5", 8085),
		build("test", "test2", "None", 8085),
		build("test", "test2", "", 8085),
		build("not-special", "default", "1.2.3.8", 8088),
		build("not-special", "default", "None", 8088),
		build("not-special", "default", "", 8088),
	}
	hosts := func(env map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range env {
			if len(k) > len("_SERVICE_HOST") && k[len(k)-len("_SERVICE_HOST"):] == "_SERVICE_HOST" {
				out[k] = v
			}
		}
		return out
	}
	tests := []struct {
		ns    string
		links bool
		want  map[string]string // the _SERVICE_HOST variables
		n     int               // all variables
	}{
		{"test1", false, map[string]string{"KUBERNETES_SERVICE_HOST": "1.2.3.1"}, 7},
		{"test1", true, map[string]string{"KUBERNETES_SERVICE_HOST": "1.2.3.1", "TEST_SERVICE_HOST": "1.2.3.3"}, 14},
		{"test2", false, map[string]string{"KUBERNETES_SERVICE_HOST": "1.2.3.1"}, 7},
		{"test2", true, map[string]string{"KUBERNETES_SERVICE_HOST": "1.2.3.4", "TEST_SERVICE_HOST": "1.2.3.5"}, 14},
		{"default", false, map[string]string{"KUBERNETES_SERVICE_HOST": "1.2.3.1"}, 7},
		{"default", true, map[string]string{"KUBERNETES_SERVICE_HOST": "1.2.3.1", "NOT_SPECIAL_SERVICE_HOST": "1.2.3.8"}, 14},
		{"elsewhere", true, map[string]string{"KUBERNETES_SERVICE_HOST": "1.2.3.1"}, 7},
	}
	for _, tt := range tests {
		env := criconfig.ServiceEnv(tt.ns, tt.links, services)
		if got := hosts(env); !reflect.DeepEqual(got, tt.want) || len(env) != tt.n {
			t.Errorf("ServiceEnv(%q, %v): hosts %v of %d variables, want %v of %d", tt.ns, tt.links, got, len(env), tt.want, tt.n)
		}
	}
	// The pod namespace's "kubernetes" wins whichever comes first.
	rev := []*corev1.Service{services[2], services[0]}
	if got := criconfig.ServiceEnv("test2", true, rev)["KUBERNETES_SERVICE_HOST"]; got != "1.2.3.4" {
		t.Errorf("listed first: %q", got)
	}
	if got := criconfig.ServiceEnv("x", true, nil); len(got) != 0 {
		t.Errorf("no services: %v", got)
	}
}

func BenchmarkServiceEnv(b *testing.B) {
	var services []*corev1.Service
	for i := range 50 {
		services = append(services, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc-" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Namespace: "ns"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.0.0.1", Ports: []corev1.ServicePort{{Name: "http", Port: 80}, {Name: "metrics", Port: 9090}}}})
	}
	b.ReportAllocs()
	for b.Loop() {
		if env := criconfig.ServiceEnv("ns", true, services); len(env) != 50*13 {
			b.Fatal(len(env))
		}
	}
}
