package main

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/podstart/podstart/nodemetrics"
	"github.com/podstart/podstart/test/cluster"
)

// compareMetricScrapes scrapes /metrics, /metrics/probes and
// /metrics/cadvisor of both nodes (kubelet's anonymously, the agent's as
// the admin) and compares, for each family nodemetrics serves that both
// nodes have series of, the type, the help text and the label names of
// the series. A family only one node has series of is logged: which
// families have series depends on what happened on that node.
func compareMetricScrapes(t *testing.T, c *cluster.Cluster, agentURL, kubeletURL string) {
	t.Helper()
	admin, err := tls.LoadX509KeyPair(c.AdminCertFile, c.AdminKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, // both nodes' certificates are self-signed
		Certificates:       []tls.Certificate{admin}}}}
	scrape := func(url string) map[string]*dto.MetricFamily {
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", url, resp.Status)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		return fams
	}
	var names []string
	for _, f := range append(nodemetrics.KubeletFamilies(), nodemetrics.ProbeFamilies()...) {
		names = append(names, f.Name)
	}
	names = append(names, nodemetrics.CadvisorFamilies()...)
	ours := map[string]bool{}
	for _, n := range names {
		ours[n] = true
	}
	equal, different := 0, 0
	var onlyAgent, onlyKubelet []string
	for _, path := range []string{"/metrics", "/metrics/probes", "/metrics/cadvisor"} {
		a, k := scrape(agentURL+path), scrape(kubeletURL+path)
		if path == "/metrics/cadvisor" {
			for _, name := range []string{"container_memory_working_set_bytes", "container_network_receive_bytes_total"} {
				t.Logf("%s: agent %s; kubelet %s", name, sampleSeries(a[name], "-logs"), sampleSeries(k[name], "-logs"))
			}
		}
		for name := range ours {
			af, kf := a[name], k[name]
			switch {
			case af == nil && kf == nil:
				continue
			case kf == nil:
				onlyAgent = append(onlyAgent, path+" "+name)
				continue
			case af == nil:
				onlyKubelet = append(onlyKubelet, path+" "+name)
				continue
			}
			var diffs []string
			if af.GetType() != kf.GetType() || af.GetHelp() != kf.GetHelp() {
				diffs = append(diffs, "type/help "+af.GetType().String()+" "+af.GetHelp()+" vs "+kf.GetType().String()+" "+kf.GetHelp())
			}
			if al, kl := labelNameSets(af), labelNameSets(kf); !slices.Equal(al, kl) {
				diffs = append(diffs, "label names "+strings.Join(al, " | ")+" vs "+strings.Join(kl, " | "))
			}
			if len(diffs) > 0 {
				different++
				t.Errorf("%s %s: agent vs kubelet: %s", path, name, strings.Join(diffs, "; "))
			} else {
				equal++
			}
		}
	}
	sort.Strings(onlyAgent)
	sort.Strings(onlyKubelet)
	t.Logf("scrapes: %d families equal in type, help and label names, %d different; series only on the agent: %v; only on kubelet: %v",
		equal, different, onlyAgent, onlyKubelet)
}

// labelNameSets are the distinct sets of label names of a family's series.
func labelNameSets(f *dto.MetricFamily) []string {
	set := map[string]bool{}
	for _, m := range f.Metric {
		var names []string
		for _, l := range m.Label {
			if l.GetName() != "le" && l.GetName() != "quantile" {
				names = append(names, l.GetName())
			}
		}
		sort.Strings(names)
		set[strings.Join(names, ",")] = true
	}
	var out []string
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// sampleSeries shows the series of f whose pod label ends in podSuffix.
func sampleSeries(f *dto.MetricFamily, podSuffix string) string {
	if f == nil {
		return "none"
	}
	var out []string
	for _, m := range f.Metric {
		var labels []string
		pod := ""
		for _, l := range m.Label {
			labels = append(labels, l.GetName()+"="+l.GetValue())
			if l.GetName() == "pod" {
				pod = l.GetValue()
			}
		}
		if strings.HasSuffix(pod, podSuffix) {
			out = append(out, "{"+strings.Join(labels, ",")+"}")
		}
	}
	return fmt.Sprintf("%d series, %s", len(f.Metric), strings.Join(out, " "))
}
