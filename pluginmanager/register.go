package pluginmanager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Classes of registration failures, for errors.Is on Socket.Err. The
// error's text is kubelet's message; it also unwraps to the cause (the
// gRPC status, the handler's error).
var (
	// ErrDial: the socket did not accept a gRPC connection in time.
	ErrDial = errors.New("dial failed")
	// ErrGetInfo: the plugin's GetInfo failed or timed out.
	ErrGetInfo = errors.New("GetInfo failed")
	// ErrNoHandler: no handler was added for the plugin's type.
	ErrNoHandler = errors.New("no handler for plugin type")
	// ErrValidation: the handler's ValidatePlugin refused the plugin.
	ErrValidation = errors.New("plugin validation failed")
	// ErrRegistration: the handler's RegisterPlugin failed.
	ErrRegistration = errors.New("plugin registration failed")
	// ErrNotify: NotifyRegistrationStatus failed or timed out.
	ErrNotify = errors.New("NotifyRegistrationStatus failed")
)

// opError carries kubelet's message and unwraps to its classes and cause.
type opError struct {
	msg  string
	errs []error
}

func (e *opError) Error() string   { return e.msg }
func (e *opError) Unwrap() []error { return e.errs }

func newOpError(msg string, errs ...error) error {
	var keep []error
	for _, e := range errs {
		if e != nil {
			keep = append(keep, e)
		}
	}
	return &opError{msg: msg, errs: keep}
}

// register is kubelet's GenerateRegisterPluginFunc for the socket at path,
// generation gen of the desired state.
func (m *Manager) register(ctx context.Context, path string, gen uint64, handlers map[string]Handler) error {
	log := logr.FromContextOrDiscard(ctx)
	conn, err := dial(ctx, path, m.dialTimeout)
	if err != nil {
		return newOpError(fmt.Sprintf("RegisterPlugin error -- dial failed at socket %s, err: failed to dial socket %s, err: %v", path, path, err), ErrDial, err)
	}
	defer func() { _ = conn.Close() }()
	client := registerapi.NewRegistrationClient(conn)

	infoCtx, cancel := context.WithTimeout(ctx, m.getInfoTimeout)
	info, err := client.GetInfo(infoCtx, &registerapi.InfoRequest{})
	cancel()
	if err != nil {
		return newOpError(fmt.Sprintf("RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket %s, err: %v", path, err), ErrGetInfo, err)
	}

	h, ok := handlers[info.Type]
	if !ok {
		msg := fmt.Sprintf("RegisterPlugin error -- no handler registered for plugin type: %s at socket %s", info.Type, path)
		return m.refuse(ctx, client, path, msg, msg, ErrNoHandler, nil)
	}
	endpoint := info.Endpoint
	if endpoint == "" {
		endpoint = path
	}
	versions := append([]string(nil), info.SupportedVersions...)

	if err := guard(func() error { return h.ValidatePlugin(info.Name, endpoint, versions) }); err != nil {
		return m.refuse(ctx, client, path,
			fmt.Sprintf("RegisterPlugin error -- plugin validation failed with err: %v", err),
			"RegisterPlugin error -- pluginHandler.ValidatePluginFunc failed", ErrValidation, err)
	}

	// Recorded before the handler's RegisterPlugin, as kubelet, so that a
	// socket removed meanwhile is deregistered once this returns.
	m.mu.Lock()
	m.actual[path] = actualPlugin{gen: gen, handler: h, plugin: Plugin{
		Type: info.Type, Name: info.Name, Endpoint: endpoint, Versions: versions,
		SocketPath: path, Registered: m.clock.Now(),
	}}
	m.mu.Unlock()
	forget := func() {
		m.mu.Lock()
		delete(m.actual, path)
		m.mu.Unlock()
	}

	if err := guard(func() error { return h.RegisterPlugin(ctx, info.Name, endpoint, versions, m.pluginClientTimeout) }); err != nil {
		forget()
		msg := fmt.Sprintf("RegisterPlugin error -- plugin registration failed with err: %v", err)
		if nerr := m.notify(ctx, client, false, msg); nerr != nil {
			return newOpError(fmt.Sprintf("%s: %v", msg, nerr), ErrRegistration, ErrNotify, err, nerr)
		}
		return newOpError(msg, ErrRegistration, err)
	}

	// Notified after RegisterPlugin, as kubelet: a plugin told it is
	// registered is registered.
	if err := m.notify(ctx, client, true, ""); err != nil {
		forget()
		_ = guard(func() error { h.DeRegisterPlugin(info.Name, endpoint); return nil })
		return newOpError(fmt.Sprintf("RegisterPlugin error -- failed to send registration status at socket %s, err: : %v", path, err), ErrNotify, err)
	}
	log.V(1).Info("Plugin registered", "type", info.Type, "name", info.Name, "endpoint", endpoint, "versions", versions, "path", path)
	return nil
}

// refuse sends NotifyRegistrationStatus(false, status) and returns the
// operation's error: msg when the plugin was told, kubelet's "failed to
// send error" otherwise.
func (m *Manager) refuse(ctx context.Context, client registerapi.RegistrationClient, path, status, msg string, class, cause error) error {
	if err := m.notify(ctx, client, false, status); err != nil {
		return newOpError(fmt.Sprintf("RegisterPlugin error -- failed to send error at socket %s, err: %s: %v", path, status, err), class, ErrNotify, cause, err)
	}
	return newOpError(msg, class, cause)
}

func (m *Manager) notify(ctx context.Context, client registerapi.RegistrationClient, registered bool, errStr string) error {
	ctx, cancel := context.WithTimeout(ctx, m.notifyTimeout)
	defer cancel()
	_, err := client.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: registered, Error: errStr})
	return err
}

// unregister is kubelet's GenerateUnregisterPluginFunc: the plugin leaves
// the actual state, then its handler's DeRegisterPlugin is called.
func (m *Manager) unregister(ctx context.Context, path string, a actualPlugin) error {
	m.mu.Lock()
	if cur, ok := m.actual[path]; ok && cur.gen == a.gen {
		delete(m.actual, path)
	}
	m.mu.Unlock()
	if err := guard(func() error { a.handler.DeRegisterPlugin(a.plugin.Name, a.plugin.Endpoint); return nil }); err != nil {
		return fmt.Errorf("UnregisterPlugin error -- DeRegisterPlugin for %s: %w", path, err)
	}
	logr.FromContextOrDiscard(ctx).V(1).Info("Plugin deregistered", "type", a.plugin.Type, "name", a.plugin.Name, "endpoint", a.plugin.Endpoint, "path", path)
	return nil
}

// guard runs a handler's method, turning a panic into an error.
func guard(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("recovered from panic %q", fmt.Sprint(r))
		}
	}()
	return fn()
}

var reconnectBackoff = backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second}

// dial connects to the unix socket at path and waits until the connection
// is ready or timeout passes (kubelet's blocking dial: refused connections
// are retried with gRPC's back-off meanwhile).
func dial(ctx context.Context, path string, timeout time.Duration) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient("passthrough:///pluginregistration",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}),
		// A socket's create event comes between its plugin's bind and
		// listen: the first connection is often refused. Retry soon.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: reconnectBackoff, MinConnectTimeout: timeout}),
	)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn.Connect()
	for {
		s := conn.GetState()
		if s == connectivity.Ready {
			return conn, nil
		}
		if !conn.WaitForStateChange(ctx, s) {
			_ = conn.Close()
			return nil, ctx.Err()
		}
	}
}
