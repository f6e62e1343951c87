package fake_test

import (
	"context"
	"slices"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime/fake"
)

// TestIndexedListsMatchScan: the lists answered from the fake's indexes
// (by pod UID label, by sandbox, by ID) are what filtering every instance
// gives, in the same order, after sandboxes are stopped and removed and
// containers removed.
func TestIndexedListsMatchScan(t *testing.T) {
	rt, uids, sandboxes := scaleNode(t, 12)
	ctx := context.Background()
	for _, sb := range sandboxes[:3] {
		if err := rt.StopPodSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.RemovePodSandbox(ctx, sandboxes[0]); err != nil {
		t.Fatal(err)
	}
	all, err := rt.ListContainers(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.RemoveContainer(ctx, all[len(all)-1].Id); err != nil {
		t.Fatal(err)
	}
	allSandboxes, err := rt.ListPodSandbox(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	all, err = rt.ListContainers(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(allSandboxes) != 11 || len(all) != 10 {
		t.Fatalf("%d sandboxes, %d containers; want 11, 10", len(allSandboxes), len(all))
	}
	ids := func(cs []*runtimeapi.Container) (out []string) {
		for _, c := range cs {
			out = append(out, c.Id)
		}
		return out
	}
	sbIDs := func(ss []*runtimeapi.PodSandbox) (out []string) {
		for _, s := range ss {
			out = append(out, s.Id)
		}
		return out
	}
	for i, uid := range uids {
		sel := map[string]string{"io.kubernetes.pod.uid": uid}
		gotSB, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		var wantSB []*runtimeapi.PodSandbox
		for _, s := range allSandboxes {
			if s.Labels["io.kubernetes.pod.uid"] == uid {
				wantSB = append(wantSB, s)
			}
		}
		if !slices.Equal(sbIDs(gotSB), sbIDs(wantSB)) {
			t.Errorf("pod %d sandboxes %v, want %v", i, sbIDs(gotSB), sbIDs(wantSB))
		}
		for _, f := range []*runtimeapi.ContainerFilter{
			{LabelSelector: sel},
			{LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid, "io.kubernetes.container.name": "app"}},
			{LabelSelector: sel, State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}},
			{PodSandboxId: sandboxes[i]},
		} {
			got, err := rt.ListContainers(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			var want []*runtimeapi.Container
			for _, c := range all {
				if (f.PodSandboxId == "" || c.PodSandboxId == f.PodSandboxId) && (f.State == nil || c.State == f.State.State) &&
					(f.LabelSelector == nil || c.Labels["io.kubernetes.pod.uid"] == uid) {
					want = append(want, c)
				}
			}
			if !slices.Equal(ids(got), ids(want)) {
				t.Errorf("pod %d, filter %v: %v, want %v", i, f, ids(got), ids(want))
			}
		}
	}
	// A stopped sandbox's container exited; the removed sandbox's are gone.
	if got, _ := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: sandboxes[1]}); len(got) != 1 || got[0].State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("stopped sandbox's containers: %v", got)
	}
	if got, _ := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": uids[0]}}); len(got) != 0 {
		t.Errorf("removed sandbox's containers still listed: %v", got)
	}
	stats, err := rt.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": uids[5]}})
	if err != nil || len(stats) != 1 || len(stats[0].Linux.Containers) != 1 || stats[0].Attributes.Id != sandboxes[5] {
		t.Errorf("stats of pod 5: %v %v", stats, err)
	}
}

// TestCallLogOff: WithCallLog(false) counts calls but keeps none.
func TestCallLogOff(t *testing.T) {
	rt := fake.New(fake.WithCallLog(false))
	ctx := context.Background()
	for range 3 {
		if _, err := rt.ListPodSandbox(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rt.Version(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
	if calls := rt.Calls(); len(calls) != 0 {
		t.Errorf("calls kept: %v", calls)
	}
	if n := rt.CallCount("ListPodSandbox"); n != 3 {
		t.Errorf("CallCount = %d, want 3", n)
	}
	if got := rt.CallCounts(); got["ListPodSandbox"] != 3 || got["Version"] != 1 || len(got) != 2 {
		t.Errorf("CallCounts = %v", got)
	}
	rt.ResetCalls()
	if n := rt.CallCount("ListPodSandbox"); n != 0 {
		t.Errorf("after ResetCalls: %d", n)
	}
	// The default keeps them.
	rt = fake.New()
	if _, err := rt.Version(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
	if calls := rt.Calls(); len(calls) != 1 || rt.CallCount("Version") != 1 {
		t.Errorf("default: %v", calls)
	}
}
