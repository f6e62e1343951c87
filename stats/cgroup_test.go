package stats_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// psiFile is a pressure file whose totals are total (some) and total+1
// (full), so a test can tell which file a value came from.
func psiFile(total uint64) string {
	return fmt.Sprintf("some avg10=1.50 avg60=0.75 avg300=0.25 total=%d\nfull avg10=0.50 avg60=0.25 avg300=0.10 total=%d\n", total, total+1)
}

func psi(total uint64) *statsapi.PSIStats {
	return &statsapi.PSIStats{Some: statsapi.PSIData{Total: total, Avg10: 1.5, Avg60: 0.75, Avg300: 0.25},
		Full: statsapi.PSIData{Total: total + 1, Avg10: 0.5, Avg60: 0.25, Avg300: 0.1}}
}

// pressureFiles are the three pressure files of a cgroup (or, with proc,
// /proc/pressure's), their totals base, base+10 and base+20.
func pressureFiles(dir string, base uint64, proc bool) map[string]string {
	name := func(r string) string {
		if proc {
			return dir + "/" + r
		}
		return dir + "/" + r + ".pressure"
	}
	return map[string]string{name("cpu"): psiFile(base), name("memory"): psiFile(base + 10), name("io"): psiFile(base + 20)}
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// view is the part of a Summary the cgroups and /proc/pressure fill.
type view struct {
	NodeCPUPSI, NodeMemPSI, NodeIOPSI *statsapi.PSIStats
	NodeRSS, NodePF, NodeMPF          *uint64
	PodAvail                          *uint64
	PodCPUPSI, PodMemPSI, PodIOPSI    *statsapi.PSIStats
	PodSwapUsed, PodSwapAvail         *uint64
	PodSwap                           bool
	CtrAvail                          *uint64
	CtrCPUPSI, CtrMemPSI, CtrIOPSI    *statsapi.PSIStats
	CtrSwapUsed, CtrSwapAvail         *uint64
}

func podByUID(s *statsapi.Summary, uid string) statsapi.PodStats {
	for _, ps := range s.Pods {
		if ps.PodRef.UID == uid {
			return ps
		}
	}
	return statsapi.PodStats{}
}

func viewOf(s *statsapi.Summary) view {
	var v view
	if c := s.Node.CPU; c != nil {
		v.NodeCPUPSI = c.PSI
	}
	if m := s.Node.Memory; m != nil {
		v.NodeMemPSI, v.NodeRSS, v.NodePF, v.NodeMPF = m.PSI, m.RSSBytes, m.PageFaults, m.MajorPageFaults
	}
	if s.Node.IO != nil {
		v.NodeIOPSI = s.Node.IO.PSI
	}
	pod := podByUID(s, "uid-web")
	v.PodCPUPSI, v.PodMemPSI, v.PodAvail = pod.CPU.PSI, pod.Memory.PSI, pod.Memory.AvailableBytes
	if pod.IO != nil {
		v.PodIOPSI = pod.IO.PSI
	}
	if pod.Swap != nil {
		v.PodSwap, v.PodSwapUsed, v.PodSwapAvail = true, pod.Swap.SwapUsageBytes, pod.Swap.SwapAvailableBytes
	}
	c := pod.Containers[0]
	v.CtrCPUPSI, v.CtrMemPSI, v.CtrAvail = c.CPU.PSI, c.Memory.PSI, c.Memory.AvailableBytes
	v.CtrSwapUsed, v.CtrSwapAvail = c.Swap.SwapUsageBytes, c.Swap.SwapAvailableBytes
	if c.IO != nil {
		v.CtrIOPSI = c.IO.PSI
	}
	return v
}

// Pods' and containers' limits, swap and PSI from their cgroups, and the
// node's PSI and memory.stat, on cgroup v2, a hybrid host and cgroup v1,
// with the cgroupfs and systemd drivers, as kubelet's cAdvisor-backed
// stats report them.
func TestCgroupStats(t *testing.T) {
	t.Parallel()
	const (
		v1Unlimited = "9223372036854771712\n" // what cgroup v1 writes for no limit
		appLimit    = 100 << 20               // the app container's memory limit
		appWS       = 10 << 20                // its working set, from CRI
	)
	nodePSI := pressureFiles("pressure", 1000, true)
	tests := []struct {
		name   string
		proc   map[string]string
		cgroup func(appID string) map[string]string
		want   view
	}{{
		name: "v2 cgroupfs, burstable pod without a limit, container with one",
		proc: nodePSI,
		cgroup: func(id string) map[string]string {
			pod := "kubepods/burstable/poduid-web"
			return merge(map[string]string{
				"cgroup.controllers":                         "cpu io memory pids\n",
				"memory.stat":                                "anon 300\nfile 5\npgfault 40\npgmajfault 2\n",
				pod + "/memory.max":                          "max\n",
				pod + "/memory.swap.max":                     "max\n",
				pod + "/memory.swap.current":                 "4096\n",
				pod + "/" + id + "/memory.max":               fmt.Sprint(appLimit),
				pod + "/" + id + "/memory.swap.max":          "0\n",
				pod + "/" + id + "/memory.swap.current":      "0\n",
				"kubepods/burstable/poduid-other/memory.max": "max\n",
			}, pressureFiles(pod, 2000, false), pressureFiles(pod+"/"+id, 3000, false))
		},
		want: view{
			NodeCPUPSI: psi(1000), NodeMemPSI: psi(1010), NodeIOPSI: psi(1020), NodeRSS: p[uint64](300), NodePF: p[uint64](40), NodeMPF: p[uint64](2),
			PodCPUPSI: psi(2000), PodMemPSI: psi(2010), PodIOPSI: psi(2020), PodSwap: true, PodSwapUsed: p[uint64](4096), // no availableBytes: no limit
			// containers: CRI's values (kubelet's makeContainerStats), no cgroup PSI or limit

			CtrSwapUsed: p[uint64](0), CtrSwapAvail: p[uint64](0),
		},
	}, {
		name: "hybrid systemd: limits from v1's memory hierarchy, PSI from the unified one",
		proc: nodePSI,
		cgroup: func(id string) map[string]string {
			pod := "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-poduid_web.slice"
			ctr := pod + "/cri-containerd-" + id + ".scope"
			return merge(map[string]string{
				"memory/memory.limit_in_bytes":                   v1Unlimited,
				"memory/memory.use_hierarchy":                    "1\n",
				"memory/memory.stat":                             "rss 1\ntotal_rss 500\npgfault 60\npgmajfault 3\n",
				"unified/cgroup.controllers":                     "",
				"memory/" + pod + "/memory.limit_in_bytes":       v1Unlimited,
				"memory/" + pod + "/memory.memsw.limit_in_bytes": v1Unlimited,
				"memory/" + pod + "/memory.use_hierarchy":        "1\n",
				"memory/" + pod + "/memory.stat":                 "swap 0\ntotal_swap 8192\n",
				"memory/" + ctr + "/memory.limit_in_bytes":       fmt.Sprint(appLimit),
				"memory/" + ctr + "/memory.memsw.limit_in_bytes": fmt.Sprint(appLimit + 4096),
				"memory/" + ctr + "/memory.use_hierarchy":        "1\n",
				"memory/" + ctr + "/memory.stat":                 "total_swap 1024\n",
			}, pressureFiles("unified/"+pod, 2000, false), pressureFiles("unified/"+ctr, 3000, false))
		},
		want: view{
			NodeCPUPSI: psi(1000), NodeMemPSI: psi(1010), NodeIOPSI: psi(1020), NodeRSS: p[uint64](500), NodePF: p[uint64](60), NodeMPF: p[uint64](3),
			PodCPUPSI: psi(2000), PodMemPSI: psi(2010), PodIOPSI: psi(2020), PodSwap: true, PodSwapUsed: p[uint64](8192),
			// containers: CRI's values (kubelet's makeContainerStats), no cgroup PSI or limit

			CtrSwapUsed: p[uint64](1024), CtrSwapAvail: p[uint64](0),
		},
	}, {
		name: "v1 without a unified hierarchy or /proc/pressure: no PSI anywhere, rss without hierarchy",
		cgroup: func(id string) map[string]string {
			pod := "kubepods/poduid-web"
			return map[string]string{
				"memory/memory.limit_in_bytes":                        v1Unlimited,
				"memory/memory.stat":                                  "rss 7\ntotal_rss 500\n",
				"memory/" + pod + "/memory.limit_in_bytes":            fmt.Sprint(2 * appLimit),
				"memory/" + pod + "/memory.stat":                      "cache 0\n", // no swap accounting
				"memory/" + pod + "/" + id + "/memory.limit_in_bytes": fmt.Sprint(appLimit),
			}
		},
		want: view{
			NodeRSS: p[uint64](7), NodePF: p[uint64](0), NodeMPF: p[uint64](0),
			PodAvail: p[uint64](2*appLimit - 2*appWS), PodSwap: true, PodSwapUsed: p[uint64](0), PodSwapAvail: p[uint64](0), // no memsw file: cAdvisor's 0 limit
			CtrSwapUsed: p[uint64](0), CtrSwapAvail: p[uint64](0),
		},
	}, {
		name: "no pod cgroup and a malformed /proc/pressure/cpu: CRI's values, no PSI",
		proc: merge(nodePSI, map[string]string{"pressure/cpu": "some avg10=x total=1\n"}),
		cgroup: func(string) map[string]string {
			return map[string]string{"cgroup.controllers": "", "kubepods/burstable/podsomeone-else/memory.max": "max\n"}
		},
		want: view{NodeMemPSI: psi(1010), NodeIOPSI: psi(1020), CtrSwapUsed: p[uint64](0), CtrSwapAvail: p[uint64](0)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := newNode(t, 2)
			writeFiles(t, n.proc, tt.proc)
			writeFiles(t, n.cgroup, tt.cgroup(n.ids["app"]))
			prov := n.provider()
			sum, err := prov.Get(context.Background(), false)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, viewOf(sum)); diff != "" {
				t.Errorf("Get (-want +got):\n%s", diff)
			}
			if other := podByUID(sum, "uid-1"); other.Memory.PSI != nil || other.Swap != nil {
				t.Errorf("pod without a cgroup: memory %+v, swap %+v", other.Memory, other.Swap)
			}
			// CPUAndMemory: the same, without IO (kubelet's GetCPUAndMemoryStats).
			cm, err := prov.CPUAndMemory(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			want.NodeIOPSI, want.PodIOPSI, want.CtrIOPSI = nil, nil, nil
			if !want.PodSwap { // the containers' swap summed, as before
				want.PodSwap, want.PodSwapUsed, want.PodSwapAvail = true, p[uint64](0), p[uint64](0)
			}
			if want.CtrAvail == nil { // CRI's, with kubelet's zero for a missing value
				want.CtrAvail = p[uint64](0)
			}
			if diff := cmp.Diff(want, viewOf(cm)); diff != "" {
				t.Errorf("CPUAndMemory (-want +got):\n%s", diff)
			}
			for _, c := range podByUID(cm, "uid-web").Containers {
				if c.IO != nil {
					t.Errorf("container %s has IO in CPUAndMemory", c.Name)
				}
			}
		})
	}
}
