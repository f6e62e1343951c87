package eviction

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

var cmpQuantity = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// Ported from kubelet's TestParseThresholdConfig.
func TestParseThresholds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		config  Config
		want    []Threshold
		wantErr error
	}{
		{name: "no values", want: []Threshold{}},
		{
			name: "all memory eviction values",
			config: Config{
				Hard: map[string]string{"memory.available": "150Mi"}, Soft: map[string]string{"memory.available": "300Mi"},
				SoftGracePeriod: map[string]string{"memory.available": "30s"}, MinimumReclaim: map[string]string{"memory.available": "0"},
				EnforceNodeAllocatable: true,
			},
			want: []Threshold{
				{Signal: SignalMemoryAvailable, Value: ThresholdValue{Quantity: qp("150Mi")}, MinReclaim: &ThresholdValue{Quantity: qp("0")}},
				{Signal: SignalMemoryAvailable, Value: ThresholdValue{Quantity: qp("300Mi")}, GracePeriod: 30 * time.Second, MinReclaim: &ThresholdValue{Quantity: qp("0")}},
				{Signal: SignalAllocatableMemoryAvailable, Value: ThresholdValue{Quantity: qp("150Mi")}, MinReclaim: &ThresholdValue{Quantity: qp("0")}},
			},
		},
		{
			name: "all memory eviction values in percentages",
			config: Config{
				Hard: map[string]string{"memory.available": "10%"}, Soft: map[string]string{"memory.available": "30%"},
				SoftGracePeriod: map[string]string{"memory.available": "30s"}, MinimumReclaim: map[string]string{"memory.available": "5%"},
			},
			want: []Threshold{
				{Signal: SignalMemoryAvailable, Value: ThresholdValue{Percentage: 0.1}, MinReclaim: &ThresholdValue{Percentage: 0.05}},
				{Signal: SignalMemoryAvailable, Value: ThresholdValue{Percentage: 0.3}, GracePeriod: 30 * time.Second, MinReclaim: &ThresholdValue{Percentage: 0.05}},
			},
		},
		{
			name: "disk eviction values",
			config: Config{
				Hard:            map[string]string{"imagefs.available": "150Mi", "nodefs.available": "100Mi"},
				Soft:            map[string]string{"imagefs.available": "300Mi", "nodefs.available": "200Mi"},
				SoftGracePeriod: map[string]string{"imagefs.available": "30s", "nodefs.available": "30s"},
				MinimumReclaim:  map[string]string{"imagefs.available": "2Gi", "nodefs.available": "1Gi"},
			},
			want: []Threshold{
				{Signal: SignalImageFsAvailable, Value: ThresholdValue{Quantity: qp("150Mi")}, MinReclaim: &ThresholdValue{Quantity: qp("2Gi")}},
				{Signal: SignalNodeFsAvailable, Value: ThresholdValue{Quantity: qp("100Mi")}, MinReclaim: &ThresholdValue{Quantity: qp("1Gi")}},
				{Signal: SignalImageFsAvailable, Value: ThresholdValue{Quantity: qp("300Mi")}, GracePeriod: 30 * time.Second, MinReclaim: &ThresholdValue{Quantity: qp("2Gi")}},
				{Signal: SignalNodeFsAvailable, Value: ThresholdValue{Quantity: qp("200Mi")}, GracePeriod: 30 * time.Second, MinReclaim: &ThresholdValue{Quantity: qp("1Gi")}},
			},
		},
		{
			name:   "0% and 100% are ignored",
			config: Config{Hard: map[string]string{"memory.available": "0%", "nodefs.available": "100%"}},
			want:   []Threshold{},
		},
		{name: "invalid-signal", config: Config{Hard: map[string]string{"mem.available": "150Mi"}}, wantErr: ErrUnsupportedSignal},
		{name: "hard-signal-negative", config: Config{Hard: map[string]string{"memory.available": "-150Mi"}}, wantErr: ErrInvalidThreshold},
		{name: "hard-signal-zero", config: Config{Hard: map[string]string{"memory.available": "0"}}, wantErr: ErrInvalidThreshold},
		{name: "hard-signal-negative-percentage", config: Config{Hard: map[string]string{"memory.available": "-15%"}}, wantErr: ErrInvalidThreshold},
		{name: "hard-signal-over-100", config: Config{Hard: map[string]string{"memory.available": "101%"}}, wantErr: ErrInvalidThreshold},
		{name: "hard-signal-not-a-quantity", config: Config{Hard: map[string]string{"memory.available": "lots"}}, wantErr: ErrInvalidThreshold},
		{name: "soft-signal-negative", config: Config{Soft: map[string]string{"memory.available": "-150Mi"}}, wantErr: ErrInvalidThreshold},
		{name: "valid-and-invalid-signal", config: Config{Hard: map[string]string{"memory.available": "150Mi", "invalid.foo": "150Mi"}}, wantErr: ErrUnsupportedSignal},
		{name: "soft-no-grace-period", config: Config{Soft: map[string]string{"memory.available": "150Mi"}}, wantErr: ErrMissingGracePeriod},
		{
			name:    "soft-negative-grace-period",
			config:  Config{Soft: map[string]string{"memory.available": "150Mi"}, SoftGracePeriod: map[string]string{"memory.available": "-30s"}},
			wantErr: ErrInvalidThreshold,
		},
		{name: "negative-reclaim", config: Config{MinimumReclaim: map[string]string{"memory.available": "-300Mi"}}, wantErr: ErrInvalidThreshold},
		{name: "zero-percentage-reclaim", config: Config{MinimumReclaim: map[string]string{"memory.available": "0%"}}, wantErr: ErrInvalidThreshold},
		{name: "unsupported-grace-signal", config: Config{SoftGracePeriod: map[string]string{"memory.used": "30s"}}, wantErr: ErrUnsupportedSignal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseThresholds(tt.config)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v, want one matching %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpQuantity); diff != "" {
				t.Errorf("thresholds (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseThresholdMessages(t *testing.T) {
	t.Parallel()
	for cfg, want := range map[string]Config{
		"unsupported eviction signal memory.used":                                      {Hard: map[string]string{"memory.used": "1"}},
		"eviction percentage threshold memory.available must be <= 100%: 101%":         {Hard: map[string]string{"memory.available": "101%"}},
		"eviction threshold memory.available must be positive: 0":                      {Hard: map[string]string{"memory.available": "0"}},
		"grace period must be specified for the soft eviction threshold pid.available": {Soft: map[string]string{"pid.available": "1"}},
	} {
		if _, err := ParseThresholds(want); err == nil || err.Error() != cfg {
			t.Errorf("error %v, want kubelet's %q", err, cfg)
		}
	}
}

func TestDefaultThresholds(t *testing.T) {
	t.Parallel()
	got := DefaultThresholds()
	var s []string
	for _, th := range got {
		s = append(s, th.String())
	}
	want := []string{
		"imagefs.available<15%", "imagefs.inodesFree<5%", "memory.available<100Mi", "nodefs.available<10%",
		"nodefs.inodesFree<5%", "allocatableMemory.available<100Mi",
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	for _, th := range got {
		if !th.Hard() {
			t.Errorf("%s is not hard", th)
		}
	}
}

// After kubelet's TestAddContainerFsThresholds.
func TestUpdateContainerFsThresholds(t *testing.T) {
	t.Parallel()
	base := []Threshold{
		{Signal: SignalNodeFsAvailable, Value: ThresholdValue{Percentage: 0.1}},
		{Signal: SignalNodeFsInodesFree, Value: ThresholdValue{Percentage: 0.05}},
		{Signal: SignalImageFsAvailable, Value: ThresholdValue{Percentage: 0.15}},
		{Signal: SignalImageFsInodesFree, Value: ThresholdValue{Percentage: 0.05}},
		{Signal: SignalNodeFsAvailable, Value: ThresholdValue{Percentage: 0.2}, GracePeriod: time.Minute},
	}
	tests := []struct {
		name           string
		in             []Threshold
		imageFs, split bool
		want           []string // the containerfs thresholds, in order
		wantErr        bool
	}{
		{name: "single filesystem: nodefs's", in: base, want: []string{"containerfs.available<10% 0s", "containerfs.available<20% 1m0s", "containerfs.inodesFree<5% 0s", "containerfs.inodesFree<0% 0s"}},
		{name: "image filesystem: imagefs's", in: base, imageFs: true, want: []string{"containerfs.available<15% 0s", "containerfs.available<0% 0s", "containerfs.inodesFree<5% 0s", "containerfs.inodesFree<0% 0s"}},
		{name: "split: nodefs's", in: base, imageFs: true, split: true, want: []string{"containerfs.available<10% 0s", "containerfs.available<20% 1m0s", "containerfs.inodesFree<5% 0s", "containerfs.inodesFree<0% 0s"}},
		{name: "split without an image filesystem: unchanged", in: base, split: true},
		{
			name: "a containerfs threshold given is overridden in place",
			in:   append([]Threshold{{Signal: SignalContainerFsAvailable, Value: ThresholdValue{Percentage: 0.5}}}, base...),
			want: []string{"containerfs.available<10% 0s", "containerfs.available<20% 1m0s", "containerfs.inodesFree<5% 0s", "containerfs.inodesFree<0% 0s"}, wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := append([]Threshold(nil), tt.in...)
			got, err := UpdateContainerFsThresholds(in, tt.imageFs, tt.split)
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, ErrContainerFsThreshold)) {
				t.Fatalf("error %v, want one: %v", err, tt.wantErr)
			}
			var cfs []string
			for _, th := range got {
				if th.Signal == SignalContainerFsAvailable || th.Signal == SignalContainerFsInodesFree {
					cfs = append(cfs, th.String()+" "+th.GracePeriod.String())
				}
			}
			if diff := cmp.Diff(tt.want, cfs); diff != "" {
				t.Errorf("containerfs thresholds (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.in, in, cmpQuantity); diff != "" {
				t.Errorf("input changed:\n%s", diff)
			}
		})
	}
}

func FuzzParseThreshold(f *testing.F) {
	for _, s := range []string{"100Mi", "10%", "0%", "100%", "-1", "1e3", "5.5%", "%", "abc%"} {
		f.Add("memory.available", s)
	}
	f.Fuzz(func(t *testing.T, signal, val string) {
		th, err := ParseThreshold(Signal(signal), val)
		if err != nil {
			if !errors.Is(err, ErrInvalidThreshold) && !errors.Is(err, ErrUnsupportedSignal) {
				t.Fatalf("error %v matches no sentinel", err)
			}
			return
		}
		if th == nil {
			return
		}
		if th.Value.Quantity != nil && th.Value.Quantity.Sign() <= 0 {
			t.Fatalf("%q: non-positive quantity %v", val, th.Value.Quantity)
		}
		if th.Value.Quantity == nil && (th.Value.Percentage < 0 || th.Value.Percentage > 1) {
			t.Fatalf("%q: percentage %v out of range", val, th.Value.Percentage)
		}
	})
}
