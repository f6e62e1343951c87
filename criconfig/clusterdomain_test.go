package criconfig

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/mounts"
)

// TestEmptyClusterDomain: kubelet's clusterDomain defaults to none, and so
// does Node's. Then (pkg/kubelet/network/dns generateSearchesForDNSClusterFirst,
// GeneratePodHostNameAndDomain, managedHostsFileContent) ClusterFirst pods
// get the node's searches alone, and a subdomain's domain is
// "<subdomain>.<namespace>.svc." in the sandbox hostname and /etc/hosts.
func TestEmptyClusterDomain(t *testing.T) {
	n := node()
	n.ClusterDomain = ""
	sub := func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "h", "sub" }
	tests := []struct {
		name         string
		pod          func(*corev1.Pod)
		wantSearches []string
		wantHostname string
		wantDomain   string
		wantHosts    string
	}{
		{"ClusterFirst: the node's searches only", nil, []string{"corp.test"}, "p", "", "10.0.0.1\tp\n"},
		{"subdomain", sub, []string{"corp.test"}, "h", "sub.ns.svc.", "10.0.0.1\th.sub.ns.svc.\th\n"},
		{"subdomain and setHostnameAsFQDN", func(p *corev1.Pod) { sub(p); p.Spec.SetHostnameAsFQDN = ptr(true) },
			[]string{"corp.test"}, "h.sub.ns.svc.", "sub.ns.svc.", "10.0.0.1\th.sub.ns.svc.\th\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod(tt.pod)
			cfg, err := SandboxConfig(p, 0, n)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(cfg.DnsConfig.Searches, tt.wantSearches) || !slices.Equal(cfg.DnsConfig.Servers, []string{"10.96.0.10"}) {
				t.Fatalf("DNS %v", cfg.DnsConfig)
			}
			if cfg.Hostname != tt.wantHostname {
				t.Fatalf("sandbox hostname %q, want %q", cfg.Hostname, tt.wantHostname)
			}
			h, d, err := mounts.HostnameAndDomain(p, n.ClusterDomain)
			if err != nil || d != tt.wantDomain {
				t.Fatalf("domain %q, %v; want %q", d, err, tt.wantDomain)
			}
			hosts, err := mounts.HostsFileContent(h, d, []string{"10.0.0.1"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(string(hosts), "\n"+tt.wantHosts) {
				t.Fatalf("hosts file ends\n%s\nwant a last line %q", hosts, tt.wantHosts)
			}
		})
	}
	t.Run("Node's zero value is kubelet's default, no domain", func(t *testing.T) {
		p := testPod(sub)
		cfg, err := SandboxConfig(p, 0, Node{ClusterDNS: []string{"10.96.0.10"}, ResolvConfContent: []byte("search corp.test\n")})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cfg.DnsConfig.Searches, []string{"corp.test"}) {
			t.Fatalf("searches %v", cfg.DnsConfig.Searches)
		}
	})
}
