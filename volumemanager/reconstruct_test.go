package volumemanager

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// TestRestartReconstruction: an agent restarted over published volumes
// publishes the wanted ones again at the same targets only, keeps the
// others until the sources are ready, then unpublishes and unstages them;
// nothing is left.
func TestRestartReconstruction(t *testing.T) {
	e := newEnv(t)
	ca, pva := boundClaim("a-data", "pv-a", "vol-a")
	cb, pvb := boundClaim("b-data", "pv-b", "vol-b")
	e.objs.Set(ca, pva, cb, pvb, csiDriver(driver, false, storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral))
	inline := corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: driver}}}
	a := newPod("a", "uid-a", claimVolume("data", "a-data"))
	b := newPod("b", "uid-b", claimVolume("data", "b-data"), inline)
	ctx := context.Background()
	for _, p := range []*corev1.Pod{a, b} {
		if err := e.m.AddPod(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	e.reconcile(t)
	for _, p := range []*corev1.Pod{a, b} {
		if err := e.m.WaitForAttachAndMount(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	_, publishedBefore := e.node.state()
	if len(publishedBefore) != 3 {
		t.Fatalf("published %q, want 3 targets", publishedBefore)
	}
	targetA := TargetPath(e.root, "uid-a", "pv-a")

	// The agent restarts; only pod a is still wanted, and it is added
	// before the sources are ready.
	e.node.calls = nil
	e.m = e.restart(t)
	if err := e.m.AddPod(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Reconcile(ctx); err != nil {
		t.Fatalf("first pass: %v", err)
	}
	if !e.m.HasPossiblyMountedVolumes("uid-b") {
		t.Error("pod b's reconstructed volumes are not possibly mounted")
	}
	if got, want := e.node.callsOf("Publish"), []string{"vol-a " + targetA}; !slices.Equal(got, want) {
		t.Errorf("Publish after restart = %q, want %q (the same target, once)", got, want)
	}
	if got := e.node.callsOf("Unpublish"); len(got) != 0 {
		t.Errorf("unpublished before the sources were ready: %q", got)
	}
	if err := e.m.WaitForAttachAndMount(ctx, a); err != nil {
		t.Fatal(err)
	}
	e.m.SourcesReady()
	e.reconcile(t)
	unpub := e.node.callsOf("Unpublish")
	slices.Sort(unpub)
	wantUnpub := []string{
		InlineVolumeHandle("uid-b", "cache") + " " + TargetPath(e.root, "uid-b", "cache"),
		"vol-b " + TargetPath(e.root, "uid-b", "pv-b"),
	}
	if !slices.Equal(unpub, wantUnpub) {
		t.Errorf("Unpublish = %q, want %q", unpub, wantUnpub)
	}
	if got, want := e.node.callsOf("Unstage"), []string{"vol-b " + StagingPath(e.root, driver, "vol-b")}; !slices.Equal(got, want) {
		t.Errorf("Unstage = %q, want %q", got, want)
	}
	if e.m.HasPossiblyMountedVolumes("uid-b") {
		t.Error("pod b still has possibly mounted volumes after their unpublish")
	}
	e.reconcile(t) // a steady pass does nothing
	if got := len(e.node.callsOf("Publish")); got != 1 {
		t.Errorf("published %d times after restart, want once", got)
	}
	staged, published := e.node.state()
	if !slices.Equal(published, []string{targetA}) || !slices.Equal(staged, []string{StagingPath(e.root, driver, "vol-a")}) {
		t.Errorf("driver state: staged %q, published %q", staged, published)
	}
	if err := e.m.WaitForUnmountAfter(ctx, t, e, a); err != nil {
		t.Fatal(err)
	}
	if got := leftovers(t, e.root); len(got) != 0 {
		t.Errorf("left on disk: %q", got)
	}
	if staged, published := e.node.state(); len(staged)+len(published) != 0 {
		t.Errorf("left in the driver: staged %q, published %q", staged, published)
	}
}

// TestKilledBetweenStageAndPublish: the staging directory alone tells a
// restarted agent to unstage a volume no pod wants any more; a pod still
// wanting it gets it staged (idempotently) and published once.
func TestKilledBetweenStageAndPublish(t *testing.T) {
	for _, wanted := range []bool{false, true} {
		t.Run(map[bool]string{false: "pod gone", true: "pod still wanted"}[wanted], func(t *testing.T) {
			e := newEnv(t)
			claim, pv := boundClaim("data", "pv-data", "vol-1")
			e.objs.Set(claim, pv, csiDriver(driver, false))
			pod := newPod("web", "uid-web", claimVolume("data", "data"))
			ctx := context.Background()
			e.node.failNext("Publish", errors.New("killed"))
			if err := e.m.AddPod(ctx, pod); err != nil {
				t.Fatal(err)
			}
			e.reconcile(t)
			// Killed before SetUp began: nothing of the pod's volume on disk.
			if err := os.RemoveAll(filepath.Dir(TargetPath(e.root, "uid-web", "pv-data"))); err != nil {
				t.Fatal(err)
			}
			e.node.calls = nil
			e.m = e.restart(t)
			if wanted {
				if err := e.m.AddPod(ctx, pod); err != nil {
					t.Fatal(err)
				}
			}
			e.m.SourcesReady()
			e.reconcile(t)
			if wanted {
				if err := e.m.WaitForAttachAndMount(ctx, pod); err != nil {
					t.Fatal(err)
				}
				if got := len(e.node.callsOf("Publish")); got != 1 {
					t.Errorf("published %d times", got)
				}
				if err := e.m.WaitForUnmountAfter(ctx, t, e, pod); err != nil {
					t.Fatal(err)
				}
			}
			if got, want := e.node.callsOf("Unstage"), []string{"vol-1 " + StagingPath(e.root, driver, "vol-1")}; !slices.Equal(got, want) {
				t.Errorf("Unstage = %q, want %q", got, want)
			}
			if got := leftovers(t, e.root); len(got) != 0 {
				t.Errorf("left on disk: %q", got)
			}
		})
	}
}

// TestReconstructionRefusesHostileFiles: vol_data.json files that do not
// match their paths are reported and left alone; the driver is not
// called for them.
func TestReconstructionRefusesHostileFiles(t *testing.T) {
	e := newEnv(t)
	write := func(dir string, data string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, volDataFileName), []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	podVols := filepath.Join(e.root, "pods", "uid-x", "volumes", podPluginDir)
	write(filepath.Join(podVols, "pv-1"), `{"specVolID":"../../../etc","volumeHandle":"h","driverName":"`+driver+`"}`)
	write(filepath.Join(podVols, "pv-2"), `{"specVolID":"pv-2","volumeHandle":"h","driverName":"../../x"}`)
	write(filepath.Join(podVols, "pv-3"), `not json`)
	write(filepath.Join(podVols, "inl"), `{"specVolID":"inl","volumeHandle":"csi-forged","driverName":"`+driver+`","volumeLifecycleMode":"Ephemeral"}`)
	write(filepath.Join(e.root, "plugins", PluginName, driver, "0000"), `{"volumeHandle":"h","driverName":"`+driver+`"}`)
	e.m.SourcesReady()
	err := e.m.Reconcile(context.Background())
	if err == nil {
		t.Fatal("no error for hostile vol_data.json files")
	}
	for _, want := range []string{"pv-1", "pv-2", "pv-3", "inl", "0000"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
	if !errors.Is(err, ErrInvalidName) {
		t.Errorf("error is not ErrInvalidName: %v", err)
	}
	if len(e.node.calls) != 0 {
		t.Errorf("driver called: %q", e.node.calls)
	}
	if got := leftovers(t, e.root); len(got) != 5 {
		t.Errorf("files removed: %q left", got)
	}
}

// TestRestartReadsPublishContextAgain: after a restart an attached volume
// is staged and published again with its VolumeAttachment's metadata.
func TestRestartReadsPublishContextAgain(t *testing.T) {
	e := newEnv(t)
	claim, pv := boundClaim("data", "pv-data", "vol-1")
	va := &storagev1.VolumeAttachment{}
	va.Name = AttachmentName("vol-1", driver, node)
	va.Status = storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"lun": "3"}}
	e.objs.Set(claim, pv, va, csiDriver(driver, true))
	pod := newPod("db", "uid-db", claimVolume("data", "data"))
	ctx := context.Background()
	if err := e.m.AddPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	e.m.MarkVolumesReportedInUse(e.m.VolumesInUse())
	e.reconcile(t)
	if err := e.m.WaitForAttachAndMount(ctx, pod); err != nil {
		t.Fatal(err)
	}
	e.m = e.restart(t)
	if err := e.m.AddPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	e.reconcile(t)
	if err := e.m.WaitForAttachAndMount(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if len(e.node.stages) != 2 || len(e.node.publishes) != 2 {
		t.Fatalf("stages %d, publishes %d; want 2 each", len(e.node.stages), len(e.node.publishes))
	}
	if got := e.node.stages[1].PublishContext["lun"]; got != "3" {
		t.Errorf("stage after restart: publish context %v", e.node.stages[1].PublishContext)
	}
	if got := e.node.publishes[1].PublishContext["lun"]; got != "3" {
		t.Errorf("publish after restart: publish context %v", e.node.publishes[1].PublishContext)
	}
	if got := e.m.VolumesInUse(); !slices.Equal(got, []corev1.UniqueVolumeName{UniqueVolumeName(driver, "vol-1")}) {
		t.Errorf("VolumesInUse after restart = %v", got)
	}
}
