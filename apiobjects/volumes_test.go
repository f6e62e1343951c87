package apiobjects

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/mounts"
	fakemount "github.com/podstart/podstart/mounts/fake"
	"github.com/podstart/podstart/podsync"
)

type recordedEvent struct{ object, eventtype, reason, message string }

type testRecorder struct {
	mu     sync.Mutex
	events []recordedEvent
}

func (r *testRecorder) Eventf(obj apiruntime.Object, eventtype, reason, messageFmt string, args ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := ""
	if p, ok := obj.(*corev1.Pod); ok {
		name = p.Name
	}
	r.events = append(r.events, recordedEvent{name, eventtype, reason, fmt.Sprintf(messageFmt, args...)})
}

func volumePod(vols ...corev1.Volume) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "web-uid", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{ServiceAccountName: "default", Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}, Volumes: vols},
	}
}

func secretVolume(name, secret string, optional bool, items ...corev1.KeyToPath) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret, Items: items, DefaultMode: ptr.To[int32](0o644), Optional: &optional}}}
}

// readVolume reads the files of a volume through its user-visible links.
func readVolume(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	data := filepath.Join(dir, "..data") + "/"
	err := filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(data, p)
		b, err := os.ReadFile(filepath.Join(dir, rel)) // through the visible link
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mode(t *testing.T, p string) fs.FileMode {
	t.Helper()
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode()
}

// All four plugins write their payload under kubelet's directories; hostPath
// and emptyDir go to podsync.DefaultVolumes.
func TestVolumesWriteFiles(t *testing.T) {
	root := t.TempDir()
	host := t.TempDir()
	src := newTestSource(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"user": []byte("u"), "pass": []byte("p")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "conf"}, Data: map[string]string{"app.conf": "x=1"}, BinaryData: map[string][]byte{"blob": {0, 1}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": "CA"}},
	)
	req := &testRequester{}
	pod := volumePod(
		secretVolume("creds", "creds", false, corev1.KeyToPath{Key: "pass", Path: "db/password", Mode: ptr.To[int32](0o400)}),
		corev1.Volume{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}, DefaultMode: ptr.To[int32](0o640)}}},
		corev1.Volume{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{DefaultMode: ptr.To[int32](0o644),
			Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
		corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}},
		corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: host}}},
	)
	v := NewVolumes(src, root, WithMounter(fakemount.New()), WithTokenRequester(req))
	got, err := v.Volumes(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	vdir := filepath.Join(podsync.PodDir(root, pod), "volumes")
	want := mounts.VolumeMap{
		"creds":           {HostPath: filepath.Join(vdir, "kubernetes.io~secret", "creds"), ReadOnly: true, SELinuxRelabel: true},
		"conf":            {HostPath: filepath.Join(vdir, "kubernetes.io~configmap", "conf"), ReadOnly: true, SELinuxRelabel: true},
		"info":            {HostPath: filepath.Join(vdir, "kubernetes.io~downward-api", "info"), ReadOnly: true, SELinuxRelabel: true},
		"kube-api-access": {HostPath: filepath.Join(vdir, "kubernetes.io~projected", "kube-api-access"), ReadOnly: true, SELinuxRelabel: true},
		"scratch":         {HostPath: filepath.Join(vdir, "kubernetes.io~empty-dir", "scratch"), SELinuxRelabel: true},
		"host":            {HostPath: host},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("volumes\n got %v\nwant %v", got, want)
	}
	for name, files := range map[string]map[string]string{
		"creds":           {"db/password": "p"},
		"conf":            {"app.conf": "x=1", "blob": "\x00\x01"},
		"info":            {"labels": `app="web"`},
		"kube-api-access": {"token": "ns:default:3607:[https://api]", "ca.crt": "CA", "namespace": "ns"},
	} {
		if got := readVolume(t, got[name].HostPath); fmt.Sprint(got) != fmt.Sprint(files) {
			t.Errorf("%s: %v, want %v", name, got, files)
		}
	}
	if m := mode(t, filepath.Join(got["creds"].HostPath, "db/password")); m.Perm() != 0o400 {
		t.Errorf("item mode %v", m)
	}
	if m := mode(t, filepath.Join(got["conf"].HostPath, "app.conf")); m.Perm() != 0o640 {
		t.Errorf("default mode %v", m)
	}
	if m := mode(t, got["creds"].HostPath); m.Perm() != 0o777 {
		t.Errorf("volume directory mode %v, want kubelet's emptyDir 0777", m)
	}
	if target, err := os.Readlink(filepath.Join(got["creds"].HostPath, "db")); err != nil || target != filepath.Join("..data", "db") {
		t.Errorf("db links to %q (%v)", target, err)
	}
	// The token is cached: a second sync asks no new one.
	if _, err := v.Volumes(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if req.count() != 1 {
		t.Errorf("%d token requests, want 1", req.count())
	}
	v.ForgetPod(pod.UID)
	if _, err := v.Volumes(context.Background(), pod); err != nil || req.count() != 2 {
		t.Errorf("after ForgetPod: %d token requests (%v), want 2", req.count(), err)
	}
}

// A changed Secret reaches the volume on the next call, through a new
// ..data; a key gone from it is gone from the volume.
func TestVolumesSecretChange(t *testing.T) {
	root := t.TempDir()
	src := newTestSource(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"a": []byte("1"), "b": []byte("2")}})
	pod := volumePod(secretVolume("creds", "creds", false))
	v := NewVolumes(src, root, WithMounter(fakemount.New()))
	got, err := v.Volumes(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	dir := got["creds"].HostPath
	if files := readVolume(t, dir); fmt.Sprint(files) != "map[a:1 b:2]" {
		t.Fatalf("first: %v", files)
	}
	src.put(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"a": []byte("changed")}})
	if _, err := v.Volumes(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if files := readVolume(t, dir); fmt.Sprint(files) != "map[a:changed]" {
		t.Fatalf("after the change: %v", files)
	}
	if _, err := os.Lstat(filepath.Join(dir, "b")); !os.IsNotExist(err) {
		t.Errorf("stale link b left: %v", err)
	}
}

// An optional missing Secret (or ConfigMap) is an empty volume; a
// required one fails with kubelet's message and a FailedMount event, and
// the error is the Source's NotFound.
func TestVolumesMissingObjects(t *testing.T) {
	root := t.TempDir()
	rec := &testRecorder{}
	v := NewVolumes(newTestSource(), root, WithMounter(fakemount.New()), WithEventRecorder(rec))
	optCM := corev1.Volume{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Optional: ptr.To(true), DefaultMode: ptr.To[int32](0o644),
		Items: []corev1.KeyToPath{{Key: "k", Path: "p"}}}}}
	got, err := v.Volumes(context.Background(), volumePod(secretVolume("creds", "gone", true), optCM))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"creds", "conf"} {
		if files := readVolume(t, got[name].HostPath); len(files) != 0 {
			t.Errorf("%s: %v, want an empty volume", name, files)
		}
		if _, err := os.Readlink(filepath.Join(got[name].HostPath, "..data")); err != nil {
			t.Errorf("%s: no ..data: %v", name, err)
		}
	}
	if len(rec.events) != 0 {
		t.Errorf("events %v", rec.events)
	}

	pod := volumePod(secretVolume("creds", "gone", false), optCM)
	_, err = v.Volumes(context.Background(), pod)
	const want = `MountVolume.SetUp failed for volume "creds" : secret "gone" not found`
	if err == nil || err.Error() != want || !apierrors.IsNotFound(err) {
		t.Fatalf("err = %v, want %s (NotFound)", err, want)
	}
	if len(rec.events) != 1 || rec.events[0] != (recordedEvent{"web", corev1.EventTypeWarning, "FailedMount", want}) {
		t.Errorf("events %v", rec.events)
	}

	// A key missing from a required Secret: kubelet's message.
	src := newTestSource(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"a": []byte("1")}})
	_, err = NewVolumes(src, root, WithMounter(fakemount.New())).Volumes(context.Background(), volumePod(secretVolume("creds", "creds", false, corev1.KeyToPath{Key: "nokey", Path: "p"})))
	if err == nil || err.Error() != `MountVolume.SetUp failed for volume "creds" : references non-existent secret key: nokey` || !errors.Is(err, ErrVolumeKeyMissing) {
		t.Fatalf("missing key: %v", err)
	}
	// A Source failing otherwise fails even an optional reference.
	src.err = errors.New("connection refused")
	if _, err := NewVolumes(src, root, WithMounter(fakemount.New())).Volumes(context.Background(), volumePod(secretVolume("creds", "creds", true))); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Source failure: %v", err)
	}
}

// A volume type neither these plugins nor DefaultVolumes serve is refused
// by name before anything is written; so is an unservable projection.
func TestVolumesRefused(t *testing.T) {
	root := t.TempDir()
	src := newTestSource(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}})
	pod := volumePod(secretVolume("creds", "creds", false),
		corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}})
	_, err := NewVolumes(src, root, WithMounter(fakemount.New())).Volumes(context.Background(), pod)
	if !errors.Is(err, podsync.ErrVolumeNotSupported) || !strings.Contains(err.Error(), `volume "data": persistentVolumeClaim:`) {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "pods")); !os.IsNotExist(err) {
		t.Errorf("something was written: %v", err)
	}
	pod = volumePod(corev1.Volume{Name: "certs", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644),
		Sources: []corev1.VolumeProjection{{PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/s", KeyType: "ED25519", CredentialBundlePath: "cred.pem"}}}}}})
	_, err = NewVolumes(src, root, WithMounter(fakemount.New())).Volumes(context.Background(), pod)
	if !errors.Is(err, ErrNoPodCertificateClient) || !strings.Contains(err.Error(), "podCertificate") {
		t.Fatalf("err = %v", err)
	}
}

// fsGroup as kubelet applies it to these plugins: the group on the whole
// volume, group read added (read-only mask), setgid directories; the
// token 0600 then 0640, owned by the pod's one runAsUser.
func TestVolumesFSGroup(t *testing.T) {
	root := t.TempDir()
	gid, uid := int64(4321), int64(1234)
	if os.Geteuid() != 0 {
		gid, uid = int64(os.Getegid()), int64(os.Geteuid())
	}
	src := newTestSource(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"}, Data: map[string][]byte{"a": []byte("1")}})
	pod := volumePod(secretVolume("creds", "creds", false, corev1.KeyToPath{Key: "a", Path: "sub/a", Mode: ptr.To[int32](0o600)}),
		corev1.Volume{Name: "tok", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}})
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: &gid, RunAsUser: &uid}
	got, err := NewVolumes(src, root, WithMounter(fakemount.New()), WithTokenRequester(&testRequester{})).Volumes(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	check := func(p string, wantMode fs.FileMode, wantUID int64) {
		t.Helper()
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := info.Sys().(*syscall.Stat_t)
		if int64(st.Gid) != gid || info.Mode() != wantMode || wantUID >= 0 && int64(st.Uid) != wantUID {
			t.Errorf("%s: uid %d gid %d mode %v; want gid %d mode %v uid %d", p, st.Uid, st.Gid, info.Mode(), gid, wantMode, wantUID)
		}
	}
	creds := got["creds"].HostPath
	check(filepath.Join(creds, "sub/a"), 0o640, -1)
	check(filepath.Join(creds, "sub"), fs.ModeDir|fs.ModeSetgid|0o755, -1)
	check(creds, fs.ModeDir|fs.ModeSetgid|0o777, -1)
	check(filepath.Join(got["tok"].HostPath, "token"), 0o640, uid)
}
