package diff

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/kubernetes/pkg/kubelet/checkpointmanager"
	kcheckpoint "k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/checkpoint"

	"github.com/podstart/podstart/devicemanager/checkpoint"
)

// randCheckpoint is a random device manager checkpoint: entries with
// devices on NUMA nodes (or none: -1), allocate responses as bytes, and
// registered devices, in both packages' types. Empty lists stay empty.
func randCheckpoint(r *rand.Rand) (checkpoint.Checkpoint, []kcheckpoint.PodDevicesEntry, map[string][]string) {
	id := func() string {
		const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-_./:\"\\é"
		b := make([]rune, 1+r.IntN(12))
		for i := range b {
			b[i] = []rune(alphabet)[r.IntN(len([]rune(alphabet)))]
		}
		return string(b)
	}
	var ours checkpoint.Checkpoint
	var theirs []kcheckpoint.PodDevicesEntry
	for i := r.IntN(5); i > 0; i-- {
		perNUMA := checkpoint.DevicesPerNUMA{}
		kperNUMA := kcheckpoint.NewDevicesPerNUMA()
		for j := r.IntN(3); j >= 0; j-- {
			n := int64(r.IntN(4)) - 1
			for k := 1 + r.IntN(3); k > 0; k-- {
				d := id()
				perNUMA[n] = append(perNUMA[n], d)
				kperNUMA[n] = append(kperNUMA[n], d)
			}
		}
		var resp []byte
		if r.IntN(4) > 0 {
			resp = make([]byte, r.IntN(40))
			for k := range resp {
				resp[k] = byte(r.IntN(256))
			}
		}
		e := checkpoint.PodDevicesEntry{PodUID: id(), ContainerName: id(), ResourceName: "example.com/" + id(), DeviceIDs: perNUMA, AllocResp: resp}
		ours.Entries = append(ours.Entries, e)
		theirs = append(theirs, kcheckpoint.PodDevicesEntry{PodUID: e.PodUID, ContainerName: e.ContainerName, ResourceName: e.ResourceName, DeviceIDs: kperNUMA, AllocResp: resp})
	}
	reg := map[string][]string{}
	ours.RegisteredDevices = map[string][]string{}
	for i := r.IntN(4); i > 0; i-- {
		name := "example.com/" + id()
		devs := []string{}
		for k := r.IntN(4); k > 0; k-- {
			devs = append(devs, id())
		}
		reg[name] = devs
		ours.RegisteredDevices[name] = append([]string{}, devs...)
	}
	return ours, theirs, reg
}

// TestDeviceCheckpointAgainstKubelet writes random checkpoints with
// kubelet v1.37.2's checkpoint package (through its checkpoint manager,
// as its device manager does) and with podstart's, compares the files byte
// for byte (checksum included), and has each read the other's file.
func TestDeviceCheckpointAgainstKubelet(t *testing.T) {
	r := newRand(t)
	d := &differences{t: t}
	for i := 0; i < cases(300); i++ {
		ours, theirs, reg := randCheckpoint(r)
		kdir, pdir := t.TempDir(), t.TempDir()
		cm, err := checkpointmanager.NewCheckpointManager(kdir)
		if err != nil {
			t.Fatal(err)
		}
		var entries []kcheckpoint.PodDevicesEntry
		if len(theirs) > 0 {
			entries = theirs
		}
		if err := cm.CreateCheckpoint(checkpoint.FileName, kcheckpoint.New(entries, reg)); err != nil {
			t.Fatal(err)
		}
		if err := checkpoint.Write(pdir, ours); err != nil {
			t.Fatal(err)
		}
		kb, _ := os.ReadFile(filepath.Join(kdir, checkpoint.FileName))
		pb, _ := os.ReadFile(filepath.Join(pdir, checkpoint.FileName))
		if !bytes.Equal(kb, pb) {
			d.add("case %d: files differ\nkubelet %s\npodstart %s", i, kb, pb)
			continue
		}
		// podstart reads kubelet's file.
		got, err := checkpoint.Read(kdir)
		if err != nil || !reflect.DeepEqual(fmt.Sprint(got), fmt.Sprint(ours)) {
			d.add("case %d: podstart read kubelet's file: %v\n%+v\nwant %+v", i, err, got, ours)
		}
		// kubelet reads podstart's file (its manager verifies the checksum).
		pm, err := checkpointmanager.NewCheckpointManager(pdir)
		if err != nil {
			t.Fatal(err)
		}
		kc := kcheckpoint.New(make([]kcheckpoint.PodDevicesEntry, 0), make(map[string][]string))
		if err := pm.GetCheckpoint(checkpoint.FileName, kc); err != nil {
			d.add("case %d: kubelet read podstart's file: %v", i, err)
			continue
		}
		ke, kr := kc.GetData()
		if fmt.Sprint(ke) != fmt.Sprint(entries) || fmt.Sprint(kr) != fmt.Sprint(reg) {
			d.add("case %d: kubelet read %v %v", i, ke, kr)
		}
	}
	// A file kubelet calls corrupt is corrupt for podstart too.
	_, theirs, reg := randCheckpoint(r)
	kdir := t.TempDir()
	cm, _ := checkpointmanager.NewCheckpointManager(kdir)
	if err := cm.CreateCheckpoint(checkpoint.FileName, kcheckpoint.New(theirs, reg)); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(kdir, checkpoint.FileName)
	b, _ := os.ReadFile(p)
	b = bytes.Replace(b, []byte(`"Checksum":`), []byte(`"Checksum":1`), 1)
	os.WriteFile(p, b, 0o600)
	if _, err := checkpoint.Read(kdir); err == nil {
		t.Error("podstart read a corrupt file")
	}
	if err := cm.GetCheckpoint(checkpoint.FileName, kcheckpoint.New(nil, nil)); err == nil {
		t.Error("kubelet read a corrupt file")
	}
}

// TestDeviceCheckpointSampleFile writes the sample of podstart's
// devicemanager/checkpoint tests with kubelet's package (-update-sample
// refreshes testdata/kubelet_sample.json) and compares.
func TestDeviceCheckpointSampleFile(t *testing.T) {
	dir := t.TempDir()
	cm, _ := checkpointmanager.NewCheckpointManager(dir)
	entries := []kcheckpoint.PodDevicesEntry{{
		PodUID: "uid-1", ContainerName: "c", ResourceName: "example.com/dongle",
		DeviceIDs: kcheckpoint.DevicesPerNUMA{-1: {"d0"}, 1: {"d1", "d2"}}, AllocResp: []byte{0x0a, 0x01, 0x41},
	}}
	if err := cm.CreateCheckpoint(checkpoint.FileName, kcheckpoint.New(entries, map[string][]string{"example.com/dongle": {"d0", "d1", "d2"}})); err != nil {
		t.Fatal(err)
	}
	kb, _ := os.ReadFile(filepath.Join(dir, checkpoint.FileName))
	sample := filepath.Join("..", "..", "devicemanager", "checkpoint", "testdata", "kubelet_sample.json")
	if os.Getenv("PODSTART_UPDATE_SAMPLE") != "" {
		if err := os.WriteFile(sample, kb, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pb, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(kb, pb) {
		t.Errorf("kubelet writes\n%s\ntestdata has\n%s", kb, pb)
	}
	// An empty checkpoint (a kubelet with no plugins and no pods).
	edir := t.TempDir()
	ecm, _ := checkpointmanager.NewCheckpointManager(edir)
	if err := ecm.CreateCheckpoint(checkpoint.FileName, kcheckpoint.New(nil, map[string][]string{})); err != nil {
		t.Fatal(err)
	}
	kb, _ = os.ReadFile(filepath.Join(edir, checkpoint.FileName))
	if pb, _ := checkpoint.Marshal(checkpoint.Checkpoint{}); !bytes.Equal(kb, pb) {
		t.Errorf("empty: kubelet writes %s, podstart %s", kb, pb)
	}
}
