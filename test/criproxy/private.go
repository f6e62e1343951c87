package criproxy

import (
	"slices"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Private makes the runtime's list answers (ListPodSandbox,
// ListContainers, ListPodSandboxStats, ListContainerStats,
// ListPodSandboxMetrics) hold only the sandboxes and containers created
// through this proxy: a node behind it sees its own pods as if it were
// alone on a runtime other nodes share. Without it, kubelet sees another
// node's sandboxes, takes them for its orphans and retries killing them
// (the Guard refuses every try) for as long as the test runs, and it
// keeps retrying a refused sandbox's ID after the sandbox is gone. Events
// (GetContainerEvents) are not filtered: a sandbox's events can arrive
// before RunPodSandbox answers with its ID.
func Private() Option { return func(p *Proxy) { p.private = true } }

// keepOwned drops from a list answer what this proxy did not make, and
// returns the frame to send (f itself when nothing was dropped).
func (p *Proxy) keepOwned(resp proto.Message, f *frame) (*frame, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	switch r := resp.(type) {
	case *runtimeapi.ListPodSandboxResponse:
		n = len(r.Items)
		r.Items = slices.DeleteFunc(r.Items, func(s *runtimeapi.PodSandbox) bool { return !p.owned[s.Id] })
		n -= len(r.Items)
	case *runtimeapi.ListContainersResponse:
		n = len(r.Containers)
		r.Containers = slices.DeleteFunc(r.Containers, func(c *runtimeapi.Container) bool { return !p.owned[c.Id] })
		n -= len(r.Containers)
	case *runtimeapi.ListPodSandboxStatsResponse:
		n = len(r.Stats)
		r.Stats = slices.DeleteFunc(r.Stats, func(s *runtimeapi.PodSandboxStats) bool { return !p.owned[s.GetAttributes().GetId()] })
		n -= len(r.Stats)
	case *runtimeapi.ListContainerStatsResponse:
		n = len(r.Stats)
		r.Stats = slices.DeleteFunc(r.Stats, func(s *runtimeapi.ContainerStats) bool { return !p.owned[s.GetAttributes().GetId()] })
		n -= len(r.Stats)
	case *runtimeapi.ListPodSandboxMetricsResponse:
		n = len(r.PodMetrics)
		r.PodMetrics = slices.DeleteFunc(r.PodMetrics, func(m *runtimeapi.PodSandboxMetrics) bool { return !p.owned[m.PodSandboxId] })
		n -= len(r.PodMetrics)
	}
	if n == 0 {
		return f, nil
	}
	b, err := proto.Marshal(resp)
	if err != nil {
		return nil, err
	}
	return &frame{b: b}, nil
}
