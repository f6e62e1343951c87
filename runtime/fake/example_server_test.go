package fake_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

// The fake served over gRPC on a unix socket and reached with
// runtime.Dial, as a real runtime's socket is: what the client does
// happens in the fake.
func ExampleNewServer() {
	dir, err := os.MkdirTemp("", "fake-cri")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	rt := fake.New(fake.WithImages("busybox:1.35"))
	srv := fake.NewServer(rt)
	endpoint, err := srv.ServeUnix(filepath.Join(dir, "cri.sock")) // "unix:///tmp/fake-cri…/cri.sock"
	if err != nil {
		panic(err)
	}
	defer srv.Stop()

	ctx := context.Background()
	client, err := runtime.Dial(ctx, endpoint)
	if err != nil {
		panic(err)
	}
	defer client.Close()

	v, _ := client.Version(ctx, "v1")
	fmt.Println(v.RuntimeName, v.RuntimeApiVersion)
	sb, _ := client.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Uid: "1"}}, "")
	id, _ := client.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "busybox:1.35"},
		Command: []string{"sleep", "infinity"},
	}, nil)
	_ = client.StartContainer(ctx, id)
	st, _ := client.ContainerStatus(ctx, id, false)
	fmt.Println(st.Status.Metadata.Name, st.Status.State)
	fmt.Println("seen by the fake:", rt.CallCount("StartContainer"))
	// Output:
	// podstart-fake v1
	// app CONTAINER_RUNNING
	// seen by the fake: 1
}

// Without a StartFunc, a container does what its command does: sh -c
// "exit 3" exits 3 at once, and sleep 5 exits 0 once the fake clock has
// moved five seconds.
func ExampleCommandStart() {
	ctx := context.Background()
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC))
	rt := fake.New(fake.WithClock(clk), fake.WithImages("busybox:1.35"))
	sb, _ := rt.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Uid: "1"}}, "")
	run := func(name string, command ...string) string {
		id, _ := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: &runtimeapi.ImageSpec{Image: "busybox:1.35"},
			Command: command,
		}, nil)
		_ = rt.StartContainer(ctx, id)
		return id
	}
	show := func(id string) {
		st, _ := rt.ContainerStatus(ctx, id, false)
		s := st.Status
		if s.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			fmt.Println(s.Metadata.Name, s.State)
			return
		}
		fmt.Println(s.Metadata.Name, s.State, s.ExitCode, s.Reason)
	}

	failing := run("failing", "sh", "-c", "exit 3")
	sleeper := run("sleeper", "sleep", "5")
	show(failing)
	show(sleeper)
	clk.Step(5 * time.Second)
	show(sleeper)
	// Output:
	// failing CONTAINER_EXITED 3 Error
	// sleeper CONTAINER_RUNNING
	// sleeper CONTAINER_EXITED 0 Completed
}
