package fake_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func sandbox(t *testing.T, f *fake.Runtime, name string, hostNetwork bool) string {
	t.Helper()
	cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Uid: name}}
	if hostNetwork {
		cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}}
	}
	id, err := f.RunPodSandbox(context.Background(), cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestImageNormalisation(t *testing.T) {
	t.Parallel()
	f := fake.New(fake.WithImages("busybox"))
	ctx := context.Background()
	for _, ref := range []string{"busybox", "busybox:latest", "docker.io/library/busybox", "docker.io/library/busybox:latest"} {
		st, err := f.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: ref}, false)
		if err != nil || st.Image == nil {
			t.Errorf("ImageStatus(%q) = %v, %v", ref, st, err)
		}
	}
	st, _ := f.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "busybox"}, false)
	// The ID and a repo digest find the image too.
	for _, ref := range []string{st.Image.Id, st.Image.RepoDigests[0]} {
		if got, _ := f.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: ref}, false); got.Image == nil {
			t.Errorf("ImageStatus(%q) found nothing", ref)
		}
	}
	if got, _ := f.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "busybox:1.36"}, false); got.Image != nil {
		t.Error("another tag matched")
	}
	if _, err := f.PullImage(ctx, &runtimeapi.ImageSpec{Image: "UPPERCASE"}, nil, nil); err == nil {
		t.Error("pulled an invalid reference")
	}
}

func TestStartFuncAndExit(t *testing.T) {
	t.Parallel()
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	f := fake.New(fake.WithClock(clk), fake.WithImages("busybox"), fake.WithStartFunc(func(c *runtimeapi.ContainerConfig) *fake.Exit {
		if c.Metadata.Name == "init" {
			return &fake.Exit{Code: 0}
		}
		if c.Metadata.Name == "oom" {
			return &fake.Exit{Code: 137, Reason: "OOMKilled"}
		}
		return nil
	}))
	ctx := context.Background()
	sb := sandbox(t, f, "p", false)
	cases := []struct {
		name   string
		state  runtimeapi.ContainerState
		code   int32
		reason string
	}{
		{"init", runtimeapi.ContainerState_CONTAINER_EXITED, 0, "Completed"},
		{"oom", runtimeapi.ContainerState_CONTAINER_EXITED, 137, "OOMKilled"},
		{"app", runtimeapi.ContainerState_CONTAINER_RUNNING, 0, ""},
	}
	for _, c := range cases {
		id, err := f.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: c.name}, Image: &runtimeapi.ImageSpec{Image: "busybox"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		clk.Step(time.Second)
		if err := f.StartContainer(ctx, id); err != nil {
			t.Fatal(err)
		}
		st, _ := f.ContainerStatus(ctx, id, false)
		s := st.Status
		if s.State != c.state || s.ExitCode != c.code || s.Reason != c.reason {
			t.Errorf("%s: %v exit %d %q; want %v exit %d %q", c.name, s.State, s.ExitCode, s.Reason, c.state, c.code, c.reason)
		}
		// Timestamps come from the injected clock, nudged by nanoseconds
		// so that they strictly increase.
		near := func(got int64, want time.Time) bool { return got >= want.UnixNano() && got < want.UnixNano()+1000 }
		if !near(s.StartedAt, clk.Now()) || !near(s.CreatedAt, clk.Now().Add(-time.Second)) {
			t.Errorf("%s: timestamps not from the injected clock: %d %d", c.name, s.CreatedAt, s.StartedAt)
		}
	}
}

func TestKillSandbox(t *testing.T) {
	t.Parallel()
	f := fake.New(fake.WithImages("busybox"))
	ctx := context.Background()
	sb := sandbox(t, f, "p", false)
	id, _ := f.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "busybox"}}, nil)
	f.StartContainer(ctx, id)
	if err := f.KillSandbox(sb); err != nil {
		t.Fatal(err)
	}
	sst, _ := f.PodSandboxStatus(ctx, sb, false)
	cst, _ := f.ContainerStatus(ctx, id, false)
	if sst.Status.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY || cst.Status.State != runtimeapi.ContainerState_CONTAINER_EXITED || cst.Status.ExitCode != 137 {
		t.Fatalf("after kill: sandbox %v, container %v exit %d", sst.Status.State, cst.Status.State, cst.Status.ExitCode)
	}
	if _, err := f.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "d"}, Image: &runtimeapi.ImageSpec{Image: "busybox"}}, nil); err == nil {
		t.Fatal("created a container in a dead sandbox")
	}
}

func TestSandboxNetwork(t *testing.T) {
	t.Parallel()
	f := fake.New()
	ctx := context.Background()
	pod, _ := f.PodSandboxStatus(ctx, sandbox(t, f, "a", false), false)
	host, _ := f.PodSandboxStatus(ctx, sandbox(t, f, "b", true), false)
	if pod.Status.GetNetwork().GetIp() == "" {
		t.Error("pod-network sandbox has no IP")
	}
	if host.Status.GetNetwork().GetIp() != "" {
		t.Error("host-network sandbox has a pod IP")
	}
	if host.Status.Linux.Namespaces.Options.Network != runtimeapi.NamespaceMode_NODE {
		t.Error("namespace options not reported")
	}
	list, _ := f.ListPodSandbox(ctx, nil)
	if len(list) != 2 || list[0].CreatedAt < list[1].CreatedAt {
		t.Errorf("ListPodSandbox not newest first: %v", list)
	}
}

func TestLatencyOnInjectedClock(t *testing.T) {
	t.Parallel()
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	f := fake.New(fake.WithClock(clk))
	stop := f.SetLatency("PullImage", 30*time.Second)
	defer stop()
	done := make(chan error, 1)
	go func() {
		_, err := f.PullImage(context.Background(), &runtimeapi.ImageSpec{Image: "busybox"}, nil, nil)
		done <- err
	}()
	for !clk.HasWaiters() {
		// The pull registers its timer on the fake clock; wait for that
		// without sleeping on real time.
		runtimeGosched()
	}
	select {
	case err := <-done:
		t.Fatalf("pull finished before the clock moved: %v", err)
	default:
	}
	clk.Step(30 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestFailNextAndFail(t *testing.T) {
	t.Parallel()
	f := fake.New()
	ctx := context.Background()
	f.FailNext("Status", 2, status.Error(codes.Unavailable, "x"))
	for i, want := range []error{runtime.ErrUnavailable, runtime.ErrUnavailable, nil} {
		if _, err := f.Status(ctx, false); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Fatalf("call %d: %v, want %v", i, err, want)
		}
	}
	stop := f.Fail("Version", errors.New("broken"))
	if _, err := f.Version(ctx, ""); err == nil || err.Error() != "broken" {
		t.Fatalf("Version = %v", err)
	}
	stop()
	if _, err := f.Version(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if got := f.CallCount("Status"); got != 3 {
		t.Fatalf("CallCount(Status) = %d", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("unknown method accepted")
		}
	}()
	f.Fail("NoSuchMethod", nil)
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	f := fake.New(fake.WithImages("busybox"))
	ctx := context.Background()
	sb := sandbox(t, f, "p", false)
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := f.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "busybox"}}, nil)
			if err != nil {
				t.Error(err)
				return
			}
			f.StartContainer(ctx, id)
			f.ListContainers(ctx, nil)
			f.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nginx"}, nil, nil)
		}()
	}
	wg.Wait()
	cs, _ := f.ListContainers(ctx, &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	if len(cs) != 16 {
		t.Fatalf("%d running containers, want 16", len(cs))
	}
}

func TestReturnedValuesAreCopies(t *testing.T) {
	t.Parallel()
	f := fake.New(fake.WithImages("busybox"))
	ctx := context.Background()
	st, _ := f.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "busybox"}, false)
	st.Image.RepoTags[0] = "mutated"
	again, _ := f.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "busybox"}, false)
	if again.Image.RepoTags[0] == "mutated" {
		t.Fatal("caller mutation reached the fake's state")
	}
}

func TestTimestampsStrictlyIncrease(t *testing.T) {
	t.Parallel()
	clk := testingclock.NewFakeClock(time.Unix(0, 0)) // never moves
	f := fake.New(fake.WithClock(clk), fake.WithImages("busybox"))
	ctx := context.Background()
	sb := sandbox(t, f, "p", false)
	var last int64
	for i := 0; i < 5; i++ {
		id, _ := f.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "busybox"}}, nil)
		st, _ := f.ContainerStatus(ctx, id, false)
		if st.Status.CreatedAt <= last {
			t.Fatalf("CreatedAt %d not after %d", st.Status.CreatedAt, last)
		}
		last = st.Status.CreatedAt
	}
}
