package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/credentials"
	"github.com/podstart/podstart/runtime"
)

// flight is one runtime pull shared by every caller that wants the same
// image with the same credentials and the same request (sandbox config
// included) at the same time (kubernetes#125164).
type flight struct {
	done    chan struct{}
	res     result
	waiters int
	cancel  context.CancelFunc
}

type result struct {
	ref  string
	size uint64
	pull time.Duration // from getting a slot to the end
	err  error
	// cancelled: the caller's own context was cancelled; not a failed
	// pull.
	cancelled bool
	// cred is the index of the credential the pull succeeded with, -1
	// for an anonymous pull. Callers sharing a flight have equal
	// credential lists, so each reads its own entry (and its source).
	cred int
}

// join waits for the flight for this image and these credentials, starting
// it if there is none. The pull runs in a goroutine of its own that ends
// when the pull does, when every waiter has given up, or at Close.
// Followers take no pull slot.
func (m *Manager) join(ctx context.Context, spec *runtimeapi.ImageSpec, creds []credentials.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) result {
	key := spec.Image + "\x00" + spec.RuntimeHandler + "\x00" + fingerprint(creds) + "\x00" + requestKey(spec, sandbox)
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return result{err: ErrClosed}
	}
	f, ok := m.flights[key]
	if !ok {
		// The pull keeps the first caller's values (logger) but not its
		// cancellation: it is cancelled when its last waiter leaves.
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &flight{done: make(chan struct{}), cancel: cancel}
		m.flights[key] = f
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			res := m.pullSlot(fctx, spec, creds, sandbox)
			m.mu.Lock()
			if m.flights[key] == f {
				delete(m.flights, key)
			}
			f.res = res
			m.mu.Unlock()
			close(f.done)
			cancel()
		}()
	}
	f.waiters++
	m.mu.Unlock()
	select {
	case <-f.done:
		return f.res
	case <-ctx.Done():
		m.mu.Lock()
		f.waiters--
		if f.waiters == 0 {
			// Unregister the dying pull at once: a caller arriving now
			// starts a pull of its own instead of inheriting this
			// cancellation.
			if m.flights[key] == f {
				delete(m.flights, key)
			}
			f.cancel()
		}
		m.mu.Unlock()
		// A deadline is a pull that took too long and counts, as in
		// kubelet; a cancellation is the caller giving up.
		return result{err: runtime.Classify(ctx.Err()), cancelled: errors.Is(ctx.Err(), context.Canceled)}
	}
}

// requestKey hashes the rest of what the runtime is sent (the image spec's
// annotations, the pod's sandbox config: its namespace, labels,
// annotations), so that a pull is shared only by callers whose requests
// are equal: a runtime may choose a mirror or a signature policy by any of
// it, per namespace for instance.
func requestKey(spec *runtimeapi.ImageSpec, sandbox *runtimeapi.PodSandboxConfig) string {
	h := sha256.New()
	for _, m := range []proto.Message{spec, sandbox} {
		b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// pullSlot waits for a pull slot (FIFO), then pulls with each credential
// in order until one works.
func (m *Manager) pullSlot(ctx context.Context, spec *runtimeapi.ImageSpec, creds []credentials.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) result {
	if m.slots != nil {
		if err := m.slots.acquire(ctx); err != nil {
			return result{err: runtime.Classify(err)}
		}
		defer m.slots.release()
	}
	start := m.o.clock.Now()
	ref, cred, err := m.pullCreds(ctx, spec, creds, sandbox)
	res := result{ref: ref, err: err, cred: cred}
	if err == nil {
		// Best effort, as kubelet's GetImageSize.
		if st, err := m.img.ImageStatus(ctx, spec, false); err == nil {
			res.size = st.GetImage().GetSize()
		}
	}
	res.pull = m.o.clock.Since(start)
	return res
}

func (m *Manager) pullCreds(ctx context.Context, spec *runtimeapi.ImageSpec, creds []credentials.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, int, error) {
	if len(creds) == 0 {
		ref, err := m.pullOnce(ctx, spec, nil, sandbox)
		return ref, -1, err
	}
	var errs aggregate
	skipped := 0
	if max := m.o.maxAttempts; max > 0 && len(creds) > max {
		creds, skipped = creds[:max], len(creds)-max
	}
	for i, c := range creds {
		auth := &runtimeapi.AuthConfig{Username: c.Username, Password: c.Password, Auth: c.Auth,
			ServerAddress: c.ServerAddress, IdentityToken: c.IdentityToken, RegistryToken: c.RegistryToken}
		ref, err := m.pullOnce(ctx, spec, auth, sandbox)
		if err == nil {
			return ref, i, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if skipped > 0 && ctx.Err() == nil {
		errs = append(errs, fmt.Errorf("%d more credentials not tried: at most %d attempts per pull", skipped, m.o.maxAttempts))
	}
	if len(errs) == 1 {
		return "", -1, errs[0]
	}
	return "", -1, errs
}

// pullOnce makes one runtime pull, watching progress when the runtime
// reports it.
func (m *Manager) pullOnce(ctx context.Context, spec *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	pp, ok := m.img.(runtime.ProgressPuller)
	var ref string
	var err error
	if ok && (m.o.progress != nil || m.o.stall > 0) {
		ref, err = m.watchedPull(ctx, pp, spec, auth, sandbox)
	} else {
		ref, err = m.img.PullImage(ctx, spec, auth, sandbox)
	}
	if err != nil {
		return "", runtime.Classify(err)
	}
	if ref == "" {
		return "", fmt.Errorf("imageRef of image %q is not set", spec.Image)
	}
	return ref, nil
}

func (m *Manager) watchedPull(ctx context.Context, pp runtime.ProgressPuller, spec *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandbox *runtimeapi.PodSandboxConfig) (string, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	tick := make(chan struct{}, 1)
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		if m.o.stall <= 0 {
			<-done
			return
		}
		for {
			t := m.o.clock.NewTimer(m.o.stall)
			select {
			case <-tick:
				t.Stop()
			case <-t.C():
				cancel(fmt.Errorf("%w for %s", ErrPullStalled, m.o.stall))
				<-done
				return
			case <-done:
				t.Stop()
				return
			}
		}
	}()
	ref, err := pp.PullImageWithProgress(ctx, spec, auth, sandbox, func(p runtime.PullProgress) {
		if m.o.progress != nil {
			m.o.progress(spec.Image, p)
		}
		select {
		case tick <- struct{}{}:
		default:
		}
	})
	close(done)
	<-watched
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, ErrPullStalled) {
		return "", cause
	}
	return ref, err
}

// aggregate is the error of a pull whose every credential failed, with
// kubelet's text: one message, or "[m1, m2]" without repeats.
type aggregate []error

func (a aggregate) distinct() int {
	seen := map[string]bool{}
	for _, e := range a {
		seen[e.Error()] = true
	}
	return len(seen)
}

func (a aggregate) Error() string {
	seen := map[string]bool{}
	out := ""
	for _, e := range a {
		msg := e.Error()
		if seen[msg] {
			continue
		}
		if len(seen) > 0 {
			out += ", "
		}
		seen[msg] = true
		out += msg
	}
	if len(seen) == 1 {
		return out
	}
	return "[" + out + "]"
}

// Unwrap gives every credential's error, so errors.Is finds a class (such
// as runtime.ErrUnauthorized) that any of them has.
func (a aggregate) Unwrap() []error { return a }

func runtimeStatusMessage(err error) (string, bool) {
	if agg, ok := err.(aggregate); ok {
		err = agg[0]
	}
	var re *runtime.Error
	if !errors.As(err, &re) {
		return "", false
	}
	return runtime.GRPCStatus(re).Message(), true
}
