package apiobjects

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	fakemount "github.com/podstart/podstart/mounts/fake"
)

// A running pod's volumes set up again (kubelet's remount at each sync)
// follow their objects and the pod: a changed Secret's new content, an
// optional Secret created after the pod started, a changed ConfigMap in
// a projected volume, a key removed, and new labels in a downward API
// file.
func TestRemountVolumesFollowObjectsAndPod(t *testing.T) {
	root := t.TempDir()
	src := newTestSource(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"k": []byte("v1"), "gone": []byte("x")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}, Data: map[string]string{"a": "1"}},
	)
	pod := volumePod(
		secretVolume("sec", "s", false),
		secretVolume("opt", "later", true),
		corev1.Volume{Name: "labels", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{DefaultMode: ptr.To[int32](0o644),
			Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}}}}}},
		corev1.Volume{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644),
			Sources: []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}}}}},
		corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	)
	v := NewVolumes(src, root, WithMounter(fakemount.New()))
	vols, err := v.Volumes(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) string { return fmt.Sprint(readVolume(t, vols[name].HostPath)) }
	if got := read("sec") + read("opt") + read("labels") + read("proj"); got != `map[gone:x k:v1]map[]map[labels:app="web"]map[a:1]` {
		t.Fatalf("first setup: %s", got)
	}

	// Nothing changed: nothing is rewritten (..data still names the same
	// timestamped directory).
	data := func() string {
		l, err := os.Readlink(filepath.Join(vols["sec"].HostPath, "..data"))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	first := data()
	if _, err := v.RemountVolumes(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if data() != first {
		t.Fatal("an unchanged payload was written again")
	}

	src.put(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"k": []byte("v2")}})
	src.put(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "later"}, Data: map[string][]byte{"new": []byte("here")}})
	src.put(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}, Data: map[string]string{"a": "2", "b": "3"}})
	pod = pod.DeepCopy()
	pod.Labels["tier"] = "front"
	at, err := v.RemountVolumes(context.Background(), pod)
	if err != nil || !at.IsZero() {
		t.Fatalf("RemountVolumes: %v, %v", at, err)
	}
	if data() == first {
		t.Fatal("a changed payload did not swap ..data")
	}
	if got := read("sec") + read("opt") + read("labels") + read("proj"); got != `map[k:v2]map[new:here]map[labels:app="web"
tier="front"]map[a:2 b:3]` {
		t.Fatalf("after the remount: %s", got)
	}

	// An optional Secret deleted: its volume is empty again. A required
	// one deleted: the remount fails (kubelet's message and event), and
	// the volume keeps what it had.
	src.mu.Lock()
	delete(src.secrets, "ns/later")
	delete(src.secrets, "ns/s")
	src.mu.Unlock()
	_, err = v.RemountVolumes(context.Background(), pod)
	if err == nil || err.Error() != `MountVolume.SetUp failed for volume "sec" : secret "s" not found` {
		t.Fatalf("RemountVolumes error %v", err)
	}
	if got := read("sec") + read("opt"); got != `map[k:v2]map[]` {
		t.Fatalf("after the deletions: %s", got)
	}
}

// A pod's projected token is renewed by the remount that follows the
// time NextRefresh gives (80% of its lifetime), which RemountVolumes
// returns so that a steady pod is synced again then.
func TestRemountVolumesRenewsTokenAtRefreshTime(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1_000_000, 0))
	req := &testRequester{clock: clk}
	v := NewVolumes(newTestSource(), t.TempDir(), WithMounter(fakemount.New()), WithTokens(NewTokens(req, WithTokenClock(clk))))
	pod := volumePod(corev1.Volume{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644),
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3600)}}}}}})
	if _, err := v.Volumes(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	at, err := v.RemountVolumes(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if want := clk.Now().Add(48*time.Minute + time.Nanosecond); !at.Equal(want) {
		t.Fatalf("refresh at %v, want %v (80%% of an hour)", at, want)
	}
	if req.count() != 1 {
		t.Fatalf("%d token requests before the refresh time, want 1", req.count())
	}
	clk.SetTime(at)
	next, err := v.RemountVolumes(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if req.count() != 2 || !next.Equal(at.Add(48*time.Minute+time.Nanosecond)) {
		t.Fatalf("%d token requests, next refresh %v: want a renewal and the next refresh 48 min later", req.count(), next)
	}
}
