package dra_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/dra"
)

// An agent restart: the new Manager reads the checkpoint, so a running
// pod keeps its CDI devices without a second NodePrepareResources, and
// its claim is unprepared when it goes. A pod that went while the agent
// was down is unprepared by Reconcile.
func TestRestartKeepsClaims(t *testing.T) {
	e := newEnv(t)
	d := e.startDriver("gpu.example.com")
	run := pod("ns", "run", "uid-run", "c1")
	gone := pod("ns", "gone", "uid-gone", "c2")
	e.claims.put(claim("ns", "c1", "uid-c1", "gpu.example.com", run))
	e.claims.put(claim("ns", "c2", "uid-c2", "gpu.example.com", gone))
	mustPrepare(t, e.mgr, run)
	mustPrepare(t, e.mgr, gone)
	before := e.mgr.Claims()

	d.stop()
	e.waitDeregistered("gpu.example.com")
	e.stopManager()
	e.start()
	if got := e.mgr.Claims(); len(got) != 2 || fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("after restart %+v, want %+v", got, before)
	}
	// The container of the running pod restarts: its devices come from
	// the checkpoint, with no driver registered yet.
	opts, err := e.mgr.DeviceOptions(context.Background(), run, &run.Spec.Containers[0])
	if err != nil || !slices.Equal(opts.CDIDevices, []string{cdiFor("c1")}) {
		t.Fatalf("DeviceOptions after restart: %v %v", opts.CDIDevices, err)
	}

	d2 := e.startDriver("gpu.example.com")
	if err := e.mgr.Reconcile(context.Background(), func(uid types.UID) bool { return uid == run.UID }); err != nil {
		t.Fatal(err)
	}
	if err := e.mgr.UnprepareResources(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	calls := d2.getCalls()
	if len(calls) != 2 || calls[0].method != "unprepare" || calls[0].uids[0] != "uid-c2" || calls[1].method != "unprepare" || calls[1].uids[0] != "uid-c1" {
		t.Fatalf("calls after restart %v", calls)
	}
	if d.Prepared()["uid-c1"] != 1 || len(d2.Prepared()) != 0 {
		t.Errorf("prepared counts %v then %v", d.Prepared(), d2.Prepared())
	}
	if len(e.mgr.Claims()) != 0 {
		t.Errorf("claims left %+v", e.mgr.Claims())
	}
}

// A checkpoint that cannot be read fails New (kubelet then asks for the
// node to be drained and the file removed); an absent one is created as
// kubelet's, empty.
func TestNewCheckpoint(t *testing.T) {
	dir := t.TempDir()
	store := &claimStore{claims: nil}
	if _, err := dra.New(context.Background(), dir, store); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, dra.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	const empty = `{"Data":"{\"kind\":\"DRACheckpoint\",\"apiVersion\":\"checkpoint.dra.kubelet.k8s.io/v1\",\"ClaimInfoStateList\":null}","Checksum":4010664294}`
	if string(b) != empty {
		t.Errorf("new checkpoint %s", b)
	}
	for name, content := range map[string]string{
		"garbage":  "{",
		"checksum": `{"Data":"{\"kind\":\"DRACheckpoint\",\"apiVersion\":\"checkpoint.dra.kubelet.k8s.io/v1\",\"ClaimInfoStateList\":null}","Checksum":1}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, dra.CheckpointFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := dra.New(context.Background(), dir, store); err == nil || !errorsIs(err, dra.ErrCheckpoint) {
			t.Errorf("%s: New: %v", name, err)
		}
	}
	os.Remove(filepath.Join(dir, dra.CheckpointFile))
	if err := os.Mkdir(filepath.Join(dir, dra.CheckpointFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := dra.New(context.Background(), dir, store); err == nil || !errorsIs(err, dra.ErrCheckpoint) {
		t.Errorf("directory in place of the checkpoint: New: %v", err)
	}
}

// Many pods prepared and unprepared at once, sharing claims: every claim
// is unprepared once, the cache ends empty (-race). A claim shared by pods
// prepared at the same moment may be sent to NodePrepareResources by each
// of them before one has finished, as with kubelet (drivers answer
// idempotently); a pod's own claim is prepared once.
func TestConcurrentPods(t *testing.T) {
	e := newEnv(t)
	d := e.startDriver("gpu.example.com")
	const pods, shared = 40, 5
	var ps []*podT
	for i := range pods {
		p := pod("ns", fmt.Sprintf("p%d", i), fmt.Sprintf("uid-p%d", i), fmt.Sprintf("own%d", i), fmt.Sprintf("shared%d", i%shared))
		ps = append(ps, p)
		e.claims.put(claim("ns", fmt.Sprintf("own%d", i), fmt.Sprintf("uid-own%d", i), "gpu.example.com", p))
	}
	for s := range shared {
		var users []*podT
		for i := s; i < pods; i += shared {
			users = append(users, ps[i])
		}
		e.claims.put(claim("ns", fmt.Sprintf("shared%d", s), fmt.Sprintf("uid-shared%d", s), "gpu.example.com", users...))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*pods)
	for _, p := range ps {
		wg.Go(func() {
			if err := e.mgr.PrepareResources(context.Background(), p); err != nil {
				errs <- err
				return
			}
			if _, err := e.mgr.DeviceOptions(context.Background(), p, &p.Spec.Containers[0]); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	for _, p := range ps {
		wg.Go(func() {
			if err := e.mgr.UnprepareResources(context.Background(), p); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	unprepared := map[string]int{}
	for _, c := range d.getCalls() {
		if c.method == "unprepare" {
			for _, u := range c.uids {
				unprepared[u]++
			}
		}
	}
	prepared := d.Prepared()
	for uid, n := range prepared {
		if (n != 1 && !strings.HasPrefix(uid, "uid-shared")) || unprepared[uid] != 1 {
			t.Errorf("claim %s prepared %d times, unprepared %d times", uid, n, unprepared[uid])
		}
	}
	if len(prepared) != pods+shared || len(e.mgr.Claims()) != 0 {
		t.Errorf("%d claims prepared, %d left", len(prepared), len(e.mgr.Claims()))
	}
}

// Pods prepared and unprepared while a second instance of their driver
// registers and goes again and again (-race): every call either succeeds
// or fails with a driver error (or, after a failed unprepare, refuses the
// claim being unprepared), and once the churn is over every pod finishes
// its unprepare, prepares and unprepares.
func TestRegistrationChurn(t *testing.T) {
	e := newEnv(t)
	e.startDriverAt("gpu.example.com", "gpu-a")
	const pods = 10
	var ps []*podT
	for i := range pods {
		p := pod("ns", fmt.Sprintf("p%d", i), fmt.Sprintf("uid-p%d", i), fmt.Sprintf("c%d", i))
		ps = append(ps, p)
		e.claims.put(claim("ns", fmt.Sprintf("c%d", i), fmt.Sprintf("uid-c%d", i), "gpu.example.com", p))
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := e.mgr.PrepareResources(context.Background(), p); err != nil && !errorsIs(err, dra.ErrDriver) && !errorsIs(err, dra.ErrClaimNotUsable) {
					t.Errorf("prepare: %v", err)
					return
				}
				if err := e.mgr.UnprepareResources(context.Background(), p); err != nil && !errorsIs(err, dra.ErrDriver) {
					t.Errorf("unprepare: %v", err)
					return
				}
			}
		})
	}
	for range 5 {
		b := e.startDriverAt("gpu.example.com", "gpu-b")
		b.Stop()
		e.waitDeregistered("gpu.example.com")
	}
	close(done)
	wg.Wait()
	for _, p := range ps {
		// An unprepare the churn failed is finished first (the claim
		// refuses new prepares while it is being unprepared).
		if err := e.mgr.UnprepareResources(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		mustPrepare(t, e.mgr, p)
		if err := e.mgr.UnprepareResources(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	if c := e.mgr.Claims(); len(c) != 0 {
		t.Errorf("claims left %+v", c)
	}
}
