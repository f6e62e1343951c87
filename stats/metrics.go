package stats

import (
	"bufio"
	"context"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// ResourceMetrics writes kubelet's /metrics/resource from CPUAndMemory:
// the node API's ResourceMetrics. A Summary that cannot be read is
// reported as kubelet reports it, resource_scrape_error 1 and nothing
// else; the error is not returned.
func (p *Provider) ResourceMetrics(ctx context.Context, w io.Writer) error {
	sum, err := p.CPUAndMemory(ctx)
	return WriteResourceMetrics(w, sum, err)
}

// family is one metric of kubelet's resource metrics collector.
type family struct {
	name, help, typ string
}

var (
	containerCPU       = family{"container_cpu_usage_seconds_total", "[STABLE] Cumulative cpu time consumed by the container in core-seconds", "counter"}
	containerMemory    = family{"container_memory_working_set_bytes", "[STABLE] Current working set of the container in bytes", "gauge"}
	containerStartTime = family{"container_start_time_seconds", "[STABLE] Start time of the container since unix epoch in seconds", "gauge"}
	containerSwapLimit = family{"container_swap_limit_bytes", "[ALPHA] Current amount of the container swap limit in bytes. Reported only on non-windows systems", "gauge"}
	containerSwap      = family{"container_swap_usage_bytes", "[ALPHA] Current amount of the container swap usage in bytes. Reported only on non-windows systems", "gauge"}
	nodeCPU            = family{"node_cpu_usage_seconds_total", "[STABLE] Cumulative cpu time consumed by the node in core-seconds", "counter"}
	nodeMemoryWS       = family{"node_memory_working_set_bytes", "[STABLE] Current working set of the node in bytes", "gauge"}
	nodeSwap           = family{"node_swap_usage_bytes", "[ALPHA] Current swap usage of the node in bytes. Reported only on non-windows systems", "gauge"}
	podCPU             = family{"pod_cpu_usage_seconds_total", "[STABLE] Cumulative cpu time consumed by the pod in core-seconds", "counter"}
	podMemory          = family{"pod_memory_working_set_bytes", "[STABLE] Current working set of the pod in bytes", "gauge"}
	podSwap            = family{"pod_swap_usage_bytes", "[ALPHA] Current amount of the pod swap usage in bytes. Reported only on non-windows systems", "gauge"}
	scrapeError        = family{"resource_scrape_error", "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise", "gauge"}
)

// sample is one line of a family.
type sample struct {
	values []string // label values, in label name order
	labels string   // rendered, {…} or ""
	value  float64
	ms     int64 // timestamp in ms; 0 for none
	hasTS  bool
}

// WriteResourceMetrics writes sum as kubelet's resource metrics collector
// over its Prometheus registry does, in the text exposition format 0.0.4:
// families in name order, each with its HELP (kubelet's stability marker
// first) and TYPE lines, present only when it has samples; samples in
// label order; the stats' times as millisecond timestamps (none on
// container_start_time_seconds and resource_scrape_error). scrape_error,
// deprecated in 1.29, is hidden in kubelet 1.37 and not written. scrapeErr
// non-nil (sum then unused) writes resource_scrape_error 1 alone.
func WriteResourceMetrics(w io.Writer, sum *statsapi.Summary, scrapeErr error) error {
	byFamily := map[family][]sample{}
	add := func(f family, v float64, t *time.Time, labels ...string) {
		s := sample{value: v, labels: renderLabels(labels...)}
		for i := 1; i < len(labels); i += 2 {
			s.values = append(s.values, labels[i])
		}
		if t != nil {
			s.ms, s.hasTS = t.UnixMilli(), true
		}
		byFamily[f] = append(byFamily[f], s)
	}
	errValue := 0.0
	if scrapeErr != nil || sum == nil {
		errValue = 1
	} else {
		n := sum.Node
		if n.CPU != nil && n.CPU.UsageCoreNanoSeconds != nil {
			add(nodeCPU, seconds(*n.CPU.UsageCoreNanoSeconds), &n.CPU.Time.Time)
		}
		if n.Memory != nil && n.Memory.WorkingSetBytes != nil {
			add(nodeMemoryWS, float64(*n.Memory.WorkingSetBytes), &n.Memory.Time.Time)
		}
		if n.Swap != nil && n.Swap.SwapUsageBytes != nil {
			add(nodeSwap, float64(*n.Swap.SwapUsageBytes), &n.Swap.Time.Time)
		}
		for _, pod := range sum.Pods {
			name, ns := pod.PodRef.Name, pod.PodRef.Namespace
			for _, c := range pod.Containers {
				// labels in name order: container, namespace, pod
				if c.StartTime.Unix() > 0 {
					add(containerStartTime, float64(c.StartTime.UnixNano())/float64(time.Second), nil, "container", c.Name, "namespace", ns, "pod", name)
				}
				if c.CPU != nil && c.CPU.UsageCoreNanoSeconds != nil {
					add(containerCPU, seconds(*c.CPU.UsageCoreNanoSeconds), &c.CPU.Time.Time, "container", c.Name, "namespace", ns, "pod", name)
				}
				if c.Memory != nil && c.Memory.WorkingSetBytes != nil {
					add(containerMemory, float64(*c.Memory.WorkingSetBytes), &c.Memory.Time.Time, "container", c.Name, "namespace", ns, "pod", name)
				}
				if c.Swap != nil {
					used := 0.0
					if c.Swap.SwapUsageBytes != nil {
						used = float64(*c.Swap.SwapUsageBytes)
						add(containerSwap, used, &c.Swap.Time.Time, "container", c.Name, "namespace", ns, "pod", name)
					}
					if c.Swap.SwapAvailableBytes != nil {
						add(containerSwapLimit, float64(*c.Swap.SwapAvailableBytes)+used, &c.Swap.Time.Time, "container", c.Name, "namespace", ns, "pod", name)
					}
				}
			}
			if pod.CPU != nil && pod.CPU.UsageCoreNanoSeconds != nil {
				add(podCPU, seconds(*pod.CPU.UsageCoreNanoSeconds), &pod.CPU.Time.Time, "namespace", ns, "pod", name)
			}
			if pod.Memory != nil && pod.Memory.WorkingSetBytes != nil {
				add(podMemory, float64(*pod.Memory.WorkingSetBytes), &pod.Memory.Time.Time, "namespace", ns, "pod", name)
			}
			if pod.Swap != nil && pod.Swap.SwapUsageBytes != nil {
				add(podSwap, float64(*pod.Swap.SwapUsageBytes), &pod.Swap.Time.Time, "namespace", ns, "pod", name)
			}
		}
	}
	add(scrapeError, errValue, nil)

	families := make([]family, 0, len(byFamily))
	for f := range byFamily {
		families = append(families, f)
	}
	sort.Slice(families, func(i, j int) bool { return families[i].name < families[j].name })
	bw := bufio.NewWriter(w)
	var buf []byte
	for _, f := range families {
		samples := byFamily[f]
		// as client_golang's MetricSorter: label values pairwise
		sort.SliceStable(samples, func(i, j int) bool { return slices.Compare(samples[i].values, samples[j].values) < 0 })
		buf = append(buf[:0], "# HELP "...)
		buf = append(buf, f.name...)
		buf = append(buf, ' ')
		buf = append(buf, escapeHelp(f.help)...)
		buf = append(buf, "\n# TYPE "...)
		buf = append(buf, f.name...)
		buf = append(buf, ' ')
		buf = append(buf, f.typ...)
		buf = append(buf, '\n')
		for _, s := range samples {
			buf = append(buf, f.name...)
			buf = append(buf, s.labels...)
			buf = append(buf, ' ')
			buf = appendFloat(buf, s.value)
			if s.hasTS {
				buf = append(buf, ' ')
				buf = strconv.AppendInt(buf, s.ms, 10)
			}
			buf = append(buf, '\n')
		}
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func seconds(ns uint64) float64 { return float64(ns) / float64(time.Second) }

// renderLabels writes name="value" pairs (given in name order) as
// expfmt does.
func renderLabels(kv ...string) string {
	if len(kv) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(kv[i])
		b.WriteString(`="`)
		b.WriteString(labelEscaper.Replace(kv[i+1]))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeHelp(s string) string { return helpEscaper.Replace(s) }

// appendFloat is expfmt's writeFloat.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case f == 1:
		return append(b, '1')
	case f == 0:
		return append(b, '0')
	case f == -1:
		return append(b, "-1"...)
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
