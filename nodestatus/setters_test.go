package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"
)

var (
	now    = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	before = now.Add(-time.Second)
)

func nowFunc() time.Time { return now }

func readyCond(ready bool, msg string, transition, heartbeat time.Time) corev1.NodeCondition {
	c := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: msg,
		LastTransitionTime: metav1.NewTime(transition), LastHeartbeatTime: metav1.NewTime(heartbeat)}
	if !ready {
		c.Status, c.Reason = corev1.ConditionFalse, "KubeletNotReady"
	}
	return c
}

type recorded struct{ eventType, reason string }

// From kubelet's TestReadyCondition.
func TestReadyCondition(t *testing.T) {
	withCapacity := &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(2000, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(10e9, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(100, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(5000, resource.BinarySI),
	}}}
	withoutStorage := withCapacity.DeepCopy()
	delete(withoutStorage.Status.Capacity, corev1.ResourceEphemeralStorage)
	withReady := func(ready bool) *corev1.Node {
		n := withCapacity.DeepCopy()
		n.Status.Conditions = []corev1.NodeCondition{readyCond(ready, "", before, before)}
		return n
	}
	cases := []struct {
		name        string
		node        *corev1.Node
		errs        []error
		soft        error
		noIsolation bool
		want        corev1.NodeCondition
		wantEvents  []recorded
	}{
		{name: "new, ready", node: withCapacity.DeepCopy(), want: readyCond(true, "kubelet is posting ready status", now, now)},
		{name: "new, ready: soft requirement warning", node: withCapacity.DeepCopy(), soft: fmt.Errorf("foo"),
			want: readyCond(true, "kubelet is posting ready status. WARNING: foo", now, now)},
		{name: "new, not ready: storage errors", node: withCapacity.DeepCopy(), errs: []error{nil, nil, errors.New("some storage error")},
			want: readyCond(false, "some storage error", now, now)},
		{name: "new, not ready: shutdown active", node: withCapacity.DeepCopy(), errs: []error{nil, nil, nil, errors.New("node is shutting down")},
			want: readyCond(false, "node is shutting down", now, now)},
		{name: "new, not ready: runtime and network errors", node: withCapacity.DeepCopy(), errs: []error{errors.New("runtime"), errors.New("network")},
			want: readyCond(false, "[runtime, network]", now, now)},
		{name: "new, not ready: missing capacities", node: &corev1.Node{},
			want: readyCond(false, "missing node capacity for resources: cpu, memory, pods, ephemeral-storage", now, now)},
		{name: "new, ready: localStorageCapacityIsolation is not supported", node: withoutStorage, noIsolation: true,
			want: readyCond(true, "kubelet is posting ready status", now, now)},
		{name: "transition to ready", node: withReady(false), want: readyCond(true, "kubelet is posting ready status", now, now),
			wantEvents: []recorded{{corev1.EventTypeNormal, "NodeReady"}}},
		{name: "transition to not ready", node: withReady(true), errs: []error{errors.New("foo")}, want: readyCond(false, "foo", now, now),
			wantEvents: []recorded{{corev1.EventTypeNormal, "NodeNotReady"}}},
		{name: "ready, no transition", node: withReady(true), want: readyCond(true, "kubelet is posting ready status", before, now)},
		{name: "not ready, no transition", node: withReady(false), errs: []error{errors.New("foo")}, want: readyCond(false, "foo", before, now)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var events []recorded
			record := func(typ, reason string) { events = append(events, recorded{typ, reason}) }
			s := ReadyCondition(nowFunc, func() []error { return tc.errs }, func() error { return tc.soft }, !tc.noIsolation, record)
			if err := s(context.Background(), tc.node); err != nil {
				t.Fatal(err)
			}
			if want := []corev1.NodeCondition{tc.want}; !equality.Semantic.DeepEqual(want, tc.node.Status.Conditions) {
				t.Errorf("conditions: %s", diff(want, tc.node.Status.Conditions))
			}
			if !reflect.DeepEqual(tc.wantEvents, events) {
				t.Errorf("events: %s", diff(tc.wantEvents, events))
			}
		})
	}
}

// From kubelet's TestMemoryPressureCondition, TestDiskPressureCondition
// and TestPIDPressureCondition.
func TestPressureConditions(t *testing.T) {
	kinds := []struct {
		p      pressure
		setter func(func() time.Time, func() bool, RecordFunc) Setter
	}{
		{memoryPressure, MemoryPressureCondition},
		{diskPressure, DiskPressureCondition},
		{pidPressure, PIDPressureCondition},
	}
	// kubelet's expectations, spelled out for memory; the others follow.
	if memoryPressure.falseReason != "KubeletHasSufficientMemory" || memoryPressure.trueMessage != "kubelet has insufficient memory available" ||
		diskPressure.falseMessage != "kubelet has no disk pressure" || diskPressure.trueReason != "KubeletHasDiskPressure" ||
		pidPressure.falseReason != "KubeletHasSufficientPID" || pidPressure.trueEvent != "NodeHasInsufficientPID" {
		t.Fatal("reasons differ from kubelet's")
	}
	for _, k := range kinds {
		cond := func(under bool, transition, heartbeat time.Time) corev1.NodeCondition {
			c := corev1.NodeCondition{Type: k.p.typ, Status: corev1.ConditionFalse, Reason: k.p.falseReason, Message: k.p.falseMessage,
				LastTransitionTime: metav1.NewTime(transition), LastHeartbeatTime: metav1.NewTime(heartbeat)}
			if under {
				c.Status, c.Reason, c.Message = corev1.ConditionTrue, k.p.trueReason, k.p.trueMessage
			}
			return c
		}
		with := func(under bool) *corev1.Node {
			return &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{cond(under, before, before)}}}
		}
		cases := []struct {
			name       string
			node       *corev1.Node
			under      bool
			want       corev1.NodeCondition
			wantEvents []recorded
		}{
			{"new, no pressure", &corev1.Node{}, false, cond(false, now, now), []recorded{{corev1.EventTypeNormal, k.p.falseEvent}}},
			{"new, pressure", &corev1.Node{}, true, cond(true, now, now), []recorded{{corev1.EventTypeNormal, k.p.trueEvent}}},
			{"transition to pressure", with(false), true, cond(true, now, now), []recorded{{corev1.EventTypeNormal, k.p.trueEvent}}},
			{"transition to no pressure", with(true), false, cond(false, now, now), []recorded{{corev1.EventTypeNormal, k.p.falseEvent}}},
			{"pressure, no transition", with(true), true, cond(true, before, now), nil},
			{"no pressure, no transition", with(false), false, cond(false, before, now), nil},
		}
		for _, tc := range cases {
			t.Run(string(k.p.typ)+"/"+tc.name, func(t *testing.T) {
				var events []recorded
				s := k.setter(nowFunc, func() bool { return tc.under }, func(typ, reason string) { events = append(events, recorded{typ, reason}) })
				if err := s(context.Background(), tc.node); err != nil {
					t.Fatal(err)
				}
				if want := []corev1.NodeCondition{tc.want}; !equality.Semantic.DeepEqual(want, tc.node.Status.Conditions) {
					t.Errorf("conditions: %s", diff(want, tc.node.Status.Conditions))
				}
				if !reflect.DeepEqual(tc.wantEvents, events) {
					t.Errorf("events: %s", diff(tc.wantEvents, events))
				}
			})
		}
	}
}

// From kubelet's TestNodeAddress and TestNodeAddress_NoCloudProvider.
func TestNodeAddress(t *testing.T) {
	const host = "hostname"
	ip := net.ParseIP
	existing := corev1.NodeAddress{Address: "10.1.1.2"}
	cases := []struct {
		name        string
		nodeIPs     []net.IP
		resolved    net.IP
		cloud       bool
		preset      bool
		annotations map[string]string
		want        []corev1.NodeAddress
		wantAnn     map[string]string
		wantErr     bool
	}{
		{name: "using cloud provider and nodeIP specified", nodeIPs: []net.IP{ip("10.0.0.1")}, cloud: true,
			want: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, {Type: corev1.NodeHostName, Address: host}}},
		{name: "no cloud provider and nodeIP IPv4 unspecified", nodeIPs: []net.IP{ip("0.0.0.0")}, resolved: ip("10.0.0.2"),
			want: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.2"}, {Type: corev1.NodeHostName, Address: host}}},
		{name: "no cloud provider and nodeIP IPv6 unspecified", nodeIPs: []net.IP{ip("::")}, resolved: ip("2001:db2::2"),
			want: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "2001:db2::2"}, {Type: corev1.NodeHostName, Address: host}}},
		{name: "no cloud provider and no nodeIP resolve IPv4", resolved: ip("10.0.0.2"),
			want: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.2"}, {Type: corev1.NodeHostName, Address: host}}},
		{name: "using cloud provider and no nodeIP resolve IPv4", resolved: ip("10.0.0.2"), cloud: true,
			want: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: host}}},
		{name: "cloud provider gets nodeIP annotation", nodeIPs: []net.IP{ip("10.1.1.1")}, cloud: true,
			want:    []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.1.1"}, {Type: corev1.NodeHostName, Address: host}},
			wantAnn: map[string]string{AnnotationProvidedIPAddr: "10.1.1.1"}},
		{name: "using cloud provider and node address is already set", nodeIPs: []net.IP{ip("10.1.1.1")}, cloud: true, preset: true,
			want: []corev1.NodeAddress{existing}},
		{name: "Stale nodeIP annotation is removed when not using cloud provider", nodeIPs: []net.IP{ip("10.1.1.1")},
			annotations: map[string]string{AnnotationProvidedIPAddr: "10.1.1.3"},
			want:        []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.1.1"}, {Type: corev1.NodeHostName, Address: host}},
			wantAnn:     map[string]string{}},
		{name: "Dual-stack cloud, with dual-stack nodeIPs", nodeIPs: []net.IP{ip("2600:1f14:1d4:d101::ba3d"), ip("10.1.1.2")}, cloud: true,
			want: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "2600:1f14:1d4:d101::ba3d"}, {Type: corev1.NodeInternalIP, Address: "10.1.1.2"},
				{Type: corev1.NodeHostName, Address: host}},
			wantAnn: map[string]string{AnnotationProvidedIPAddr: "2600:1f14:1d4:d101::ba3d,10.1.1.2"}},
		{name: "Dual --node-ips", nodeIPs: []net.IP{ip("10.1.1.1"), ip("fd01::1234")},
			want: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.1.1"}, {Type: corev1.NodeInternalIP, Address: "fd01::1234"},
				{Type: corev1.NodeHostName, Address: host}}},
		{name: "Invalid single --node-ip (using loopback)", nodeIPs: []net.IP{ip("127.0.0.1")}, wantErr: true},
		{name: "Dual --node-ips but with invalid secondary IP (using multicast IP)", nodeIPs: []net.IP{ip("10.1.1.1"), ip("224.0.0.0")}, wantErr: true},
		{name: "nothing resolves", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: host, Annotations: tc.annotations}}
			if tc.preset {
				node.Status.Addresses = []corev1.NodeAddress{existing}
			}
			s := NodeAddress(AddressConfig{NodeIPs: tc.nodeIPs, Hostname: host, ExternalCloudProvider: tc.cloud,
				ValidateNodeIP: func(ip net.IP) error {
					if ip.IsLoopback() || ip.IsMulticast() {
						return errors.New("invalid")
					}
					return nil
				},
				LookupIP: func(string) ([]net.IP, error) { return nil, errors.New("no DNS") },
				ResolveBindAddress: func(net.IP) (net.IP, error) {
					if tc.resolved == nil {
						return nil, errors.New("no route")
					}
					return tc.resolved, nil
				}})
			err := s(context.Background(), node)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if !equality.Semantic.DeepEqual(tc.want, node.Status.Addresses) {
				t.Errorf("addresses: %s", diff(tc.want, node.Status.Addresses))
			}
			if tc.wantAnn != nil && !equality.Semantic.DeepEqual(tc.wantAnn, node.Annotations) {
				t.Errorf("annotations: %s", diff(tc.wantAnn, node.Annotations))
			}
		})
	}
}

// From kubelet's TestMachineInfo.
func TestMachineInfo(t *testing.T) {
	q := func(v int64) resource.Quantity { return *resource.NewQuantity(v, resource.BinarySI) }
	cpu := func(m int64) resource.Quantity { return *resource.NewMilliQuantity(m, resource.DecimalSI) }
	pods := func(v int64) resource.Quantity { return *resource.NewQuantity(v, resource.DecimalSI) }
	basic := &Machine{NumCores: 2, MemoryCapacity: 1024}
	yes, no := true, false
	cases := []struct {
		name       string
		node       *corev1.Node
		cfg        MachineConfig
		machine    *Machine
		err        error
		wantCap    corev1.ResourceList
		wantAlloc  corev1.ResourceList
		wantInfo   corev1.NodeSystemInfo
		wantEvents []string
	}{
		{name: "machine identifiers, basic capacity and allocatable", node: &corev1.Node{},
			machine:   &Machine{MachineID: "MachineID", SystemUUID: "SystemUUID", NumCores: 2, MemoryCapacity: 1024},
			wantInfo:  corev1.NodeSystemInfo{MachineID: "MachineID", SystemUUID: "SystemUUID"},
			wantCap:   corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110)},
			wantAlloc: corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110)}},
		{name: "podsPerCore greater than zero, but less than maxPods/cores", node: &corev1.Node{}, cfg: MachineConfig{MaxPods: 10, PodsPerCore: 4},
			machine: basic, wantCap: corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(8)},
			wantAlloc: corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(8)}},
		{name: "podsPerCore greater than maxPods/cores", node: &corev1.Node{}, cfg: MachineConfig{MaxPods: 10, PodsPerCore: 6},
			machine: basic, wantCap: corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(10)},
			wantAlloc: corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(10)}},
		{name: "allocatable should equal capacity minus reservations", node: &corev1.Node{}, machine: basic,
			cfg:       MachineConfig{Reserved: corev1.ResourceList{corev1.ResourceCPU: cpu(1), corev1.ResourceMemory: q(1), corev1.ResourcePods: pods(1), corev1.ResourceEphemeralStorage: q(1)}},
			wantCap:   corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110)},
			wantAlloc: corev1.ResourceList{corev1.ResourceCPU: cpu(1999), corev1.ResourceMemory: q(1023), corev1.ResourcePods: pods(109)}},
		{name: "allocatable memory does not double-count hugepages reservations",
			node:      &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceHugePagesPrefix + "test": q(1)}}},
			machine:   basic,
			wantCap:   corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourceHugePagesPrefix + "test": q(1), corev1.ResourcePods: pods(110)},
			wantAlloc: corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1023), corev1.ResourceHugePagesPrefix + "test": q(1), corev1.ResourcePods: pods(110)}},
		{name: "negative capacity resources should be set to 0 in allocatable",
			node:      &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{"negative-resource": q(-1)}}},
			machine:   basic,
			wantCap:   corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110), "negative-resource": q(-1)},
			wantAlloc: corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110), "negative-resource": q(0)}},
		{name: "hugepages reservation greater than node memory capacity should result in memory capacity set to 0",
			node:      &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceHugePagesPrefix + "test": q(1025)}}},
			machine:   basic,
			wantCap:   corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110), corev1.ResourceHugePagesPrefix + "test": q(1025)},
			wantAlloc: corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(0), corev1.ResourcePods: pods(110), corev1.ResourceHugePagesPrefix + "test": q(1025)}},
		{name: "ephemeral storage is reflected in capacity and allocatable", node: &corev1.Node{},
			machine:   &Machine{NumCores: 2, MemoryCapacity: 1024, EphemeralStorage: 5000},
			wantCap:   corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110), corev1.ResourceEphemeralStorage: q(5000)},
			wantAlloc: corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110), corev1.ResourceEphemeralStorage: q(5000)}},
		{name: "extended resources not present in capacity are removed from allocatable",
			node:      &corev1.Node{Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{"example.com/extended": q(1)}}},
			machine:   basic,
			wantCap:   corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110)},
			wantAlloc: corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110)}},
		{name: "on failure to get machine info, allocatable and capacity for memory and cpu are set to 0, pods to maxPods", node: &corev1.Node{},
			err:       errors.New("foo"),
			wantCap:   corev1.ResourceList{corev1.ResourceCPU: cpu(0), corev1.ResourceMemory: resource.MustParse("0Gi"), corev1.ResourcePods: pods(110)},
			wantAlloc: corev1.ResourceList{corev1.ResourceCPU: cpu(0), corev1.ResourceMemory: resource.MustParse("0Gi"), corev1.ResourcePods: pods(110)}},
		{name: "node reboot event is recorded", node: &corev1.Node{Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{BootID: "foo"}}},
			machine:    &Machine{BootID: "bar", NumCores: 2, MemoryCapacity: 1024},
			wantInfo:   corev1.NodeSystemInfo{BootID: "bar"},
			wantCap:    corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110)},
			wantAlloc:  corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110)},
			wantEvents: []string{"Warning Rebooted Node test-node has been rebooted, boot id: bar"}},
		{name: "with swap info", node: &corev1.Node{}, machine: &Machine{NumCores: 2, MemoryCapacity: 1024, SwapCapacity: 2 * 1024},
			wantInfo:  corev1.NodeSystemInfo{Swap: &corev1.NodeSwapStatus{Capacity: func() *int64 { v := int64(2048); return &v }()}},
			wantCap:   corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110)},
			wantAlloc: corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110)}},
		// v1.37.2: KubeletInUserNamespace on by default, the setter
		// copies what runningInUserNS says (nil off Linux), each time.
		{name: "running in a user namespace", node: &corev1.Node{}, machine: &Machine{NumCores: 2, MemoryCapacity: 1024, RunningInUserNamespace: &yes},
			wantInfo:  corev1.NodeSystemInfo{RunningInUserNamespace: &yes},
			wantCap:   corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110)},
			wantAlloc: corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110)}},
		{name: "not in a user namespace", node: &corev1.Node{}, machine: &Machine{NumCores: 2, MemoryCapacity: 1024, RunningInUserNamespace: &no},
			wantInfo:  corev1.NodeSystemInfo{RunningInUserNamespace: &no},
			wantCap:   corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110)},
			wantAlloc: corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110)}},
		{name: "not known: a stale value is cleared", node: &corev1.Node{Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{RunningInUserNamespace: &yes}}},
			machine:   basic,
			wantCap:   corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110)},
			wantAlloc: corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110)}},
		{name: "machine info unknown: left as it was", node: &corev1.Node{Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{RunningInUserNamespace: &yes}}},
			err:       errors.New("foo"),
			wantInfo:  corev1.NodeSystemInfo{RunningInUserNamespace: &yes},
			wantCap:   corev1.ResourceList{corev1.ResourceCPU: cpu(0), corev1.ResourceMemory: resource.MustParse("0Gi"), corev1.ResourcePods: pods(110)},
			wantAlloc: corev1.ResourceList{corev1.ResourceCPU: cpu(0), corev1.ResourceMemory: resource.MustParse("0Gi"), corev1.ResourcePods: pods(110)}},
		// Device plugins (devicemanager.Manager.Capacity): capacity counts
		// every device, allocatable the healthy ones; a removed resource
		// stays with capacity and allocatable 0, as kubelet keeps it.
		{name: "device plugin resources", node: &corev1.Node{Status: corev1.NodeStatus{
			Capacity: corev1.ResourceList{"example.com/gone": pods(4)}, Allocatable: corev1.ResourceList{"example.com/gone": pods(4)}}},
			machine: basic,
			cfg: MachineConfig{DevicePlugins: func() (corev1.ResourceList, corev1.ResourceList, []string) {
				return corev1.ResourceList{"example.com/dongle": pods(3)}, corev1.ResourceList{"example.com/dongle": pods(2)}, []string{"example.com/gone"}
			}},
			wantCap:   corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110), "example.com/dongle": pods(3), "example.com/gone": pods(0)},
			wantAlloc: corev1.ResourceList{corev1.ResourceCPU: cpu(2000), corev1.ResourceMemory: q(1024), corev1.ResourcePods: pods(110), "example.com/dongle": pods(2), "example.com/gone": pods(0)}},
		{name: "device plugins not asked when the machine is unknown", node: &corev1.Node{}, err: errors.New("foo"),
			cfg: MachineConfig{DevicePlugins: func() (corev1.ResourceList, corev1.ResourceList, []string) {
				panic("called")
			}},
			wantCap:   corev1.ResourceList{corev1.ResourceCPU: cpu(0), corev1.ResourceMemory: resource.MustParse("0Gi"), corev1.ResourcePods: pods(110)},
			wantAlloc: corev1.ResourceList{corev1.ResourceCPU: cpu(0), corev1.ResourceMemory: resource.MustParse("0Gi"), corev1.ResourcePods: pods(110)}},
		{name: "huge pages from the machine", node: &corev1.Node{},
			machine:   &Machine{NumCores: 1, MemoryCapacity: 4 << 20, HugePages: []HugePages{{PageSize: 2 << 20, NumPages: 1}}},
			wantCap:   corev1.ResourceList{corev1.ResourceCPU: cpu(1000), corev1.ResourceMemory: q(4 << 20), "hugepages-2Mi": q(2 << 20), corev1.ResourcePods: pods(110)},
			wantAlloc: corev1.ResourceList{corev1.ResourceCPU: cpu(1000), corev1.ResourceMemory: q(2 << 20), "hugepages-2Mi": q(2 << 20), corev1.ResourcePods: pods(110)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var events []string
			s := MachineInfo("test-node", tc.cfg, func() (*Machine, error) { return tc.machine, tc.err },
				func(typ, reason, msg string) { events = append(events, typ+" "+reason+" "+msg) })
			if err := s(context.Background(), tc.node); err != nil {
				t.Fatal(err)
			}
			st := tc.node.Status
			if !equality.Semantic.DeepEqual(tc.wantCap, st.Capacity) {
				t.Errorf("capacity: %s", diff(tc.wantCap, st.Capacity))
			}
			if !equality.Semantic.DeepEqual(tc.wantAlloc, st.Allocatable) {
				t.Errorf("allocatable: %s", diff(tc.wantAlloc, st.Allocatable))
			}
			if !equality.Semantic.DeepEqual(tc.wantInfo, st.NodeInfo) {
				t.Errorf("node info: %s", diff(tc.wantInfo, st.NodeInfo))
			}
			if !reflect.DeepEqual(tc.wantEvents, events) {
				t.Errorf("events: %s", diff(tc.wantEvents, events))
			}
		})
	}
}

// From kubelet's TestVersionInfo and TestImages.
func TestVersionInfoAndImages(t *testing.T) {
	//lint:ignore SA1019 a stale value kubelet clears
	node := &corev1.Node{Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeProxyVersion: "old"}}}
	ok := func(context.Context) (*runtimeapi.VersionResponse, error) {
		return &runtimeapi.VersionResponse{RuntimeName: "containerd", RuntimeVersion: "v1.7.2"}, nil
	}
	if err := VersionInfo("5.15.0", "Ubuntu 22.04", ok, "v1.36.3")(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	want := corev1.NodeSystemInfo{KernelVersion: "5.15.0", OSImage: "Ubuntu 22.04", ContainerRuntimeVersion: "containerd://1.7.2", KubeletVersion: "v1.36.3"}
	if node.Status.NodeInfo != want {
		t.Errorf("node info %+v", node.Status.NodeInfo)
	}
	failing := func(context.Context) (*runtimeapi.VersionResponse, error) { return nil, errors.New("down") }
	_ = VersionInfo("", "", failing, "")(context.Background(), node)
	if v := node.Status.NodeInfo.ContainerRuntimeVersion; v != "://Unknown" {
		t.Errorf("runtime version on error %q", v)
	}

	list := func(context.Context) ([]*runtimeapi.Image, error) {
		return []*runtimeapi.Image{
			{Id: "a", Size: 10, RepoTags: []string{"t1", "t2", "t3", "t4"}, RepoDigests: []string{"d1", "d2"}},
			{Id: "b", Size: 30, RepoTags: []string{"b:1"}},
			{Id: "c", Size: 10, RepoTags: []string{"c:1"}},
		}, nil
	}
	if err := Images(2, list)(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	wantImages := []corev1.ContainerImage{{Names: []string{"b:1"}, SizeBytes: 30}, {Names: []string{"c:1"}, SizeBytes: 10}}
	if !equality.Semantic.DeepEqual(wantImages, node.Status.Images) {
		t.Errorf("images: %s", diff(wantImages, node.Status.Images))
	}
	if err := Images(-1, list)(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	if got := node.Status.Images[2].Names; !reflect.DeepEqual(got, []string{"d1", "d2", "t1", "t2", "t3"}) {
		t.Errorf("names of a: %v", got)
	}
}

func TestRuntimeState(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(now)
	s := NewRuntimeState(clk)
	msg := func() string {
		n := &corev1.Node{Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: {}, corev1.ResourceMemory: {}, corev1.ResourcePods: {}}}}
		_ = ReadyCondition(clk.Now, s.Errors, nil, false, nil)(context.Background(), n)
		return n.Status.Conditions[0].Message
	}
	if got, want := msg(), "[container runtime status check may not have completed yet, network state unknown]"; got != want {
		t.Errorf("initial: %q, want %q", got, want)
	}
	status := func(conds ...*runtimeapi.RuntimeCondition) statusFunc {
		return func() (*runtimeapi.StatusResponse, error) {
			return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: conds}}, nil
		}
	}
	ready := &runtimeapi.RuntimeCondition{Type: runtimeapi.RuntimeReady, Status: true}
	netDown := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: false, Reason: "NetworkPluginNotReady", Message: "cni config uninitialized"}
	if err := s.Update(context.Background(), status(ready, netDown)); err != nil {
		t.Fatal(err)
	}
	if got, want := msg(), "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni config uninitialized"; got != want {
		t.Errorf("network down: %q, want %q", got, want)
	}
	_ = s.Update(context.Background(), status(&runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: true}))
	if got, want := msg(), "container runtime not ready: <nil>"; got != want {
		t.Errorf("no RuntimeReady: %q, want %q", got, want)
	}
	_ = s.Update(context.Background(), status(ready, &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: true}))
	if got := msg(); got != "kubelet is posting ready status" {
		t.Errorf("ready: %q", got)
	}
	if err := s.Update(context.Background(), statusFunc(func() (*runtimeapi.StatusResponse, error) { return nil, errors.New("unavailable") })); err == nil {
		t.Error("failed Status not reported")
	}
	clk.SetTime(now.Add(RuntimeSyncThreshold))
	if got := msg(); got != "container runtime is down" {
		t.Errorf("stale: %q", got)
	}
	s.AddHealthCheck("PLEG", func() (bool, error) { return false, errors.New("pleg was last seen active 3m0s ago") })
	if got, want := msg(), "[container runtime is down, PLEG is not healthy: pleg was last seen active 3m0s ago]"; got != want {
		t.Errorf("health check: %q, want %q", got, want)
	}
}

type statusFunc func() (*runtimeapi.StatusResponse, error)

func (f statusFunc) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) { return f() }

func TestStatusChanged(t *testing.T) {
	a := corev1.NodeStatus{Conditions: []corev1.NodeCondition{readyCond(true, "m", before, before), {Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}}}
	b := a.DeepCopy()
	b.Conditions[0].LastHeartbeatTime = metav1.NewTime(now)
	b.Conditions[0], b.Conditions[1] = b.Conditions[1], b.Conditions[0]
	if StatusChanged(&a, b) {
		t.Error("heartbeat time or order counted as a change")
	}
	b.Conditions[1].Message = "other"
	if !StatusChanged(&a, b) {
		t.Error("message change missed")
	}
	c := a.DeepCopy()
	c.NodeInfo.BootID = "x"
	if !StatusChanged(&a, c) {
		t.Error("node info change missed")
	}
}

func diff(want, got any) string { return fmt.Sprintf("got %+v, want %+v", got, want) }
