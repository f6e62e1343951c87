package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// ErrNetworkUnknown is kubelet's network error before the runtime's first
// status: the node is NotReady until the runtime reports its network.
var ErrNetworkUnknown = errors.New("network state unknown")

// RuntimeSyncThreshold is kubelet's maxWaitForContainerRuntime: without a
// successful runtime status this long, the runtime is reported down.
const RuntimeSyncThreshold = 30 * time.Second

// StatusReader is the CRI call readiness comes from (runtime.RuntimeService
// has it).
type StatusReader interface {
	Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error)
}

// RuntimeState is kubelet's runtimeState: what the runtime's CRI Status
// said last, and health checks, turned into the errors that make the node
// NotReady. It is safe for concurrent use.
type RuntimeState struct {
	clock clock.PassiveClock

	mu         sync.Mutex
	lastSync   time.Time
	runtimeErr error
	networkErr error
	checks     []healthCheck
}

type healthCheck struct {
	name string
	fn   func() (bool, error)
}

// NewRuntimeState starts as kubelet does: no runtime status yet, network
// unknown.
func NewRuntimeState(clk clock.PassiveClock) *RuntimeState {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &RuntimeState{clock: clk, networkErr: ErrNetworkUnknown}
}

// AddHealthCheck adds a check (kubelet's PLEG check is one); while it
// fails the node is NotReady with "<name> is not healthy: <err>".
func (s *RuntimeState) AddHealthCheck(name string, fn func() (bool, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks = append(s.checks, healthCheck{name, fn})
}

// Update is kubelet's updateRuntimeUp: it asks the runtime for its status
// and records its NetworkReady and RuntimeReady conditions with kubelet's
// messages. A failed call changes nothing (the sync time ages, and after
// RuntimeSyncThreshold the runtime is "down"); the error is returned.
func (s *RuntimeState) Update(ctx context.Context, rs StatusReader) error {
	resp, err := rs.Status(ctx, false)
	if err != nil {
		return fmt.Errorf("container runtime sanity check failed: %w", err)
	}
	if resp.GetStatus() == nil {
		return errors.New("container runtime status is nil")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	network := condition(resp.Status, runtimeapi.NetworkReady)
	if network == nil || !network.Status {
		s.networkErr = fmt.Errorf("container runtime network not ready: %v", network)
	} else {
		s.networkErr = nil
	}
	ready := condition(resp.Status, runtimeapi.RuntimeReady)
	if ready == nil || !ready.Status {
		s.runtimeErr = fmt.Errorf("container runtime not ready: %v", ready)
		return nil
	}
	s.runtimeErr = nil
	s.lastSync = s.clock.Now()
	return nil
}

// Errors are the runtime's errors then the network's, each aggregated as
// kubelet's runtimeErrors and networkErrors are; nil entries mean none.
func (s *RuntimeState) Errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rt []error
	if s.lastSync.IsZero() {
		rt = append(rt, errors.New("container runtime status check may not have completed yet"))
	} else if !s.lastSync.Add(RuntimeSyncThreshold).After(s.clock.Now()) {
		rt = append(rt, errors.New("container runtime is down"))
	}
	for _, hc := range s.checks {
		if ok, err := hc.fn(); !ok {
			rt = append(rt, fmt.Errorf("%s is not healthy: %v", hc.name, err))
		}
	}
	if s.runtimeErr != nil {
		rt = append(rt, s.runtimeErr)
	}
	var net []error
	if s.networkErr != nil {
		net = append(net, s.networkErr)
	}
	return []error{utilerrors.NewAggregate(rt), utilerrors.NewAggregate(net)}
}

// runtimeCondition prints as kubelet's kubecontainer.RuntimeCondition does,
// "<nil>" when absent.
type runtimeCondition struct {
	Type, Reason, Message string
	Status                bool
}

func (c *runtimeCondition) String() string {
	if c == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s=%t reason:%s message:%s", c.Type, c.Status, c.Reason, c.Message)
}

func condition(st *runtimeapi.RuntimeStatus, typ string) *runtimeCondition {
	for _, c := range st.GetConditions() {
		if c.GetType() == typ {
			return &runtimeCondition{Type: c.GetType(), Status: c.GetStatus(), Reason: c.GetReason(), Message: c.GetMessage()}
		}
	}
	return nil
}
