package volumemanager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	mountsfake "github.com/podstart/podstart/mounts/fake"
)

// fakeNode is a NodeVolumes that records its calls, makes and removes the
// directories and vol_data.json files as the CSI plugin does (kubelet's
// format, read back by reconstruction) and the target as a driver does,
// and fails as scripted.
type fakeNode struct {
	mu        sync.Mutex
	caps      map[string]NodeCapabilities // default: stages
	calls     []string
	stages    []StageRequest
	publishes []PublishRequest
	fail      map[string][]error // method → errors returned in turn
	staged    map[string]bool    // staging paths
	published map[string]bool    // target paths
}

func newFakeNode() *fakeNode {
	return &fakeNode{caps: map[string]NodeCapabilities{}, fail: map[string][]error{}, staged: map[string]bool{}, published: map[string]bool{}}
}

func (f *fakeNode) failNext(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[method] = append(f.fail[method], err)
}

func (f *fakeNode) next(method, call string) error {
	f.calls = append(f.calls, method+" "+call)
	if errs := f.fail[method]; len(errs) > 0 {
		f.fail[method] = errs[1:]
		return errs[0]
	}
	return nil
}

func (f *fakeNode) Capabilities(_ context.Context, driver string) (NodeCapabilities, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.caps[driver]; ok {
		return c, nil
	}
	return NodeCapabilities{StageUnstage: true}, nil
}

func (f *fakeNode) Stage(_ context.Context, r StageRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.next("Stage", r.VolumeHandle+" "+r.StagingPath); err != nil {
		return err
	}
	if err := os.MkdirAll(r.StagingPath, 0o750); err != nil {
		return err
	}
	if r.Block {
		f.stages = append(f.stages, r)
		f.staged[r.StagingPath] = true
		return writeBlockData(filepath.Dir(filepath.Dir(r.StagingPath)), r.SpecName, r.Driver, r.VolumeHandle)
	}
	if err := writeJSON(filepath.Join(filepath.Dir(r.StagingPath), volDataFileName), map[string]string{"volumeHandle": r.VolumeHandle, "driverName": r.Driver}); err != nil {
		return err
	}
	f.stages = append(f.stages, r)
	f.staged[r.StagingPath] = true
	return nil
}

func (f *fakeNode) Unstage(_ context.Context, r UnstageRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.next("Unstage", r.VolumeHandle+" "+r.StagingPath); err != nil {
		return err
	}
	delete(f.staged, r.StagingPath)
	if r.Block { // the CSI plugin's cleanupOrphanDeviceFiles
		devs := filepath.Dir(filepath.Dir(r.StagingPath))
		for _, p := range []string{r.StagingPath, filepath.Join(devs, "publish", r.SpecName), filepath.Join(devs, r.SpecName, "data", volDataFileName),
			filepath.Join(devs, r.SpecName, "data"), filepath.Join(devs, r.SpecName, "dev"), filepath.Join(devs, r.SpecName)} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		return nil
	}
	return removeVolumeDir(r.StagingPath)
}

func (f *fakeNode) Publish(_ context.Context, r PublishRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.next("Publish", r.VolumeHandle+" "+r.TargetPath); err != nil {
		return err
	}
	if r.StagingPath != "" && !f.staged[r.StagingPath] {
		return fmt.Errorf("publish of %s before its stage", r.VolumeHandle)
	}
	if r.Block { // the driver's device at the target (a file here)
		if err := os.MkdirAll(filepath.Dir(r.TargetPath), 0o750); err != nil {
			return err
		}
		if err := os.WriteFile(r.TargetPath, nil, 0o640); err != nil {
			return err
		}
		f.publishes = append(f.publishes, r)
		f.published[r.TargetPath] = true
		return writeBlockData(filepath.Dir(filepath.Dir(filepath.Dir(r.TargetPath))), r.SpecName, r.Driver, r.VolumeHandle)
	}
	mode := storagev1.VolumeLifecyclePersistent
	if r.Ephemeral {
		mode = storagev1.VolumeLifecycleEphemeral
	}
	if err := os.MkdirAll(r.TargetPath, 0o750); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(filepath.Dir(r.TargetPath), volDataFileName), map[string]string{
		"specVolID": r.SpecName, "volumeHandle": r.VolumeHandle, "driverName": r.Driver, "nodeName": node,
		"volumeLifecycleMode": string(mode), "attachmentID": AttachmentName(r.VolumeHandle, r.Driver, node),
	}); err != nil {
		return err
	}
	f.publishes = append(f.publishes, r)
	f.published[r.TargetPath] = true
	return nil
}

func (f *fakeNode) Unpublish(_ context.Context, r UnpublishRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.next("Unpublish", r.VolumeHandle+" "+r.TargetPath); err != nil {
		return err
	}
	if err := os.RemoveAll(r.TargetPath); err != nil {
		return err
	}
	delete(f.published, r.TargetPath)
	if r.Block {
		return nil
	}
	return removeVolumeDir(r.TargetPath)
}

// writeBlockData writes a block volume's vol_data.json under the plugin's
// volumeDevices directory devs, as the CSI plugin does.
func writeBlockData(devs, specName, driverName, handle string) error {
	dir := filepath.Join(devs, specName, "data")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	return writeJSON(filepath.Join(dir, volDataFileName), map[string]string{
		"specVolID": specName, "volumeHandle": handle, "driverName": driverName, "nodeName": node,
		"attachmentID": AttachmentName(handle, driverName, node),
	})
}

// removeVolumeDir removes dir, the vol_data.json beside it and their
// parent, as the CSI plugin does.
func removeVolumeDir(dir string) error {
	parent := filepath.Dir(dir)
	for _, p := range []string{dir, filepath.Join(parent, volDataFileName), parent} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o640)
}

// callsOf returns the recorded calls of one method.
func (f *fakeNode) callsOf(method string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		if strings.HasPrefix(c, method+" ") {
			out = append(out, strings.TrimPrefix(c, method+" "))
		}
	}
	return out
}

func (f *fakeNode) state() (staged, published []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for p := range f.staged {
		staged = append(staged, p)
	}
	for p := range f.published {
		published = append(published, p)
	}
	slices.Sort(staged)
	slices.Sort(published)
	return staged, published
}

// recorder records events as "<type> <reason> <message>".
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Eventf(_ apiruntime.Object, eventtype, reason, format string, args ...interface{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, eventtype+" "+reason+" "+fmt.Sprintf(format, args...))
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

const (
	node   = "node-1"
	driver = "csi.example.com"
	ns     = "default"
)

var t0 = time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)

type env struct {
	t     *testing.T
	root  string
	objs  *Objects
	node  *fakeNode
	rec   *recorder
	clock *testingclock.FakeClock
	m     *Manager
}

func newEnv(t testing.TB) *env {
	e := &env{root: t.TempDir(), objs: &Objects{}, node: newFakeNode(), rec: &recorder{}, clock: testingclock.NewFakeClock(t0)}
	if tt, ok := t.(*testing.T); ok {
		e.t = tt
	}
	e.m = e.restart(t)
	return e
}

// restart returns a new manager over the same disk, objects and driver: an
// agent restarted.
func (e *env) restart(t testing.TB) *Manager {
	m, err := New(node, e.root, e.objs, e.node, WithClock(e.clock), WithEventRecorder(e.rec), WithMounter(mountsfake.New()))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (e *env) reconcile(t testing.TB) {
	t.Helper()
	_ = e.m.Reconcile(context.Background())
}

// csiDriver is a CSIDriver object with the API server's defaults.
func csiDriver(name string, attach bool, modes ...storagev1.VolumeLifecycleMode) *storagev1.CSIDriver {
	policy := storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
	if len(modes) == 0 {
		modes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
	f := false
	return &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.CSIDriverSpec{
			AttachRequired: &attach, PodInfoOnMount: &f, FSGroupPolicy: &policy,
			VolumeLifecycleModes: modes, RequiresRepublish: &f,
		},
	}
}

// boundClaim returns a Bound claim and its CSI PV.
func boundClaim(claim, pv, handle string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	uid := types.UID("uid-" + claim)
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: claim, UID: uid},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: pv},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
	fs := corev1.PersistentVolumeFilesystem
	v := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pv},
		Spec: corev1.PersistentVolumeSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			ClaimRef:    &corev1.ObjectReference{Namespace: ns, Name: claim, UID: uid},
			VolumeMode:  &fs,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: driver, VolumeHandle: handle, FSType: "ext4",
				VolumeAttributes: map[string]string{"tier": "gold"},
			}},
		},
	}
	return c, v
}

// newPod returns a pod whose one container mounts every volume at
// /mnt/<name>.
func newPod(name string, uid types.UID, vols ...corev1.Volume) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile, TerminationMessagePath: "/dev/termination-log"}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
			Volumes: vols,
		},
	}
	for _, v := range vols {
		p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: "/mnt/" + v.Name})
	}
	return p
}

func claimVolume(name, claim string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
}

// leftovers lists what is left under the root: vol_data.json files and
// mount directories.
func leftovers(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == volDataFileName || (d.IsDir() && (d.Name() == "mount" || d.Name() == globalMountDir)) {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return out
}
