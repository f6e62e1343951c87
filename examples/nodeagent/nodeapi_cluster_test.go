package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/nodeapi"
	"github.com/podstart/podstart/test/cluster"
)

// kubectl v1.37.2 (test/cluster/build.sh) against a real kube-apiserver
// v1.37.2 and the agent on containerd, with the node API behind the
// agent's authentication and authorization: logs with its options, exec
// with and without stdin, attach, port-forward to an HTTP server in a pod,
// the stats summary through the API server's node proxy, and who may ask
// (401 anonymous, 403 without nodes/proxy, 200 with).
func TestNodeAPIWithKubectl(t *testing.T) {
	endpoint, dir := containerdEnv(t, "kubectl")
	kubectlBin := filepath.Join(dir, "bin", "kubectl")
	open := os.Getenv("PODSTART_E2E_OPEN_IMAGE")
	ip := hostIP()
	if ip == nil {
		t.Fatal("no global unicast address: the API server does not proxy to loopback nodes")
	}

	const node = "podstart-nodeapi"
	// A run that failed half-way leaves its pods on containerd: removed
	// before and after.
	removeLeftovers(t, endpoint, "nodeapi")
	t.Cleanup(func() { removeLeftovers(t, endpoint, "nodeapi") })
	// The node is reached at its InternalIP, as the agent reports it.
	c := cluster.StartT(t, cluster.Options{NodeName: node, ExtraAPIServerArgs: []string{"--kubelet-preferred-address-types=InternalIP"}})
	admin := clientFor(t, c.AdminKubeconfig)
	ctx := context.Background()
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": "CA"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rt := guardedRuntime(t, endpoint)

	caPEM, err := os.ReadFile(c.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	clientCAs.AppendCertsFromPEM(caPEM)
	cert, err := nodeapi.SelfSignedCertificate(t.TempDir(), node)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	nodeURL := "https://" + ln.Addr().String()
	root := t.TempDir()
	runAgent(t, Config{Client: clientFor(t, c.NodeKubeconfig), Runtime: rt, NodeName: node, RootDir: root,
		PodLogsDir: filepath.Join(root, "logs"), Clock: clock.RealClock{},
		NodeAPI: &NodeAPI{Listener: ln, Certificate: cert, ClientCAs: clientCAs}})

	grace := int64(1)
	pod := func(name string, restart corev1.RestartPolicy, script string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node, RestartPolicy: restart,
			TerminationGracePeriodSeconds: &grace, Containers: []corev1.Container{{Name: "app", Image: open,
				ImagePullPolicy: corev1.PullIfNotPresent, Command: []string{"sh", "-c", script}}}}}
	}
	for _, p := range []*corev1.Pod{
		pod("nodeapi-printer", corev1.RestartPolicyAlways, "echo one; echo two; echo three; echo four; sleep 1; echo oops >&2; exec sleep 3600"),
		pod("nodeapi-ticker", corev1.RestartPolicyAlways, "i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done"),
		pod("nodeapi-crasher", corev1.RestartPolicyAlways, "echo run $(date +%s); sleep 1; exit 1"),
		pod("nodeapi-web", corev1.RestartPolicyAlways, "mkdir -p /www && echo hello-from-pod > /www/index.html && exec httpd -f -p 8080 -h /www"),
	} {
		if _, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually60(t, "pods running, crasher restarted", func() bool {
		list, err := admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		ok := 0
		for _, p := range list.Items {
			for _, cs := range p.Status.ContainerStatuses {
				if p.Name == "nodeapi-crasher" && cs.RestartCount >= 1 || p.Name != "nodeapi-crasher" && cs.State.Running != nil {
					ok++
				}
			}
		}
		return ok == 4
	})

	kubectl := func(stdin string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectlBin, append([]string{"--kubeconfig", c.AdminKubeconfig}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return out.String(), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, errb.String())
		}
		return out.String(), nil
	}
	must := func(stdin string, args ...string) string {
		t.Helper()
		out, err := kubectl(stdin, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	// exec, with and without stdin.
	if got := must("", "exec", "nodeapi-printer", "--", "cat", "/etc/hostname"); got != "nodeapi-printer\n" {
		t.Errorf("kubectl exec cat /etc/hostname: %q", got)
	}
	if got := must("hello node api", "exec", "-i", "nodeapi-printer", "--", "tr", "a-z", "A-Z"); got != "HELLO NODE API" {
		t.Errorf("kubectl exec -i tr: %q", got)
	}
	if _, err := kubectl("", "exec", "nodeapi-printer", "--", "sh", "-c", "exit 3"); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("kubectl exec exit 3: %v", err)
	}

	// attach: the running container's output.
	attach := exec.Command(kubectlBin, "--kubeconfig", c.AdminKubeconfig, "attach", "nodeapi-ticker")
	aout, _ := attach.StdoutPipe()
	if err := attach.Start(); err != nil {
		t.Fatal(err)
	}
	attached := readLines(t, aout, 3)
	_ = attach.Process.Kill()
	_ = attach.Wait()
	if !increasingTicks(attached) {
		t.Errorf("kubectl attach: %q", attached)
	}

	// port-forward to the pod's HTTP server.
	pf := exec.Command(kubectlBin, "--kubeconfig", c.AdminKubeconfig, "port-forward", "pod/nodeapi-web", ":8080")
	pfout, _ := pf.StdoutPipe()
	if err := pf.Start(); err != nil {
		t.Fatal(err)
	}
	first := readLines(t, pfout, 1)
	m := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`).FindStringSubmatch(first[0])
	if m == nil {
		t.Fatalf("kubectl port-forward said %q", first)
	}
	resp, err := http.Get("http://127.0.0.1:" + m[1] + "/index.html")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_ = pf.Process.Kill()
	_ = pf.Wait()
	if string(body) != "hello-from-pod\n" {
		t.Errorf("through port-forward: %q", body)
	}

	// Logs, with kubectl's options. The printer's stderr line comes a
	// second after the rest (containerd reads stdout and stderr apart).
	eventually60(t, "the printer's last line", func() bool {
		out, err := kubectl("", "logs", "nodeapi-printer", "--tail=1")
		return err == nil && out == "oops\n"
	})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"logs", "nodeapi-printer"}, "one\ntwo\nthree\nfour\noops\n"},
		{[]string{"logs", "nodeapi-printer", "--tail=2"}, "four\noops\n"},
		{[]string{"logs", "nodeapi-printer", "--since=1h"}, "one\ntwo\nthree\nfour\noops\n"},
		{[]string{"logs", "nodeapi-printer", "--limit-bytes=6"}, "one\ntw"},
	} {
		if got := must("", tc.args...); got != tc.want {
			t.Errorf("kubectl %s: %q, want %q", strings.Join(tc.args, " "), got, tc.want)
		}
	}
	stamped := must("", "logs", "nodeapi-printer", "--timestamps")
	if !regexp.MustCompile(`^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z (one|two|three|four|oops)\n){5}$`).MatchString(stamped) {
		t.Errorf("kubectl logs --timestamps: %q", stamped)
	}
	if prev := must("", "logs", "nodeapi-crasher", "--previous"); !regexp.MustCompile(`^run \d+\n$`).MatchString(prev) {
		t.Errorf("kubectl logs --previous: %q", prev)
	}
	// Follow: new lines arrive while the command runs.
	follow := exec.Command(kubectlBin, "--kubeconfig", c.AdminKubeconfig, "logs", "-f", "nodeapi-ticker", "--tail=1")
	stdout, _ := follow.StdoutPipe()
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, stdout, 5)
	_ = follow.Process.Kill()
	_ = follow.Wait()
	if !increasingTicks(lines) {
		t.Errorf("kubectl logs -f: %q, want 5 successive ticks", lines)
	}

	// The stats summary, through the API server's node proxy.
	raw := must("", "get", "--raw", "/api/v1/nodes/"+node+"/proxy/stats/summary")
	var summary statsapi.Summary
	if err := json.Unmarshal([]byte(raw), &summary); err != nil {
		t.Fatalf("stats/summary: %v: %.300s", err, raw)
	}
	found := false
	for _, p := range summary.Pods {
		if p.PodRef.Name == "nodeapi-printer" {
			found = p.CPU != nil && p.CPU.UsageCoreNanoSeconds != nil && p.Memory != nil && p.Memory.WorkingSetBytes != nil && *p.Memory.WorkingSetBytes > 0
		}
	}
	if summary.Node.NodeName != node || !found {
		t.Errorf("stats/summary: node %q, printer's CPU and memory found %v: %.500s", summary.Node.NodeName, found, raw)
	}

	// Who may ask the node itself.
	insecure := &tls.Config{InsecureSkipVerify: true} // the node's self-signed certificate
	status := func(certFile, keyFile string) int {
		cfg := insecure.Clone()
		if certFile != "" {
			pair, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Second}
		resp, err := client.Get(nodeURL + "/pods")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := status("", ""); code != http.StatusUnauthorized {
		t.Errorf("anonymous: %d, want 401", code)
	}
	_, viewerCert, viewerKey, err := c.UserKubeconfig("viewer")
	if err != nil {
		t.Fatal(err)
	}
	if code := status(viewerCert, viewerKey); code != http.StatusForbidden {
		t.Errorf("a user without nodes/proxy: %d, want 403", code)
	}
	_, opCert, opKey, err := c.UserKubeconfig("operator")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "node-proxy"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "operator-node-proxy"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "node-proxy"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "operator"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually60(t, "operator allowed once RBAC has the binding", func() bool { return status(opCert, opKey) == http.StatusOK })

	for _, name := range []string{"nodeapi-printer", "nodeapi-ticker", "nodeapi-crasher", "nodeapi-web"} {
		if err := admin.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
			t.Error(err)
		}
	}
	eventually60(t, "pods deleted", func() bool {
		list, err := admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0
	})
}

// readLines reads n lines from r, failing after 30 s.
func readLines(t *testing.T, r io.Reader, n int) []string {
	t.Helper()
	got := make(chan []string, 1)
	go func() {
		var lines []string
		sc := bufio.NewScanner(r)
		for len(lines) < n && sc.Scan() {
			lines = append(lines, sc.Text())
		}
		got <- lines
	}()
	select {
	case lines := <-got:
		if len(lines) < n {
			t.Fatalf("read %q, want %d lines", lines, n)
		}
		return lines
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out reading %d lines", n)
	}
	return nil
}

// increasingTicks: "tick N", "tick N+1", ...
func increasingTicks(lines []string) bool {
	var prev int
	for i, l := range lines {
		var n int
		if _, err := fmt.Sscanf(l, "tick %d", &n); err != nil || i > 0 && n != prev+1 {
			return false
		}
		prev = n
	}
	return len(lines) > 0
}

// eventually60 is eventually with a minute.
func eventually60(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond) // polling interval, not synchronisation
	}
}
