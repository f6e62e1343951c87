package stats_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/runtime/fake"
	"github.com/podstart/podstart/stats"
)

// A pod's memory as the runtime reports it, in the Summary and in
// /metrics/resource.
func Example() {
	ctx := context.Background()
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rt := fake.New(fake.WithClock(clock), fake.WithImages("busybox"))
	sb := rt.SeedSandbox(&runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-web"}},
		runtimeapi.PodSandboxState_SANDBOX_READY, clock.Now().Add(-time.Hour))
	id, _ := rt.SeedContainer(sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "busybox"}},
		fake.Seeded{State: runtimeapi.ContainerState_CONTAINER_RUNNING, CreatedAt: clock.Now().Add(-time.Minute)})
	_ = rt.SetMemoryUsage(id, 64<<20)

	p := stats.New(rt, rt, stats.WithNodeName("node-1"), stats.WithClock(clock))
	sum, err := p.Summary(ctx, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	pod := sum.Pods[0]
	fmt.Printf("%s/%s started %s, working set %d MiB\n", pod.PodRef.Namespace, pod.PodRef.Name, pod.StartTime.UTC().Format(time.TimeOnly), *pod.Memory.WorkingSetBytes>>20)
	c := pod.Containers[0]
	fmt.Printf("container %s: working set %d MiB, CPU %d ns, rate %v (one sample)\n", c.Name, *c.Memory.WorkingSetBytes>>20, *c.CPU.UsageCoreNanoSeconds, c.CPU.UsageNanoCores)

	var b strings.Builder
	_ = p.ResourceMetrics(ctx, &b)
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(line, "pod_memory") || strings.HasPrefix(line, "container_start") {
			fmt.Fprintln(os.Stdout, line)
		}
	}
	// Output:
	// default/web started 02:04:05, working set 64 MiB
	// container app: working set 64 MiB, CPU 0 ns, rate <nil> (one sample)
	// container_start_time_seconds{container="app",namespace="default",pod="web"} 1.767322985e+09
	// pod_memory_working_set_bytes{namespace="default",pod="web"} 6.7108864e+07 1767323045000
}
