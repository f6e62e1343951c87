package nodemetrics

import (
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gather returns g's families by name.
func gather(t *testing.T, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// find returns the sample of fam whose labels include want ("k=v" pairs).
func find(fam *dto.MetricFamily, want ...string) *dto.Metric {
	if fam == nil {
		return nil
	}
	for _, m := range fam.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		ok := true
		for _, kv := range want {
			k, v, _ := strings.Cut(kv, "=")
			if hv, present := have[k]; !present || hv != v {
				ok = false
			}
		}
		if ok {
			return m
		}
	}
	return nil
}

// value is a sample's value: a counter's, a gauge's, or a histogram's count.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	m := find(fams[name], labels...)
	if m == nil {
		t.Fatalf("%s%v: no sample", name, labels)
	}
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	t.Fatalf("%s: unexpected type", name)
	return 0
}

func labelNames(m *dto.Metric) []string {
	var out []string
	for _, l := range m.Label {
		out = append(out, l.GetName())
	}
	sort.Strings(out)
	return out
}
