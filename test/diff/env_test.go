package diff

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/kubelet/envvars"
	envutil "k8s.io/kubernetes/pkg/kubelet/util/env"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/internal/envfile"
)

var (
	svcNames   = []string{"kubernetes", "a", "foo-bar", "abc-123", "q-u-u-x", "x1", "my-svc-9", "redis", "db-primary", "a-b-c-d-e"}
	portNames  = []string{"", "", "http", "https", "u-d-p", "8083", "metrics-port", "grpc", "a"}
	protocols  = []corev1.Protocol{"", "TCP", "UDP", "SCTP", "TCP", "tcp", "Weird"}
	clusterIPs = []string{"", "None", "10.0.0.1", "1.2.3.4", "2001:DB8::", "fd00::1:2", "::1", "255.255.255.255", "not-an-ip", "10.96.0.1"}
)

// randomService is a Service as the API server could store it, and now
// and then one it would not (odd names, protocols, addresses, ports),
// since FromServices does not check. A Service with a cluster IP has a
// port: FromServices panics on one without.
func randomService(r *rand.Rand) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: pick(r, svcNames), Namespace: pick(r, []string{"default", "ns"})},
		Spec: corev1.ServiceSpec{ClusterIP: pick(r, clusterIPs)}}
	if r.IntN(10) == 0 {
		svc.Name = trickyString(r, 3)
	}
	n := r.IntN(5)
	if n == 0 && svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != "None" {
		n = 1
	}
	for range n {
		p := corev1.ServicePort{Name: pick(r, portNames), Protocol: pick(r, protocols), Port: int32(r.IntN(70000))}
		if r.IntN(20) == 0 {
			p.Port = -p.Port
		}
		svc.Spec.Ports = append(svc.Spec.Ports, p)
	}
	return svc
}

// criconfig.ServiceEnvVars against kubelet's envvars.FromServices on
// random lists of Services: the same variables in the same order.
func TestServiceEnvVars(t *testing.T) {
	r := newRand(t)
	n := cases(20000)
	d := differences{t: t}
	vars := 0
	for range n {
		var services []*corev1.Service
		for range r.IntN(6) {
			services = append(services, randomService(r))
		}
		ours := criconfig.ServiceEnvVars(services)
		theirs := envvars.FromServices(services)
		vars += len(theirs)
		same := len(ours) == len(theirs)
		for i := 0; same && i < len(ours); i++ {
			same = ours[i].Name == theirs[i].Name && ours[i].Value == theirs[i].Value && theirs[i].ValueFrom == nil
		}
		if !same {
			d.add("ServiceEnvVars(%s)\n = %v\nkubelet %v", describeServices(services), ours, theirs)
		}
	}
	t.Logf("%d lists of Services, %d variables", n, vars)
	d.report(n, "service variable lists")
}

func describeServices(list []*corev1.Service) string {
	var b strings.Builder
	for _, s := range list {
		fmt.Fprintf(&b, "{%s/%s ip %q ports %v} ", s.Namespace, s.Name, s.Spec.ClusterIP, s.Spec.Ports)
	}
	return b.String()
}

var (
	envKeys   = []string{"A", "B", "KEY", "KEY2", "K_1", "a.b", "1X"}
	envValues = []string{"", "v", "two words", "$HOME", "${X}", "#not", "a=b", "\"dq\"", "tab\there", "é€😀", "\\n", "x\ny", "\n", "line1\n\nline3"}
)

// randomEnvLine is one statement of an env file: with broken, now and
// then broken the ways kubelet's parser reports.
func randomEnvLine(r *rand.Rand, broken bool) string {
	key := pick(r, envKeys)
	val := pick(r, envValues)
	lead := pick(r, []string{"", "", " ", "\t", "  \t"})
	kind := 20
	if broken {
		kind = r.IntN(20)
	}
	switch kind {
	case 0:
		return lead
	case 1:
		return lead + "# " + val
	case 2:
		return lead + key + " ='" + val + "'"
	case 3:
		return lead + key + "= '" + val + "'" + pick(r, []string{"", " junk", "'"})
	case 4:
		return lead + key + "=" + val
	case 5:
		return lead + key
	case 6:
		return lead + "='" + val + "'"
	case 7:
		return lead + key + "='" + val // unclosed, may close later
	case 8:
		return lead + key + "='" + val + "'" + pick(r, []string{"x", " x", "''", " #c", "\t# c", "#"})
	case 9:
		return lead + key + "=\"" + val + "\""
	case 10:
		return lead + key + "='" + strings.Repeat("v", 65530+r.IntN(10)) + "'"
	case 11:
		return trickyString(r, 4)
	}
	return lead + key + "='" + val + "'" + pick(r, []string{"", "", " ", " # comment"})
}

// envfile against kubelet's envutil.ParseEnv on random env files and
// keys: the same value, or the same message.
func TestEnvFileParse(t *testing.T) {
	r := newRand(t)
	n := cases(5000)
	d := differences{t: t}
	dir := t.TempDir()
	found, failed := 0, 0
	for i := range n {
		var lines []string
		broken := r.IntN(2) == 0
		for range r.IntN(8) {
			lines = append(lines, randomEnvLine(r, broken))
		}
		content := strings.Join(lines, pick(r, []string{"\n", "\n", "\r\n"}))
		if r.IntN(2) == 0 {
			content += "\n"
		}
		name := "f" + strconv.Itoa(i%50) + ".env"
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		key := pick(r, envKeys)
		ours, ourErr := envfile.LookupInRoot(dir, name, path, key)
		theirs, theirErr := envutil.ParseEnv(path, key)
		if ours != theirs || fmt.Sprint(ourErr) != fmt.Sprint(theirErr) {
			d.add("file %q key %q: ours %q, %v; kubelet %q, %v", content, key, ours, ourErr, theirs, theirErr)
		}
		if theirErr != nil {
			failed++
		} else if theirs != "" {
			found++
		}
	}
	t.Logf("%d files: %d values found, %d errors", n, found, failed)
	d.report(n, "env file lookups")
}
