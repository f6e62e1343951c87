package diff

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	kdrastate "k8s.io/kubernetes/pkg/kubelet/cm/dra/state"

	"github.com/podstart/podstart/dra"
)

// randClaims returns random claim infos, the same in podstart's and
// kubelet's types; names are unique per namespace and never empty, as the
// manager keeps them.
func randClaims(r *rand.Rand) ([]dra.ClaimInfo, kdrastate.ClaimInfoStateList) {
	n := r.IntN(6)
	if n == 0 && r.IntN(2) == 0 {
		return nil, nil
	}
	mine := make([]dra.ClaimInfo, 0, n)
	theirs := make(kdrastate.ClaimInfoStateList, 0, n)
	for i := range n {
		c := dra.ClaimInfo{
			ClaimUID:  types.UID(fmt.Sprintf("uid-%d-", i) + trickyString(r, 3)),
			ClaimName: fmt.Sprintf("claim-%d", i) + trickyString(r, 3),
			Namespace: "ns" + trickyString(r, 2),
		}
		k := kdrastate.ClaimInfoState{ClaimUID: c.ClaimUID, ClaimName: c.ClaimName, Namespace: c.Namespace}
		if r.IntN(5) > 0 {
			c.PodUIDs, k.PodUIDs = sets.New[string](), sets.New[string]()
			for range r.IntN(4) {
				u := "pod-" + trickyString(r, 3)
				c.PodUIDs.Insert(u)
				k.PodUIDs.Insert(u)
			}
		}
		if r.IntN(6) > 0 {
			c.DriverState, k.DriverState = map[string]dra.DriverState{}, map[string]kdrastate.DriverState{}
			for range 1 + r.IntN(3) {
				driver := pick(r, []string{"gpu.example.com", "nic.example.com", "fpga.example.com"}) + trickyString(r, 1)
				var ds dra.DriverState
				var kds kdrastate.DriverState
				if r.IntN(5) == 0 {
					ops := []resourcev1.SkipNodeOperation{pick(r, []resourcev1.SkipNodeOperation{resourcev1.SkipNodeOperationAll, resourcev1.SkipNodeOperationNodePrepareResources, resourcev1.SkipNodeOperationNodeUnprepareResources})}
					ds.SkipNodeOperations, kds.SkipNodeOperations = ops, ops
				}
				for range r.IntN(4) {
					d := dra.Device{PoolName: "pool" + trickyString(r, 2), DeviceName: "dev" + trickyString(r, 2)}
					kd := kdrastate.Device{PoolName: d.PoolName, DeviceName: d.DeviceName}
					if r.IntN(3) == 0 {
						id := types.UID("share-" + trickyString(r, 2))
						d.ShareID, kd.ShareID = &id, &id
					}
					if r.IntN(4) > 0 {
						for range r.IntN(3) {
							s := "req" + trickyString(r, 2)
							d.RequestNames = append(d.RequestNames, s)
							kd.RequestNames = append(kd.RequestNames, s)
						}
						if d.RequestNames == nil && r.IntN(2) == 0 {
							d.RequestNames, kd.RequestNames = []string{}, []string{}
						}
					}
					for range r.IntN(3) {
						s := "example.com/gpu=" + trickyString(r, 2)
						d.CDIDeviceIDs = append(d.CDIDeviceIDs, s)
						kd.CDIDeviceIDs = append(kd.CDIDeviceIDs, s)
					}
					ds.Devices = append(ds.Devices, d)
					kds.Devices = append(kds.Devices, kd)
				}
				c.DriverState[driver], k.DriverState[driver] = ds, kds
			}
		}
		mine, theirs = append(mine, c), append(theirs, k)
	}
	return mine, theirs
}

// fromKubelet converts kubelet's decoded list to podstart's type, with a
// nil pod set read as empty (as DecodeCheckpoint reads it).
func fromKubelet(list kdrastate.ClaimInfoStateList) []dra.ClaimInfo {
	var out []dra.ClaimInfo
	for _, k := range list {
		c := dra.ClaimInfo{ClaimUID: k.ClaimUID, ClaimName: k.ClaimName, Namespace: k.Namespace, PodUIDs: k.PodUIDs}
		if c.PodUIDs == nil {
			c.PodUIDs = sets.New[string]()
		}
		if k.DriverState != nil {
			c.DriverState = map[string]dra.DriverState{}
			for name, kds := range k.DriverState {
				ds := dra.DriverState{SkipNodeOperations: kds.SkipNodeOperations}
				for _, kd := range kds.Devices {
					ds.Devices = append(ds.Devices, dra.Device{PoolName: kd.PoolName, DeviceName: kd.DeviceName, ShareID: kd.ShareID, RequestNames: kd.RequestNames, CDIDeviceIDs: kd.CDIDeviceIDs})
				}
				c.DriverState[name] = ds
			}
		}
		out = append(out, c)
	}
	return out
}

// TestDRACheckpointAgainstKubelet: for random claim infos, podstart's
// checkpoint bytes are kubelet v1.37.2's (state.NewCheckpoint,
// MarshalCheckpoint), kubelet reads podstart's checkpoint to the same
// claims podstart reads, and podstart reads kubelet's.
func TestDRACheckpointAgainstKubelet(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	total := cases(500)
	opts := cmpopts.EquateEmpty()
	for i := range total {
		mine, theirs := randClaims(r)
		b, err := dra.EncodeCheckpoint(mine)
		if err != nil {
			t.Fatal(err)
		}
		kcp, err := kdrastate.NewCheckpoint(theirs)
		if err != nil {
			t.Fatal(err)
		}
		kb, err := kcp.MarshalCheckpoint()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, kb) {
			d.add("case %d: bytes differ\npodstart %s\nkubelet  %s", i, b, kb)
			continue
		}
		ours, err := dra.DecodeCheckpoint(kb)
		if err != nil {
			d.add("case %d: podstart cannot read kubelet's checkpoint: %v", i, err)
			continue
		}
		var back kdrastate.Checkpoint
		if err := back.UnmarshalCheckpoint(b); err != nil {
			d.add("case %d: kubelet cannot read podstart's checkpoint: %v", i, err)
			continue
		}
		list, err := back.GetClaimInfoStateList()
		if err != nil {
			d.add("case %d: kubelet cannot read podstart's claims: %v", i, err)
			continue
		}
		if diff := cmp.Diff(fromKubelet(list), ours, opts); diff != "" {
			d.add("case %d: claims read differ (-kubelet +podstart):\n%s", i, diff)
		}
	}
	d.report(total, "DRA checkpoints")
}

// TestDRACheckpointFilesAgainstKubelet: a Manager reads the file kubelet's
// checkpointer stores, and kubelet's checkpointer reads the file a
// Manager writes.
func TestDRACheckpointFilesAgainstKubelet(t *testing.T) {
	r := newRand(t)
	getter := dra.ClaimGetterFunc(func(context.Context, string, string) (*resourcev1.ResourceClaim, error) {
		return nil, fmt.Errorf("not used")
	})
	for i := range cases(20) {
		_, theirs := randClaims(r)
		dir := t.TempDir()
		kc, err := kdrastate.NewCheckpointer(dir, dra.CheckpointFile)
		if err != nil {
			t.Fatal(err)
		}
		cp, err := kdrastate.NewCheckpoint(theirs)
		if err != nil {
			t.Fatal(err)
		}
		if err := kc.Store(cp); err != nil {
			t.Fatal(err)
		}
		m, err := dra.New(context.Background(), dir, getter)
		if err != nil {
			t.Fatalf("case %d: New over kubelet's checkpoint: %v", i, err)
		}
		kread, err := kc.GetOrCreate()
		if err != nil {
			t.Fatal(err)
		}
		klist, err := kread.GetClaimInfoStateList()
		if err != nil {
			t.Fatal(err)
		}
		want := fromKubelet(klist)
		if diff := cmp.Diff(want, m.Claims(), cmpopts.EquateEmpty(), cmpopts.SortSlices(func(a, b dra.ClaimInfo) bool {
			return a.Namespace+"/"+a.ClaimName < b.Namespace+"/"+b.ClaimName
		})); diff != "" {
			t.Errorf("case %d: Manager read (-kubelet +podstart):\n%s", i, diff)
		}
		m.Close()

		// A new Manager over an empty directory writes kubelet's new
		// checkpoint, which kubelet's checkpointer reads.
		dir2 := t.TempDir()
		m2, err := dra.New(context.Background(), dir2, getter)
		if err != nil {
			t.Fatal(err)
		}
		m2.Close()
		kc2, err := kdrastate.NewCheckpointer(dir2, dra.CheckpointFile)
		if err != nil {
			t.Fatal(err)
		}
		got, err := kc2.GetOrCreate()
		if err != nil {
			t.Fatalf("kubelet reads the Manager's checkpoint: %v", err)
		}
		if l, err := got.GetClaimInfoStateList(); err != nil || len(l) != 0 {
			t.Errorf("kubelet read %v %v", l, err)
		}
	}
}
