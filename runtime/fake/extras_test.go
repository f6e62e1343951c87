package fake_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime"
	"github.com/podstart/podstart/runtime/fake"
)

func containerCfg(name string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: &runtimeapi.ImageSpec{Image: "busybox:1.35"},
		Labels: map[string]string{"io.kubernetes.container.name": name}, LogPath: name + "/0.log"}
}

// Seeded instances look as if CRI calls made them, and no call is
// recorded.
func TestSeed(t *testing.T) {
	t.Parallel()
	f := fake.New()
	created := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	sb := f.SeedSandbox(&runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Uid: "u"}, LogDirectory: "/logs/ns_p_u"},
		runtimeapi.PodSandboxState_SANDBOX_READY, created)
	id, err := f.SeedContainer(sb, containerCfg("app"), fake.Seeded{State: runtimeapi.ContainerState_CONTAINER_EXITED, CreatedAt: created,
		FinishedAt: created.Add(time.Minute), Exit: fake.Exit{Code: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.Calls()); n != 0 {
		t.Fatalf("%d calls recorded by seeding", n)
	}
	resp, err := f.ContainerStatus(context.Background(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	s := resp.Status
	if s.State != runtimeapi.ContainerState_CONTAINER_EXITED || s.ExitCode != 2 || s.Reason != "Error" || s.LogPath != "/logs/ns_p_u/app/0.log" ||
		s.CreatedAt != created.UnixNano() || s.FinishedAt != created.Add(time.Minute).UnixNano() || s.Labels["io.kubernetes.container.name"] != "app" {
		t.Fatalf("seeded status %+v", s)
	}
	if _, err := f.SeedContainer("nope", containerCfg("x"), fake.Seeded{}); err == nil {
		t.Fatal("seeded into a missing sandbox")
	}
	sbs, _ := f.ListPodSandbox(context.Background(), nil)
	if len(sbs) != 1 || sbs[0].CreatedAt != created.UnixNano() {
		t.Fatalf("sandboxes %v", sbs)
	}
}

// Image IDs as containerd reports them: the ID is the config digest, the
// repo digest names another (the manifest's), and ContainerStatus's image
// ref is the repo digest while ListContainers gives the ID.
func TestContainerdImageRefs(t *testing.T) {
	t.Parallel()
	f := fake.New(fake.WithRegistryImages("busybox:1.35"))
	ctx := context.Background()
	ref, err := f.PullImage(ctx, &runtimeapi.ImageSpec{Image: "busybox:1.35"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "busybox:1.35"}, false)
	img := st.Image
	if ref != img.Id || !strings.HasPrefix(ref, "sha256:") || len(img.RepoDigests) != 1 ||
		!strings.HasPrefix(img.RepoDigests[0], "docker.io/library/busybox@sha256:") || strings.HasSuffix(img.RepoDigests[0], img.Id) ||
		img.RepoTags[0] != "docker.io/library/busybox:1.35" {
		t.Fatalf("pull ref %q, image %+v", ref, img)
	}
	sb := sandbox(t, f, "p", false)
	id, err := f.CreateContainer(ctx, sb, containerCfg("app"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := f.ContainerStatus(ctx, id, false)
	list, _ := f.ListContainers(ctx, nil)
	if cs.Status.ImageRef != img.RepoDigests[0] || list[0].ImageRef != img.Id {
		t.Fatalf("status image ref %q, list %q", cs.Status.ImageRef, list[0].ImageRef)
	}
}

// A lost answer: the runtime made the container, the caller heard
// Unavailable; in process and over the wire.
func TestLoseAnswers(t *testing.T) {
	for _, wire := range []bool{false, true} {
		f := fake.New(fake.WithImages("busybox:1.35"))
		var rt runtime.Runtime = fake.Answering(f, fake.LoseAnswers("CreateContainer", 1))
		if wire {
			dir := t.TempDir()
			srv := fake.NewServer(rt)
			ep, err := srv.ServeUnix(filepath.Join(dir, "cri.sock"))
			if err != nil {
				t.Fatal(err)
			}
			c, err := runtime.Dial(context.Background(), ep)
			if err != nil {
				t.Fatal(err)
			}
			rt = c
			defer srv.Stop()
			defer c.Close()
		}
		ctx := context.Background()
		sb := sandbox(t, f, "p", false)
		id, err := rt.CreateContainer(ctx, sb, containerCfg("app"), nil)
		if !errors.Is(err, runtime.ErrUnavailable) || id != "" {
			t.Fatalf("wire %v: first create: %q, %v; want the answer lost", wire, id, err)
		}
		if list, _ := f.ListContainers(ctx, nil); len(list) != 1 {
			t.Fatalf("wire %v: the lost create made %d containers, want 1", wire, len(list))
		}
		if id, err = rt.CreateContainer(ctx, sb, containerCfg("app2"), nil); err != nil || id == "" {
			t.Fatalf("wire %v: second create: %q, %v", wire, id, err)
		}
		out, _, err := rt.ExecSync(ctx, id, []string{"true"}, 0)
		_ = out
		if err == nil {
			t.Fatalf("wire %v: exec in a created container succeeded", wire)
		}
	}
}

// Another process makes a container exit through the control socket.
func TestControlSocket(t *testing.T) {
	t.Parallel()
	f := fake.New(fake.WithImages("busybox:1.35"))
	path := filepath.Join(t.TempDir(), "control.sock")
	stop, err := f.ServeControl(path)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx := context.Background()
	sb := sandbox(t, f, "p", false)
	id, _ := f.CreateContainer(ctx, sb, containerCfg("app"), nil)
	if err := f.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := fake.ControlExitContainer(ctx, path, id, fake.Exit{Code: 137, Reason: "OOMKilled"}); err != nil {
		t.Fatal(err)
	}
	cs, _ := f.ContainerStatus(ctx, id, false)
	if cs.Status.State != runtimeapi.ContainerState_CONTAINER_EXITED || cs.Status.ExitCode != 137 || cs.Status.Reason != "OOMKilled" {
		t.Fatalf("after the control call: %+v", cs.Status)
	}
	if err := fake.ControlExitContainer(ctx, path, id, fake.Exit{Code: 1}); err == nil || !strings.Contains(err.Error(), "state") {
		t.Fatalf("exit of an exited container: %v", err)
	}
	if err := fake.ControlKillSandbox(ctx, path, sb); err != nil {
		t.Fatal(err)
	}
	st, _ := f.PodSandboxStatus(ctx, sb, false)
	if st.Status.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Fatalf("sandbox %s after kill", st.Status.State)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}
