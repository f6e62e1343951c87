package fake_test

import (
	"context"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podstart/podstart/runtime/fake"
)

// forever is the answer of a command that keeps running.
const forever = time.Duration(-1)

func TestCommandStart(t *testing.T) {
	t.Parallel()
	sh := func(script string) []string { return []string{"sh", "-c", script} }
	cases := []struct {
		name    string
		command []string
		args    []string
		code    int32
		after   time.Duration // forever: nil, keeps running
	}{
		// The image's entrypoint, and commands the fake does not know.
		{name: "no command", after: forever},
		{name: "args alone run the image's entrypoint", args: []string{"true"}, after: forever},
		{name: "unknown command", command: []string{"nginx", "-g", "daemon off;"}, after: forever},
		{name: "empty argv[0]", command: []string{""}, after: forever},
		{name: "a directory", command: []string{"/bin/"}, after: forever},

		{name: "true", command: []string{"true"}},
		{name: "/bin/true with args", command: []string{"/bin/true"}, args: []string{"--ignored"}},
		{name: "false", command: []string{"false"}, code: 1},
		{name: "/usr/bin/false", command: []string{"/usr/bin/false"}, code: 1},

		{name: "sleep 5", command: []string{"sleep", "5"}, after: 5 * time.Second},
		{name: "sleep in args", command: []string{"sleep"}, args: []string{"5"}, after: 5 * time.Second},
		{name: "/bin/sleep 0", command: []string{"/bin/sleep", "0"}},
		{name: "fractional", command: []string{"sleep", "0.5"}, after: 500 * time.Millisecond},
		{name: "leading dot", command: []string{"sleep", ".25"}, after: 250 * time.Millisecond},
		{name: "suffix s", command: []string{"sleep", "2s"}, after: 2 * time.Second},
		{name: "suffix m", command: []string{"sleep", "1.5m"}, after: 90 * time.Second},
		{name: "suffix h", command: []string{"sleep", "2h"}, after: 2 * time.Hour},
		{name: "suffix d", command: []string{"sleep", "1d"}, after: 24 * time.Hour},
		{name: "exponent", command: []string{"sleep", "1e2"}, after: 100 * time.Second},
		{name: "plus sign", command: []string{"sleep", "+3"}, after: 3 * time.Second},
		{name: "operands add up", command: []string{"sleep", "1m", "30"}, after: 90 * time.Second},
		{name: "end of options", command: []string{"sleep", "--", "1"}, after: time.Second},
		{name: "below a nanosecond", command: []string{"sleep", "1e-12"}},
		{name: "underflow", command: []string{"sleep", "1e-400"}},
		{name: "infinity", command: []string{"sleep", "infinity"}, after: forever},
		{name: "inf", command: []string{"sleep", "inf"}, after: forever},
		{name: "Infinity in hours", command: []string{"sleep", "Infinityh"}, after: forever},
		{name: "huge", command: []string{"sleep", "1e300"}, after: forever},
		{name: "overflow", command: []string{"sleep", "1e400"}, after: forever},
		{name: "past a Duration", command: []string{"sleep", "9300000000"}, after: forever},
		{name: "huge sum", command: []string{"sleep", "5000000000", "5000000000"}, after: forever},
		{name: "huge in days", command: []string{"sleep", "200000d"}, after: forever},
		{name: "sleep without operand", command: []string{"sleep"}, code: 1},
		{name: "sleep -- alone", command: []string{"sleep", "--"}, code: 1},
		{name: "negative", command: []string{"sleep", "-1"}, code: 1},
		{name: "minus zero", command: []string{"sleep", "-0"}, code: 1},
		{name: "NaN", command: []string{"sleep", "NaN"}, code: 1},
		{name: "nan in seconds", command: []string{"sleep", "nans"}, code: 1},
		{name: "not a number", command: []string{"sleep", "soon"}, code: 1},
		{name: "empty operand", command: []string{"sleep", ""}, code: 1},
		{name: "suffix alone", command: []string{"sleep", "s"}, code: 1},
		{name: "unknown suffix", command: []string{"sleep", "5w"}, code: 1},
		{name: "one bad operand", command: []string{"sleep", "5", "x"}, code: 1},

		{name: "sh -c exit 3", command: sh("exit 3"), code: 3},
		{name: "/bin/sh -c exit 0", command: []string{"/bin/sh", "-c", "exit 0"}},
		{name: "script in args", command: []string{"/bin/sh"}, args: []string{"-c", "exit 7"}, code: 7},
		{name: "bash", command: []string{"/bin/bash", "-c", "exit 2"}, code: 2},
		{name: "blanks around", command: sh("  exit\t4 "), code: 4},
		{name: "exit alone", command: sh("exit")},
		{name: "exit 255", command: sh("exit 255"), code: 255},
		{name: "exit 256 wraps", command: sh("exit 256")},
		{name: "exit 300 wraps", command: sh("exit 300"), code: 44},
		{name: "$0 and $1 after the script", command: sh("exit 5"), args: []string{"name", "arg"}, code: 5},
		{name: "empty script", command: sh("")},
		{name: "true in sh", command: sh("true")},
		{name: "false in sh", command: sh("false"), code: 1},
		{name: "sleep in sh", command: sh("sleep 10"), after: 10 * time.Second},
		{name: "sleep infinity in sh", command: sh("sleep infinity"), after: forever},
		{name: "sh in sh", command: sh("sh -c true")},
		{name: "exit huge", command: sh("exit 99999999999999999999999"), after: forever},
		{name: "exit negative", command: sh("exit -1"), after: forever},
		{name: "exit word", command: sh("exit x"), after: forever},
		{name: "exit two operands", command: sh("exit 1 2"), after: forever},
		{name: "sh without -c", command: []string{"sh", "script.sh"}, after: forever},
		{name: "sh -c without script", command: []string{"sh", "-c"}, after: forever},
		{name: "sh -ec", command: []string{"sh", "-ec", "exit 3"}, after: forever},
		{name: "list", command: sh("exit 3; exit 4"), after: forever},
		{name: "and list", command: sh("true && exit 3"), after: forever},
		{name: "two lines", command: sh("true\nfalse"), after: forever},
		{name: "expansion", command: sh("exit $CODE"), after: forever},
		{name: "command substitution", command: sh("sleep $(cat t)"), after: forever},
		{name: "quoted", command: sh("exit '3'"), after: forever},
		{name: "comment", command: sh("sleep 5 # then"), after: forever},
		{name: "background", command: sh("sleep 3600 & wait"), after: forever},
		{name: "trap", command: sh("trap 'exit 0' TERM; sleep 3600 & wait"), after: forever},
		{name: "echo", command: sh("echo hi"), after: forever},
		{name: "assignment first", command: sh("A=1 true"), after: forever},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := fake.CommandStart(&runtimeapi.ContainerConfig{Command: c.command, Args: c.args})
			if c.after == forever {
				if got != nil {
					t.Fatalf("%q %q: %+v, want running", c.command, c.args, *got)
				}
				return
			}
			if got == nil {
				t.Fatalf("%q %q: running, want exit %d after %v", c.command, c.args, c.code, c.after)
			}
			if got.Code != c.code || got.After != c.after || got.Reason != "" || got.Message != "" {
				t.Errorf("%q %q: %+v, want exit %d after %v", c.command, c.args, *got, c.code, c.after)
			}
		})
	}
}

func FuzzCommandStart(f *testing.F) {
	for _, s := range []string{"exit 3", "sleep 0.5", "sleep infinity", "true", "exit 99999999999999999999", "sleep -1"} {
		f.Add("sh", "-c", s)
		f.Add("sleep", s, "1m")
	}
	f.Fuzz(func(t *testing.T, a, b, c string) {
		e := fake.CommandStart(&runtimeapi.ContainerConfig{Command: []string{a, b, c}})
		if e != nil && (e.After < 0 || e.Code < 0 || e.Code > 255) {
			t.Errorf("%q %q %q: %+v", a, b, c, *e)
		}
	})
}

// cmdConfig is a container config running argv.
func cmdConfig(name string, argv ...string) *runtimeapi.ContainerConfig {
	c := containerCfg(name)
	c.Command = argv
	return c
}

// startCmd creates and starts a container running argv in sb.
func startCmd(t *testing.T, f *fake.Runtime, sb, name string, argv ...string) string {
	t.Helper()
	ctx := context.Background()
	id, err := f.CreateContainer(ctx, sb, cmdConfig(name, argv...), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	return id
}

func cstatus(t *testing.T, f *fake.Runtime, id string) *runtimeapi.ContainerStatus {
	t.Helper()
	st, err := f.ContainerStatus(context.Background(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	return st.Status
}

// Without a StartFunc, a container does what its command does; a sleep
// ends when the fake clock passes its end, seen by the next call and
// announced by an event.
func TestCommandsRun(t *testing.T) {
	t.Parallel()
	start := time.Unix(1000, 0)
	clk := testingclock.NewFakeClock(start)
	f := fake.New(fake.WithClock(clk), fake.WithImages("busybox:1.35"))
	sb := sandbox(t, f, "p", false)

	cases := []struct {
		argv   []string
		code   int32
		reason string
	}{
		{[]string{"true"}, 0, "Completed"},
		{[]string{"false"}, 1, "Error"},
		{[]string{"sh", "-c", "exit 3"}, 3, "Error"},
		{[]string{"/bin/sh", "-c", "exit 0"}, 0, "Completed"},
		{[]string{"sleep"}, 1, "Error"},
	}
	for _, c := range cases {
		id := startCmd(t, f, sb, "c", c.argv...)
		if s := cstatus(t, f, id); s.State != runtimeapi.ContainerState_CONTAINER_EXITED || s.ExitCode != c.code || s.Reason != c.reason || s.FinishedAt != s.StartedAt+1 {
			t.Errorf("%q: %v %d %q, finished %d started %d; want exited %d %q at once", c.argv, s.State, s.ExitCode, s.Reason, s.FinishedAt, s.StartedAt, c.code, c.reason)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu      sync.Mutex
		stopped []string
		wg      sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = f.StreamContainerEvents(ctx, func(ev *runtimeapi.ContainerEventResponse) {
			if ev.ContainerEventType == runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT {
				mu.Lock()
				stopped = append(stopped, ev.ContainerId)
				mu.Unlock()
			}
		})
	}()
	defer func() { cancel(); wg.Wait() }()
	for f.EventWatchers() == 0 {
		runtimeGosched()
	}

	half := startCmd(t, f, sb, "half", "sleep", "0.5")
	five := startCmd(t, f, sb, "five", "sh", "-c", "sleep 5s")
	ever := startCmd(t, f, sb, "ever", "sleep", "infinity")
	app := startCmd(t, f, sb, "app", "nginx")
	running := func(ids ...string) {
		t.Helper()
		for _, id := range ids {
			if s := cstatus(t, f, id); s.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
				t.Errorf("%s: %v, want running at %v", s.Metadata.Name, s.State, clk.Since(start))
			}
		}
	}
	exited := func(id string, after time.Duration) {
		t.Helper()
		s := cstatus(t, f, id)
		if s.State != runtimeapi.ContainerState_CONTAINER_EXITED || s.ExitCode != 0 || s.Reason != "Completed" {
			t.Errorf("%s: %v %d %q, want exited 0 Completed", s.Metadata.Name, s.State, s.ExitCode, s.Reason)
		}
		if s.FinishedAt != start.Add(after).UnixNano() {
			t.Errorf("%s: finished at %v, want %v", s.Metadata.Name, time.Unix(0, s.FinishedAt).Sub(start), after)
		}
	}
	running(half, five, ever, app)
	if !clk.HasWaiters() {
		t.Fatal("no timer on the fake clock for the sleeps")
	}
	clk.Step(499 * time.Millisecond)
	running(half, five, ever, app)
	clk.Step(time.Millisecond)
	exited(half, 500*time.Millisecond) // seen at once, though the timer's goroutine may not have run
	running(five, ever, app)
	clk.Step(10 * time.Second) // past the end: it finished at its end
	exited(five, 5*time.Second)
	clk.Step(1000 * time.Hour)
	running(ever, app)
	if clk.HasWaiters() {
		t.Error("a timer is left on the fake clock once the sleeps ended")
	}
	// Each exit was announced once, in order.
	for {
		mu.Lock()
		n := len(stopped)
		mu.Unlock()
		if n >= 2 {
			break
		}
		runtimeGosched()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(stopped) != 2 || stopped[0] != half || stopped[1] != five {
		t.Errorf("stopped events %q, want half's then five's", stopped)
	}
}

// A sleeping container stopped, removed or killed with its sandbox leaves
// no timer behind and does not exit again.
func TestSleepEndsEarly(t *testing.T) {
	t.Parallel()
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	f := fake.New(fake.WithClock(clk), fake.WithImages("busybox:1.35"))
	ctx := context.Background()
	sb := sandbox(t, f, "p", false)
	stopped := startCmd(t, f, sb, "stopped", "sleep", "10")
	removed := startCmd(t, f, sb, "removed", "sleep", "10")
	exited := startCmd(t, f, sb, "exited", "sleep", "10")
	killed := startCmd(t, f, sb, "killed", "sleep", "10")
	if err := f.StopContainer(ctx, stopped, 30); err != nil {
		t.Fatal(err)
	}
	if err := f.RemoveContainer(ctx, removed); err != nil {
		t.Fatal(err)
	}
	if err := f.ExitContainer(exited, fake.Exit{Code: 2}); err != nil {
		t.Fatal(err)
	}
	clk.Step(time.Second)
	if err := f.KillSandbox(sb); err != nil {
		t.Fatal(err)
	}
	if clk.HasWaiters() {
		t.Error("timers left on the fake clock")
	}
	clk.Step(time.Minute)
	for id, want := range map[string]int32{stopped: 143, exited: 2, killed: 137} {
		if s := cstatus(t, f, id); s.State != runtimeapi.ContainerState_CONTAINER_EXITED || s.ExitCode != want {
			t.Errorf("%s: %v %d, want exited %d", s.Metadata.Name, s.State, s.ExitCode, want)
		}
	}
	if list, _ := f.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: removed}); len(list) != 0 {
		t.Errorf("the removed container is back: %v", list)
	}
}

// A StartFunc decides alone: a command it keeps running runs; it may ask
// CommandStart for the others, and give a delayed exit itself.
func TestStartFuncOverridesCommand(t *testing.T) {
	t.Parallel()
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	f := fake.New(fake.WithClock(clk), fake.WithImages("busybox:1.35"), fake.WithStartFunc(func(c *runtimeapi.ContainerConfig) *fake.Exit {
		switch c.Metadata.Name {
		case "kept":
			return nil
		case "crash":
			return &fake.Exit{Code: 139, Reason: "Error", Message: "segfault", After: 3 * time.Second}
		}
		return fake.CommandStart(c)
	}))
	sb := sandbox(t, f, "p", false)
	kept := startCmd(t, f, sb, "kept", "true")
	crash := startCmd(t, f, sb, "crash", "sleep", "infinity")
	other := startCmd(t, f, sb, "other", "sh", "-c", "exit 9")
	if s := cstatus(t, f, kept); s.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("kept: %v, want running", s.State)
	}
	if s := cstatus(t, f, other); s.State != runtimeapi.ContainerState_CONTAINER_EXITED || s.ExitCode != 9 {
		t.Errorf("other: %v %d, want exited 9", s.State, s.ExitCode)
	}
	clk.Step(3 * time.Second)
	if s := cstatus(t, f, crash); s.State != runtimeapi.ContainerState_CONTAINER_EXITED || s.ExitCode != 139 || s.Message != "segfault" {
		t.Errorf("crash: %v %d %q, want exited 139 segfault", s.State, s.ExitCode, s.Message)
	}
}

// noAfterFunc is a clock without AfterFunc.
type noAfterFunc struct{ clock.Clock }

// On a clock without AfterFunc, a sleep ends when a call reads the
// container after its end.
func TestSleepOnClockWithoutAfterFunc(t *testing.T) {
	t.Parallel()
	fc := testingclock.NewFakeClock(time.Unix(0, 0))
	var clk clock.Clock = noAfterFunc{fc}
	if _, ok := clk.(clock.WithDelayedExecution); ok {
		t.Fatal("the test clock has AfterFunc")
	}
	f := fake.New(fake.WithClock(clk), fake.WithImages("busybox:1.35"))
	sb := sandbox(t, f, "p", false)
	id := startCmd(t, f, sb, "s", "sleep", "1")
	fc.Step(999 * time.Millisecond)
	if s := cstatus(t, f, id); s.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("%v before its end", s.State)
	}
	fc.Step(time.Millisecond)
	list, err := f.ListContainers(context.Background(), nil)
	if err != nil || len(list) != 1 || list[0].State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatalf("ListContainers after the end: %v, %v", list, err)
	}
}
