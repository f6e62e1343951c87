package podworker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/apiobjects"
	fakemount "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podsync"
	"github.com/podstart/podstart/podworker"
)

// volumeNode is Workers on a fake clock whose pods' Secret, ConfigMap,
// downward API and projected volumes come from objects (apiobjects).
type volumeNode struct {
	*clocked
	objects *apiobjects.Objects
	root    string
}

// newVolumeNode makes the node; tokens, if set, gives the volumes a
// token manager on the node's clock.
func newVolumeNode(t *testing.T, tokens func(clock.Clock) *apiobjects.Tokens, opts ...podworker.Option) *volumeNode {
	n := &volumeNode{objects: &apiobjects.Objects{}, root: t.TempDir()}
	m := fakemount.New()
	n.clocked = newClockedWith(t, func(clk *testingclock.FakeClock) []podsync.Option {
		vopts := []apiobjects.VolumeOption{apiobjects.WithMounter(m)}
		if tokens != nil {
			vopts = append(vopts, apiobjects.WithTokens(tokens(clk)))
		}
		vols := apiobjects.NewVolumes(n.objects, n.root, vopts...)
		return []podsync.Option{podsync.WithRootDir(n.root), podsync.WithMounter(m), podsync.WithVolumes(vols)}
	}, opts...)
	return n
}

// file reads a file of a pod's volume, through its visible link.
func (n *volumeNode) file(pod *corev1.Pod, plugin, volume, name string) string {
	n.t.Helper()
	b, err := os.ReadFile(filepath.Join(podsync.PodDir(n.root, pod), "volumes", "kubernetes.io~"+plugin, volume, name))
	if os.IsNotExist(err) {
		return "<none>"
	}
	if err != nil {
		n.t.Fatal(err)
	}
	return string(b)
}

func secret(name, key, value string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Data: map[string][]byte{key: []byte(value)}}
}

// volumesPod has a Secret volume, an optional Secret volume whose Secret
// does not exist yet, a downward API volume of its labels and annotations,
// and a projected ConfigMap.
func volumesPod(name string) *corev1.Pod {
	pod := testPod(name)
	pod.Labels = map[string]string{"app": "shop"}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds", DefaultMode: ptr.To[int32](0o644)}}},
		{Name: "opt", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "later", DefaultMode: ptr.To[int32](0o644), Optional: ptr.To(true)}}},
		{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{DefaultMode: ptr.To[int32](0o644), Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}},
			{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.annotations"}}}}}},
		{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}}}},
	}
	return pod
}

// A running, steady pod's volumes follow their objects once the caller
// wakes the pods that refer to a changed object (ResyncReferencing): a
// changed Secret's new content, an optional Secret created after the pod
// started, a changed projected ConfigMap. Nothing else wakes it: a steady
// pod is still not resynced, and an object no pod refers to wakes none.
func TestObjectChangeReachesRunningPodsVolumes(t *testing.T) {
	n := newVolumeNode(t, nil)
	n.objects.SetSecret(secret("creds", "password", "one"))
	n.objects.SetConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"}, Data: map[string]string{"mode": "a"}})
	pod := volumesPod("vols")
	if err := n.workers.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	n.runUntil("running", pod.UID, running)
	n.step(time.Minute)
	if got := n.file(pod, "secret", "sec", "password") + n.file(pod, "secret", "opt", "key") + n.file(pod, "projected", "proj", "mode"); got != "one<none>a" {
		t.Fatalf("first setup: %q", got)
	}
	before := n.synced(pod.UID)
	n.step(5 * podworker.DefaultResyncPeriod)
	if got := n.synced(pod.UID); got != before {
		t.Fatalf("%d syncs of a steady pod with volumes in five resync periods, want none", got-before)
	}
	if got := n.workers.ResyncReferencing(podworker.ObjectRef{Kind: podworker.KindSecret, Namespace: "shop", Name: "unrelated"}); got != 0 {
		t.Fatalf("an object no pod refers to woke %d pods", got)
	}

	n.objects.SetSecret(secret("creds", "password", "two"))
	n.objects.SetSecret(secret("later", "key", "appeared"))
	n.objects.SetConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"}, Data: map[string]string{"mode": "b"}})
	for _, ref := range []podworker.ObjectRef{{Kind: podworker.KindSecret, Namespace: "shop", Name: "creds"}, {Kind: podworker.KindSecret, Namespace: "shop", Name: "later"},
		{Kind: podworker.KindConfigMap, Namespace: "shop", Name: "settings"}} {
		if got := n.workers.ResyncReferencing(ref); got != 1 {
			t.Fatalf("%v woke %d pods, want 1", ref, got)
		}
	}
	n.step(time.Second)
	if got := n.file(pod, "secret", "sec", "password") + n.file(pod, "secret", "opt", "key") + n.file(pod, "projected", "proj", "mode"); got != "twoappearedb" {
		t.Fatalf("after the wake: %q, want the new contents", got)
	}
	if got := n.rt.CallCount("StartContainer"); got != 4 {
		t.Fatalf("%d containers started, want 4 (nothing restarted)", got)
	}
	// The optional Secret deleted: its file goes.
	n.objects.DeleteSecret("shop", "later")
	n.workers.ResyncReferencing(podworker.ObjectRef{Kind: podworker.KindSecret, Namespace: "shop", Name: "later"})
	n.step(time.Second)
	if got := n.file(pod, "secret", "opt", "key"); got != "<none>" {
		t.Fatalf("deleted optional Secret's file: %q", got)
	}
}

// A label or annotation change upserted for a running pod rewrites its
// downward API files, as kubelet's sync of the updated pod does.
func TestLabelChangeRewritesDownwardAPIVolume(t *testing.T) {
	n := newVolumeNode(t, nil)
	n.objects.SetSecret(secret("creds", "password", "one"))
	n.objects.SetConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"}})
	pod := volumesPod("labels")
	if err := n.workers.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	n.runUntil("running", pod.UID, running)
	if got := n.file(pod, "downward-api", "info", "labels") + "|" + n.file(pod, "downward-api", "info", "annotations"); got != `app="shop"|` {
		t.Fatalf("first setup: %q", got)
	}
	pod = pod.DeepCopy()
	pod.Labels["tier"] = "front"
	pod.Annotations = map[string]string{"build": "7"}
	if err := n.workers.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	n.step(time.Second)
	if got := n.file(pod, "downward-api", "info", "labels") + "|" + n.file(pod, "downward-api", "info", "annotations"); got != "app=\"shop\"\ntier=\"front\"|build=\"7\"" {
		t.Fatalf("after the label change: %q", got)
	}
}

// References lists each Secret and ConfigMap a pod's volumes and
// containers' env refer to, once.
func TestReferences(t *testing.T) {
	pod := volumesPod("refs")
	pod.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}}
	pod.Spec.InitContainers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env"}, Key: "x"}}}}
	got := podworker.References(pod)
	want := []podworker.ObjectRef{{Kind: "ConfigMap", Namespace: "shop", Name: "env"}, {Kind: "ConfigMap", Namespace: "shop", Name: "settings"},
		{Kind: "Secret", Namespace: "shop", Name: "creds"}, {Kind: "Secret", Namespace: "shop", Name: "later"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("References = %v, want %v", got, want)
	}
}

// tokenServer is the API server's TokenRequest on a clock: each token
// new, valid for its expirationSeconds.
type tokenServer struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	n     int
}

func (s *tokenServer) CreateToken(_ context.Context, _, _ string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	out := tr.DeepCopy()
	out.Status.Token = fmt.Sprintf("token-%d", s.n)
	out.Status.ExpirationTimestamp = metav1.NewTime(s.clock.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))
	return out, nil
}

// A steady pod's projected service account token is renewed in its
// volume at 80% of its lifetime, as kubelet's periodic remount renews
// it, with no resync of the pod before then.
func TestSteadyPodTokenRenewed(t *testing.T) {
	srv := &tokenServer{}
	n := newVolumeNode(t, func(clk clock.Clock) *apiobjects.Tokens {
		srv.clock = clk
		return apiobjects.NewTokens(srv, apiobjects.WithTokenClock(clk))
	})
	pod := testPod("token")
	pod.Spec.ServiceAccountName = "default"
	pod.Spec.Volumes = []corev1.Volume{{Name: "api", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644),
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3600)}}}}}}}
	if err := n.workers.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	n.runUntil("running", pod.UID, running)
	if got := n.file(pod, "projected", "api", "token"); got != "token-1" {
		t.Fatalf("first token %q", got)
	}
	before := n.synced(pod.UID)
	n.step(47 * time.Minute)
	if got := n.synced(pod.UID); got != before {
		t.Fatalf("%d syncs before the token's refresh time, want none", got-before)
	}
	n.step(2 * time.Minute)
	if got := n.file(pod, "projected", "api", "token"); got != "token-2" {
		t.Fatalf("token %q at 49 min, want the renewed token-2", got)
	}
	if got := n.synced(pod.UID) - before; got != 1 {
		t.Fatalf("%d syncs for the renewal, want 1", got)
	}
}

// Steady pods waiting for their tokens' renewal hold no goroutine each
// (one timer serves them all), and each is renewed at its time.
func TestTokenPodsHoldNoGoroutine(t *testing.T) {
	srv := &tokenServer{}
	n := newVolumeNode(t, func(clk clock.Clock) *apiobjects.Tokens {
		srv.clock = clk
		return apiobjects.NewTokens(srv, apiobjects.WithTokenClock(clk))
	})
	n.step(time.Second)
	base := goruntime.NumGoroutine()
	const count = 20
	var pods []*corev1.Pod
	for i := range count {
		pod := testPod(fmt.Sprintf("tok%02d", i))
		pod.Spec.ServiceAccountName = "default"
		pod.Spec.Volumes = []corev1.Volume{{Name: "api", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644),
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](int64(3600 + 60*i))}}}}}}}
		pods = append(pods, pod)
		if err := n.workers.Upsert(pod); err != nil {
			t.Fatal(err)
		}
	}
	for _, pod := range pods {
		n.runUntil("running", pod.UID, running)
	}
	n.step(time.Minute)
	if got := goruntime.NumGoroutine() - base; got >= count/2 {
		t.Errorf("%d more goroutines with %d steady pods waiting for a renewal, want their loops ended", got, count)
	}
	n.step(70 * time.Minute) // every token's 80% (48 to 63 min) passed once
	for _, pod := range pods {
		if got := n.file(pod, "projected", "api", "token"); got == "" || got == "<none>" {
			t.Fatalf("%s: token %q", pod.Name, got)
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.n != 2*count {
		t.Fatalf("%d token requests in 70 min for %d pods, want each renewed once", srv.n, count)
	}
}

// With WithPeriodicRemount, kubelet's periodic rewrite: a steady pod with
// such volumes is resynced every resync period, so a change nobody
// reports reaches its volume within one; a pod without them is not.
func TestPeriodicRemount(t *testing.T) {
	n := newVolumeNode(t, nil, podworker.WithPeriodicRemount())
	n.objects.SetSecret(secret("creds", "password", "one"))
	n.objects.SetConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"}})
	pod := volumesPod("periodic")
	plain := testPod("plain")
	for _, p := range []*corev1.Pod{pod, plain} {
		if err := n.workers.Upsert(p); err != nil {
			t.Fatal(err)
		}
		n.runUntil("running", p.UID, running)
	}
	n.step(time.Minute)
	before, plainBefore := n.synced(pod.UID), n.synced(plain.UID)
	n.objects.SetSecret(secret("creds", "password", "two"))
	n.step(podworker.DefaultResyncPeriod)
	if got := n.file(pod, "secret", "sec", "password"); got != "two" {
		t.Fatalf("secret file %q a resync period after an unreported change, want two", got)
	}
	if got := n.synced(pod.UID) - before; got != 1 {
		t.Fatalf("%d syncs of the pod with volumes in a resync period, want 1", got)
	}
	if got := n.synced(plain.UID) - plainBefore; got != 0 {
		t.Fatalf("%d syncs of a steady pod without such volumes, want none", got)
	}
}

// A remount that failed (a required Secret deleted) is not a failed sync
// and leaves the volume as it was; the pod is resynced after the resync
// period, which writes the Secret back once it returns, and is steady
// again after that.
func TestFailedRemountRetriedAtResync(t *testing.T) {
	n := newVolumeNode(t, nil)
	n.objects.SetSecret(secret("creds", "password", "one"))
	n.objects.SetConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"}})
	pod := volumesPod("failing")
	if err := n.workers.Upsert(pod); err != nil {
		t.Fatal(err)
	}
	n.runUntil("running", pod.UID, running)
	n.objects.DeleteSecret("shop", "creds")
	n.workers.ResyncReferencing(podworker.ObjectRef{Kind: podworker.KindSecret, Namespace: "shop", Name: "creds"})
	n.step(time.Second)
	st, _ := n.workers.Status(pod.UID)
	if st.Result.RemountError == nil || st.Result.Error() != nil {
		t.Fatalf("remount error %v, sync error %v; want only a remount error", st.Result.RemountError, st.Result.Error())
	}
	if got := n.file(pod, "secret", "sec", "password"); got != "one" {
		t.Fatalf("secret file %q after a failed remount, want the last written", got)
	}
	n.objects.SetSecret(secret("creds", "password", "back"))
	n.step(podworker.DefaultResyncPeriod)
	if got := n.file(pod, "secret", "sec", "password"); got != "back" {
		t.Fatalf("secret file %q a resync period after a failed remount, want back", got)
	}
	// Then steady again.
	before := n.synced(pod.UID)
	n.step(3 * podworker.DefaultResyncPeriod)
	if got := n.synced(pod.UID) - before; got != 0 {
		t.Fatalf("%d syncs after the remount succeeded, want none", got)
	}
}
