package devicemanager

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/podstart/podstart/devicemanager/checkpoint"
)

// An agent restart with running device pods keeps their devices: the
// checkpoint brings them back, the container's options come from it
// without asking the plugin, and a new pod never gets them.
func TestRestartKeepsAllocations(t *testing.T) {
	dir := shortDir(t)
	h := newHarness(t, dir)
	p := h.plugin(t, res, "dongle.sock", devices(pluginapi.Healthy, "d0", "d1", "d2"), &pluginapi.DevicePluginOptions{})
	running := podWith("u1", ctr("a", map[string]int64{res: 2}))
	ctx := context.Background()
	if err := h.m.Admit(ctx, running, nil); err != nil {
		t.Fatal(err)
	}
	before, err := h.m.DeviceOptions(ctx, running, &running.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	h.m.Stop()
	p.server.Stop()

	h2 := newHarness(t, dir)
	// Before the plugin is back: the resource is known (stopped
	// endpoint) with no devices; the running pod's options are intact.
	checkCapacity(t, h2.m, map[string]int64{res: 0}, map[string]int64{res: 0}, nil)
	after, err := h2.m.DeviceOptions(ctx, running, &running.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Errorf("options after restart %+v, before %+v", after, before)
	}
	p2 := h2.plugin(t, res, "dongle-2.sock", devices(pluginapi.Healthy, "d0", "d1", "d2"), &pluginapi.DevicePluginOptions{})
	if err := h2.m.Admit(ctx, podWith("u2", ctr("a", map[string]int64{res: 1})), []*corev1.Pod{running}); err != nil {
		t.Fatal(err)
	}
	if got := p2.allocated; len(got) != 1 || !reflect.DeepEqual(got[0], []string{"d2"}) {
		t.Errorf("new pod got %v, want d2 only", got)
	}
	if err := h2.m.Admit(ctx, podWith("u3", ctr("a", map[string]int64{res: 1})), []*corev1.Pod{running, podWith("u2")}); err == nil {
		t.Error("a device was allocated twice")
	}
}

// The stopped endpoint of a checkpointed resource is deleted after the
// grace period when its plugin does not come back.
func TestRestartWithoutPlugin(t *testing.T) {
	dir := shortDir(t)
	h := newHarness(t, dir)
	h.plugin(t, res, "dongle.sock", devices(pluginapi.Healthy, "d0"), &pluginapi.DevicePluginOptions{})
	h.m.Stop()
	h2 := newHarness(t, dir)
	h2.clock.Step(EndpointStopGracePeriod + 1)
	checkCapacity(t, h2.m, map[string]int64{}, map[string]int64{}, []string{res})
}

// A corrupt checkpoint is ignored, as kubelet ignores it: Start succeeds
// with no allocations.
func TestCorruptCheckpoint(t *testing.T) {
	for name, content := range map[string]string{
		"garbage":  "{not json",
		"checksum": `{"Data":{"PodDeviceEntries":null,"RegisteredDevices":{"example.com/dongle":["d0"]}},"Checksum":1}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := shortDir(t)
			if err := os.WriteFile(filepath.Join(dir, checkpoint.FileName), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, dir)
			checkCapacity(t, h.m, map[string]int64{}, map[string]int64{}, nil)
			if h.m.ShouldResetExtendedResourceCapacity() {
				t.Error("a corrupt checkpoint is still a checkpoint")
			}
		})
	}
	h := newHarness(t, shortDir(t))
	if !h.m.ShouldResetExtendedResourceCapacity() {
		t.Error("no checkpoint: reset expected")
	}
}

// The checkpoint is written on allocation, with the plugin's answer.
func TestCheckpointWritten(t *testing.T) {
	h := newHarness(t, shortDir(t))
	h.plugin(t, res, "dongle.sock", []*pluginapi.Device{{ID: "d0", Health: pluginapi.Healthy, Topology: &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: 1}}}}}, &pluginapi.DevicePluginOptions{})
	if err := h.m.Admit(context.Background(), podWith("u1", ctr("a", map[string]int64{res: 1})), nil); err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Read(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.Entries) != 1 || cp.Entries[0].PodUID != "u1" || !reflect.DeepEqual(cp.Entries[0].DeviceIDs, checkpoint.DevicesPerNUMA{1: {"d0"}}) {
		t.Errorf("entries %+v", cp.Entries)
	}
	if !reflect.DeepEqual(cp.RegisteredDevices, map[string][]string{res: {"d0"}}) {
		t.Errorf("registered %v", cp.RegisteredDevices)
	}
	if got := h.m.GetDevices("u1", "a"); len(got) != 1 || got[0].Topology.Nodes[0].ID != 1 {
		t.Errorf("GetDevices %v", got)
	}
}

// A checkpoint entry whose Allocate answer would be refused from a plugin
// is dropped at Start (the rest is kept).
func TestCheckpointEntryValidated(t *testing.T) {
	dir := shortDir(t)
	good, _ := proto.Marshal(&pluginapi.ContainerAllocateResponse{Envs: map[string]string{"A": "1"}})
	bad, _ := proto.Marshal(&pluginapi.ContainerAllocateResponse{CdiDevices: []*pluginapi.CDIDevice{{Name: "../../x"}}})
	err := checkpoint.Write(dir, checkpoint.Checkpoint{Entries: []checkpoint.PodDevicesEntry{
		{PodUID: "u1", ContainerName: "a", ResourceName: res, DeviceIDs: checkpoint.DevicesPerNUMA{-1: {"d0"}}, AllocResp: good},
		{PodUID: "u2", ContainerName: "a", ResourceName: res, DeviceIDs: checkpoint.DevicesPerNUMA{-1: {"d1"}}, AllocResp: bad},
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, dir)
	if got := h.m.GetDevices("u1", "a"); len(got) != 1 {
		t.Errorf("valid entry: %v", got)
	}
	if got := h.m.GetDevices("u2", "a"); len(got) != 0 {
		t.Errorf("invalid entry kept: %v", got)
	}
}
