package dra

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	grpcstats "google.golang.org/grpc/stats"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	drapbv1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"
)

// DefaultCallTimeout bounds each NodePrepareResources and
// NodeUnprepareResources call when the registration gives no timeout
// (kubelet's defaultClientCallTimeout).
const DefaultCallTimeout = 45 * time.Second

// supportedServices are the gRPC services kubelet v1.37.2 speaks, in its
// order of preference as the plugin lists them.
var supportedServices = []string{drapb.DRAPluginService, drapbv1beta1.DRAPluginService}

// plugin is one registered socket of a driver (kubelet's DRAPlugin).
type plugin struct {
	driver, endpoint, service string
	healthService             string // "" when the driver lists none
	timeout                   time.Duration
	conn                      *grpc.ClientConn
	reg                       *registry
	connected                 bool // guarded by reg.mu
	stopHealth                context.CancelFunc
}

// registry is kubelet's DRAPluginManager without ResourceSlice wiping:
// the registered sockets of each driver, newest last.
type registry struct {
	log    logr.Logger
	mu     sync.RWMutex
	store  map[string][]*plugin
	closed bool
	// watch follows a plugin's health service until ctx ends; started
	// under mu by add, waited for by close.
	watch   func(ctx context.Context, p *plugin)
	watches sync.WaitGroup
}

// TagRPC, HandleRPC, TagConn and HandleConn make a plugin its
// connection's stats handler, which tells whether it is connected (kubelet
// prefers a connected socket of a driver).
func (p *plugin) TagRPC(ctx context.Context, _ *grpcstats.RPCTagInfo) context.Context   { return ctx }
func (p *plugin) HandleRPC(context.Context, grpcstats.RPCStats)                         {}
func (p *plugin) TagConn(ctx context.Context, _ *grpcstats.ConnTagInfo) context.Context { return ctx }
func (p *plugin) HandleConn(_ context.Context, s grpcstats.ConnStats) {
	connected := false
	switch s.(type) {
	case *grpcstats.ConnBegin:
		connected = true
	case *grpcstats.ConnEnd:
		// As kubelet: reconnect at once rather than when next used, so
		// the state above stays current.
		go p.conn.Connect()
	default:
		return
	}
	p.reg.mu.Lock()
	defer p.reg.mu.Unlock()
	if p.reg.closed {
		return
	}
	p.reg.log.V(2).Info("Connection changed", "driverName", p.driver, "endpoint", p.endpoint, "connected", connected)
	p.connected = connected
}

func validateServices(versions []string) (string, error) {
	if len(versions) == 0 {
		return "", errors.New("empty list of supported gRPC services (aka supported versions)")
	}
	for _, v := range versions {
		if slices.Contains(supportedServices, v) {
			return v, nil
		}
	}
	return "", fmt.Errorf("none of services supported by the plugin (%q) are supported by the kubelet (%q)", versions, supportedServices)
}

func (r *registry) validate(driver, endpoint string, versions []string) (string, error) {
	s, err := validateServices(versions)
	if err != nil {
		return "", &classErr{msg: fmt.Sprintf("invalid supported gRPC versions of DRA driver plugin %s at endpoint %s: %v", driver, endpoint, err), class: ErrRegistration, cause: err}
	}
	return s, nil
}

func (r *registry) add(driver, endpoint string, versions []string, timeout time.Duration) error {
	service, err := r.validate(driver, endpoint, versions)
	if err != nil {
		return err
	}
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return &classErr{msg: fmt.Sprintf("DRA driver %s plugin at endpoint %s: manager closed", driver, endpoint), class: ErrRegistration}
	}
	for _, old := range r.store[driver] {
		if old.endpoint == endpoint {
			return &classErr{msg: fmt.Sprintf("endpoint %s already registered for DRA driver plugin %s", endpoint, driver), class: ErrRegistration}
		}
	}
	p := &plugin{driver: driver, endpoint: endpoint, service: service, healthService: pickHealthService(versions), timeout: timeout, reg: r}
	conn, err := grpc.NewClient("unix:"+endpoint,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(p))
	if err != nil {
		return &classErr{msg: fmt.Sprintf("create gRPC connection to DRA driver %s plugin at endpoint %s: %v", driver, endpoint, err), class: ErrRegistration, cause: err}
	}
	p.conn = conn
	conn.Connect()
	if r.store == nil {
		r.store = map[string][]*plugin{}
	}
	r.store[driver] = append(r.store[driver], p)
	if p.healthService != "" && r.watch != nil {
		ctx, cancel := context.WithCancel(context.Background())
		p.stopHealth = cancel
		r.watches.Go(func() { r.watch(ctx, p) })
	}
	r.log.V(3).Info("Registered DRA plugin", "driverName", driver, "endpoint", endpoint, "chosenService", service, "healthService", p.healthService, "numPlugins", len(r.store[driver]))
	return nil
}

func (r *registry) remove(driver, endpoint string) {
	r.mu.Lock()
	plugins := r.store[driver]
	i := slices.IndexFunc(plugins, func(p *plugin) bool { return p.endpoint == endpoint })
	if i < 0 {
		r.mu.Unlock()
		return
	}
	p := plugins[i]
	if len(plugins) == 1 {
		delete(r.store, driver)
	} else {
		r.store[driver] = slices.Delete(plugins, i, i+1)
	}
	r.log.V(3).Info("Unregistered DRA plugin", "driverName", driver, "endpoint", endpoint, "numPlugins", len(r.store[driver]))
	r.mu.Unlock()
	if p.stopHealth != nil {
		p.stopHealth()
	}
	if err := p.conn.Close(); err != nil {
		r.log.Error(err, "Closing gRPC connection", "driverName", driver, "endpoint", endpoint)
	}
}

// get is kubelet's GetPlugin: the newest connected socket of the driver,
// else its newest.
func (r *registry) get(driver string) (*plugin, error) {
	if driver == "" {
		return nil, &classErr{msg: "DRA driver name is empty", class: ErrDriverNotRegistered}
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	plugins := r.store[driver]
	if len(plugins) == 0 {
		return nil, &classErr{msg: fmt.Sprintf("DRA driver %s is not registered", driver), class: ErrDriverNotRegistered}
	}
	for i := len(plugins) - 1; i >= 0; i-- {
		if plugins[i].connected {
			return plugins[i], nil
		}
	}
	return plugins[len(plugins)-1], nil
}

func (r *registry) close() {
	r.mu.Lock()
	r.closed = true
	store := r.store
	r.store = nil
	r.mu.Unlock()
	for _, plugins := range store {
		for _, p := range plugins {
			if p.stopHealth != nil {
				p.stopHealth()
			}
			_ = p.conn.Close()
		}
	}
	r.watches.Wait()
}

func (r *registry) drivers() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.store))
	for d := range r.store {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

func (p *plugin) client() drapb.DRAPluginClient {
	if p.service == drapbv1beta1.DRAPluginService {
		return drapbv1beta1.V1Beta1ClientWrapper{DRAPluginClient: drapbv1beta1.NewDRAPluginClient(p.conn)}
	}
	return drapb.NewDRAPluginClient(p.conn)
}

// prepare and unprepare are kubelet's calls, each bounded by the
// plugin's timeout.
func (p *plugin) prepare(ctx context.Context, req *drapb.NodePrepareResourcesRequest) (*drapb.NodePrepareResourcesResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	return p.client().NodePrepareResources(ctx, req)
}

func (p *plugin) unprepare(ctx context.Context, req *drapb.NodeUnprepareResourcesRequest) (*drapb.NodeUnprepareResourcesResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	return p.client().NodeUnprepareResources(ctx, req)
}
