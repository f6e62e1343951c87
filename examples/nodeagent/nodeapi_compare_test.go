package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/podstart/podstart/nodeapi"
	"github.com/podstart/podstart/test/cluster"
)

// sideBySideNodeAPI is the agent's node API for the side-by-side test: on
// loopback (kubelet's there is too), self-signed, clients verified against
// the cluster's CA.
func sideBySideNodeAPI(t *testing.T, c *cluster.Cluster) (*NodeAPI, string) {
	t.Helper()
	caPEM, err := os.ReadFile(c.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cert, err := nodeapi.SelfSignedCertificate(t.TempDir(), "podstart-agent")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", sideBySideAddr("PODSTART_SIDE_BY_SIDE_AGENT_PORT"))
	if err != nil {
		t.Fatal(err)
	}
	return &NodeAPI{Listener: ln, Certificate: cert, ClientCAs: pool}, "https://" + ln.Addr().String()
}

// compareNodeAPIs asks both node APIs what the API server would ask them
// for `kubectl logs` with each of its options, and for the stats summary,
// and compares the answers: status codes and bytes of the logs
// (timestamps replaced by their shape), the summary's shape (the set of
// field paths of the node and of a pod). Kubelet's API in these tests
// allows anonymous requests; the agent's is asked as the admin.
func compareNodeAPIs(t *testing.T, c *cluster.Cluster, agentURL, kubeletURL, agentNode, kubeletNode string) {
	t.Helper()
	admin, err := tls.LoadX509KeyPair(c.AdminCertFile, c.AdminKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, // both nodes' certificates are self-signed
		Certificates:       []tls.Certificate{admin}}}}
	get := func(url string) (int, string) {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	stamp := regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z`)
	for _, q := range []string{
		"app", "app?tailLines=2", "app?tailLines=0", "app?tail=all", "app?limitBytes=6", "app?sinceSeconds=3600",
		"app?sinceTime=2000-01-01T00:00:00Z", "app?timestamps=true", "app?timestamps=true&tailLines=1", "app?previous=true",
		"app?tailLines=-1", "app?limitBytes=0", "app?tailLines=x", "app?sinceSeconds=1&sinceTime=2000-01-01T00:00:00Z",
		"app?stream=Stdout", "app?stream=All", "nope", "app?follow=false",
	} {
		ac, ab := get(agentURL + "/containerLogs/default/" + agentNode + "-logs/" + q)
		kc, kb := get(kubeletURL + "/containerLogs/default/" + kubeletNode + "-logs/" + q)
		ab = strings.ReplaceAll(stamp.ReplaceAllString(ab, "<time>"), agentNode, "<node>")
		kb = strings.ReplaceAll(stamp.ReplaceAllString(kb, "<time>"), kubeletNode, "<node>")
		if ac != kc || ab != kb {
			t.Errorf("containerLogs %s: agent %d %q, kubelet %d %q", q, ac, ab, kc, kb)
		}
	}
	for _, p := range []string{"/containerLogs/default/nope/app"} {
		ac, _ := get(agentURL + p)
		kc, _ := get(kubeletURL + p)
		if ac != kc {
			t.Errorf("%s: agent %d, kubelet %d", p, ac, kc)
		}
	}
	shape := func(body string, node string) (nodeFields, podFields []string) {
		var s struct {
			Node map[string]any   `json:"node"`
			Pods []map[string]any `json:"pods"`
		}
		if err := json.Unmarshal([]byte(body), &s); err != nil {
			t.Fatalf("%s's summary: %v: %.300s", node, err, body)
		}
		nodeFields = fieldPaths("", s.Node)
		for _, p := range s.Pods {
			if ref, _ := p["podRef"].(map[string]any); ref["name"] == node+"-logs" {
				podFields = fieldPaths("", p)
			}
		}
		return nodeFields, podFields
	}
	// The summaries' shapes: kubelet's full one needs cAdvisor's view of
	// the root filesystem, which it cannot get on some machines (a VM's
	// /dev/vda here): then only the CPU and memory summary is compared.
	for _, q := range []string{"/stats/summary?only_cpu_and_memory=true", "/stats/summary"} {
		kc, kb := get(kubeletURL + q)
		ac, ab := get(agentURL + q)
		if kc != http.StatusOK {
			t.Logf("kubelet's %s: %d %.200s (not compared)", q, kc, kb)
			continue
		}
		if ac != http.StatusOK {
			t.Errorf("agent's %s: %d %.200s", q, ac, ab)
			continue
		}
		an, ap := shape(ab, agentNode)
		kn, kp := shape(kb, kubeletNode)
		if missing, extra := setDiff(kn, an), setDiff(an, kn); len(missing)+len(extra) > 0 {
			t.Logf("%s: node fields only kubelet has: %v; only the agent has: %v", q, missing, extra)
		}
		if missing, extra := setDiff(kp, ap), setDiff(ap, kp); len(missing)+len(extra) > 0 {
			t.Errorf("%s: pod fields only kubelet has: %v; only the agent has: %v", q, missing, extra)
		} else {
			t.Logf("%s: the pod's %d fields have kubelet's shape", q, len(ap))
		}
	}
}

// fieldPaths lists the paths of v's leaves ("cpu.usageNanoCores"), list
// elements merged ("containers[].name").
func fieldPaths(prefix string, v any) []string {
	set := map[string]bool{}
	var walk func(string, any)
	walk = func(p string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				q := k
				if p != "" {
					q = p + "." + k
				}
				walk(q, e)
			}
		case []any:
			for _, e := range x {
				walk(p+"[]", e)
			}
		default:
			set[p] = true
		}
	}
	walk(prefix, v)
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// setDiff is a minus b.
func setDiff(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[x] = true
	}
	var out []string
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	return out
}
