package main

import (
	"fmt"
	"net/http"

	"github.com/podstart/podstart/nodemetrics"
)

// The node's own metrics (nodemetrics): kubelet's /metrics, /metrics/probes
// and /metrics/cadvisor, served by the node API (nodes/metrics) and fed by
// the hooks Run wires: the workers' syncs and relists, the probes, image
// GC, eviction, the image pulls (through the recorder) and the watch.
// Runtime operations are counted when the caller dialled the runtime with
// Config.Metrics' interceptor (main does).

// initMetrics makes the registries: Config.Metrics, or one of the
// agent's own.
func (a *agent) initMetrics() error {
	a.metrics = a.Metrics
	if a.metrics == nil {
		m, err := nodemetrics.New(a.NodeName)
		if err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		a.metrics = m
	}
	a.probeMetrics = nodemetrics.NewProbes()
	return nil
}

// metricsHandlers are the node API's /metrics, /metrics/probes and
// /metrics/cadvisor (the last only on a runtime with CRI stats).
func (a *agent) metricsHandlers() (node, probes, cadvisor http.Handler) {
	node, probes = a.metrics.Handler(), a.probeMetrics.Handler()
	if a.stats != nil {
		cadvisor = nodemetrics.NewCadvisor(a.stats, a.Runtime, nodemetrics.WithCgroupRoot(a.CgroupRoot)).Handler()
	}
	return node, probes, cadvisor
}
