package fake_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime/fake"
)

// TestSeedLooksCreated: a seeded sandbox and container read back exactly
// as ones made by the CRI calls from the same configs, but for IDs, times
// and the pod IP; seeding records no call and sends no event.
func TestSeedLooksCreated(t *testing.T) {
	t.Parallel()
	f := fake.New(fake.WithImages("busybox:1.35"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := make(chan *runtimeapi.ContainerEventResponse, 16)
	done := make(chan error, 1)
	go func() {
		done <- f.StreamContainerEvents(ctx, func(ev *runtimeapi.ContainerEventResponse) { events <- ev })
	}()
	for f.EventWatchers() == 0 {
		runtimeGosched()
	}

	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "shop", Uid: "u1", Attempt: 2},
		Labels:       map[string]string{"io.kubernetes.pod.name": "web"},
		Annotations:  map[string]string{"kubernetes.io/config.seen": "x"},
		LogDirectory: "/var/log/pods/shop_web_u1",
	}
	st, _ := f.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "busybox:1.35"}, false)
	cCfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: "app", Attempt: 3},
		Image:       &runtimeapi.ImageSpec{Image: st.Image.Id, UserSpecifiedImage: "busybox:1.35"},
		Labels:      map[string]string{"io.kubernetes.container.name": "app"},
		Annotations: map[string]string{"io.kubernetes.container.hash": "abc"},
		Mounts:      []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/srv/data"}},
		LogPath:     "app/3.log",
	}

	// The node after a restart: seeded, no call recorded, no event.
	seededSb := f.SeedSandbox(sbCfg, runtimeapi.PodSandboxState_SANDBOX_READY, time.Time{})
	seeded, err := f.SeedContainer(seededSb, cCfg, fake.Seeded{State: runtimeapi.ContainerState_CONTAINER_EXITED, Exit: fake.Exit{Code: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if calls := f.Calls(); len(calls) != 1 { // the ImageStatus above
		t.Fatalf("calls after seeding: %v", calls)
	}

	// The same through CRI.
	madeSb, err := f.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	made, err := f.CreateContainer(ctx, madeSb, cCfg, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-events; ev.ContainerId != made || ev.ContainerEventType != runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT {
		t.Fatalf("first event %v; seeding sent one", ev)
	}
	if err := f.StartContainer(ctx, made); err != nil {
		t.Fatal(err)
	}
	if err := f.ExitContainer(made, fake.Exit{Code: 1}); err != nil {
		t.Fatal(err)
	}

	sbStatus := func(id string) *runtimeapi.PodSandboxStatus {
		resp, err := f.PodSandboxStatus(ctx, id, false)
		if err != nil {
			t.Fatal(err)
		}
		s := resp.Status
		if s.Id != id || s.CreatedAt == 0 || s.GetNetwork().GetIp() == "" {
			t.Fatalf("sandbox status %v", s)
		}
		s.Id, s.CreatedAt, s.Network.Ip = "", 0, ""
		return s
	}
	if a, b := sbStatus(seededSb), sbStatus(madeSb); !proto.Equal(a, b) {
		t.Errorf("sandbox status:\nseeded %v\nmade   %v", a, b)
	}
	cStatus := func(id string) *runtimeapi.ContainerStatus {
		resp, err := f.ContainerStatus(ctx, id, false)
		if err != nil {
			t.Fatal(err)
		}
		s := resp.Status
		if s.Id != id || s.CreatedAt == 0 || s.StartedAt < s.CreatedAt || s.FinishedAt < s.StartedAt {
			t.Fatalf("container status %v", s)
		}
		s.Id, s.CreatedAt, s.StartedAt, s.FinishedAt = "", 0, 0, 0
		return s
	}
	if a, b := cStatus(seeded), cStatus(made); !proto.Equal(a, b) {
		t.Errorf("container status:\nseeded %v\nmade   %v", a, b)
	}
	list, _ := f.ListContainers(ctx, nil)
	if len(list) != 2 {
		t.Fatalf("listed %v", list)
	}
	for _, c := range list {
		c.Id, c.PodSandboxId, c.CreatedAt = "", "", 0
	}
	if !proto.Equal(list[0], list[1]) {
		t.Errorf("listed:\n%v\n%v", list[0], list[1])
	}
	cancel()
	<-done
}

// TestSeedTimes: seeded times are reported as given, and defaults follow
// the state.
func TestSeedTimes(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name                      string
		seed                      fake.Seeded
		wantStarted, wantFinished time.Time
		wantReason                string
	}{
		{name: "created", seed: fake.Seeded{CreatedAt: created, StartedAt: created.Add(time.Second)}},
		{name: "running", seed: fake.Seeded{State: runtimeapi.ContainerState_CONTAINER_RUNNING, CreatedAt: created}, wantStarted: created},
		{name: "exited", wantStarted: created.Add(time.Second), wantFinished: created.Add(time.Minute), wantReason: "Completed",
			seed: fake.Seeded{State: runtimeapi.ContainerState_CONTAINER_EXITED, CreatedAt: created, StartedAt: created.Add(time.Second), FinishedAt: created.Add(time.Minute)}},
		{name: "oom", wantStarted: created, wantFinished: created.Add(time.Minute), wantReason: "OOMKilled",
			seed: fake.Seeded{State: runtimeapi.ContainerState_CONTAINER_EXITED, CreatedAt: created, FinishedAt: created.Add(time.Minute), Exit: fake.Exit{Code: 137, Reason: "OOMKilled"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fake.New()
			sb := f.SeedSandbox(&runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p"}}, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, created)
			id, err := f.SeedContainer(sb, containerCfg("app"), tt.seed)
			if err != nil {
				t.Fatal(err)
			}
			resp, _ := f.ContainerStatus(context.Background(), id, false)
			s := resp.Status
			unix := func(t time.Time) int64 {
				if t.IsZero() {
					return 0
				}
				return t.UnixNano()
			}
			if s.CreatedAt != created.UnixNano() || s.StartedAt != unix(tt.wantStarted) || s.FinishedAt != unix(tt.wantFinished) || s.Reason != tt.wantReason {
				t.Errorf("status %v", s)
			}
		})
	}
}

func TestSeedRefusesWhatCRIRefuses(t *testing.T) {
	t.Parallel()
	f := fake.New()
	sb := f.SeedSandbox(&runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p"}}, runtimeapi.PodSandboxState_SANDBOX_READY, time.Time{})
	if _, err := f.SeedContainer(sb, &runtimeapi.ContainerConfig{Image: &runtimeapi.ImageSpec{Image: "busybox"}}, fake.Seeded{}); err == nil {
		t.Error("seeded a container without metadata")
	}
	if _, err := f.SeedContainer("absent", containerCfg("app"), fake.Seeded{}); err == nil {
		t.Error("seeded a container in an absent sandbox")
	}
	defer func() {
		if recover() == nil {
			t.Error("seeded a sandbox without metadata")
		}
	}()
	f.SeedSandbox(&runtimeapi.PodSandboxConfig{}, runtimeapi.PodSandboxState_SANDBOX_READY, time.Time{})
}
