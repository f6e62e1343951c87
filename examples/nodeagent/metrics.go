package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/nodemetrics"
	"github.com/podstart/podstart/runtime"
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
// /metrics/cadvisor (the last only on a runtime with CRI stats; the pods'
// network series only when the runtime's sandbox image is known).
func (a *agent) metricsHandlers(ctx context.Context) (node, probes, cadvisor http.Handler) {
	node, probes = a.metrics.Handler(), a.probeMetrics.Handler()
	if a.stats != nil {
		opts := []nodemetrics.CadvisorOption{nodemetrics.WithCgroupRoot(a.CgroupRoot)}
		if img := sandboxImage(ctx, a.Runtime); img != "" {
			opts = append(opts, nodemetrics.WithSandboxImage(img))
		}
		cadvisor = nodemetrics.NewCadvisor(a.stats, a.Runtime, opts...).Handler()
	}
	return node, probes, cadvisor
}

// sandboxImage is the image the runtime runs sandboxes from, which
// cAdvisor labels a pod's network series with: containerd 1.x's
// sandboxImage in CRI Status' verbose config, else the one image the
// runtime pins (containerd 2.x pins only its sandbox image; CRI-O its
// pause image); "" when neither says.
func sandboxImage(ctx context.Context, rt runtime.Runtime) string {
	if st, err := rt.Status(ctx, true); err == nil {
		if img := sandboxImageFromConfig(st.GetInfo()["config"]); img != "" {
			return img
		}
	}
	images, err := rt.ListImages(ctx, nil)
	if err != nil {
		return ""
	}
	var pinned []*runtimeapi.Image
	for _, img := range images {
		if img.GetPinned() && len(img.GetRepoTags()) > 0 {
			pinned = append(pinned, img)
		}
	}
	if len(pinned) != 1 {
		return ""
	}
	return pinned[0].GetRepoTags()[0]
}

// sandboxImageFromConfig reads containerd 1.x's CRI config (JSON).
func sandboxImageFromConfig(config string) string {
	var c struct {
		SandboxImage string `json:"sandboxImage"`
	}
	if config == "" || json.Unmarshal([]byte(config), &c) != nil {
		return ""
	}
	return c.SandboxImage
}
