package dra_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/podstart/podstart/dra"
	"github.com/podstart/podstart/dra/fake"
	"github.com/podstart/podstart/pluginmanager"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// claimStore is a ClaimGetter over a map, as an informer's lister.
type claimStore struct {
	mu     sync.Mutex
	claims map[string]*resourcev1.ResourceClaim
	gets   int
}

func (s *claimStore) GetResourceClaim(_ context.Context, ns, name string) (*resourcev1.ResourceClaim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	c, ok := s.claims[ns+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(resourcev1.Resource("resourceclaims"), name)
	}
	return c.DeepCopy(), nil
}

func (s *claimStore) put(c *resourcev1.ResourceClaim) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claims[c.Namespace+"/"+c.Name] = c
}

// call is one request a fake driver received.
type call struct {
	method string
	uids   []string
}

// driver is a dra/fake driver: a DRA kubelet plugin with its
// registration socket in the registry directory and its DRA service on a
// socket of its own, both real unix sockets.
type driver struct{ *fake.Driver }

// cdiFor is the fake driver's CDI device ID for a claim.
func cdiFor(claimName string) string { return fake.CDIDeviceID(claimName) }

func (d driver) getCalls() []call {
	var out []call
	for _, c := range d.Calls() {
		m := "prepare"
		if c.Method == fake.Unprepare {
			m = "unprepare"
		}
		out = append(out, call{method: m, uids: c.UIDs})
	}
	return out
}

func (d driver) setPrepare(f fake.PrepareFunc)     { d.SetPrepare(f) }
func (d driver) setUnprepare(f fake.UnprepareFunc) { d.SetUnprepare(f) }
func (d driver) stop()                             { d.Stop() }

// env is a node: a Manager as the DRAPlugin handler of a running plugin
// manager, a claim store, and the drivers started in it.
type env struct {
	t      testing.TB
	root   string
	regDir string
	claims *claimStore
	mgr    *dra.Manager
	pm     *pluginmanager.Manager
	cancel context.CancelFunc
	done   chan error
	gone   chan string
}

func newEnv(t testing.TB, opts ...dra.Option) *env {
	t.Helper()
	return newEnvWith(t, nil, opts...)
}

func newEnvWith(t testing.TB, pmOpts []pluginmanager.Option, opts ...dra.Option) *env {
	t.Helper()
	root, err := os.MkdirTemp("", "dra")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, root: root, regDir: filepath.Join(root, pluginmanager.DirName), claims: &claimStore{claims: map[string]*resourcev1.ResourceClaim{}}}
	e.startWith(pmOpts, opts...)
	t.Cleanup(func() {
		e.stopManager()
		os.RemoveAll(root)
	})
	return e
}

// start makes a Manager over the state in root and runs a plugin manager
// for it (again, after stopManager: an agent restart).
func (e *env) start(opts ...dra.Option) {
	e.startWith(nil, opts...)
}

func (e *env) startWith(pmOpts []pluginmanager.Option, opts ...dra.Option) {
	e.t.Helper()
	mgr, err := dra.New(context.Background(), e.root, e.claims, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	pm, err := pluginmanager.New(e.regDir, pmOpts...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.gone = make(chan string, 64)
	pm.AddHandler(registerapi.DRAPlugin, handler{Manager: mgr, gone: e.gone})
	ctx, cancel := context.WithCancel(context.Background())
	e.mgr, e.pm, e.cancel, e.done = mgr, pm, cancel, make(chan error, 1)
	go func() { e.done <- pm.Run(ctx) }()
}

func (e *env) stopManager() {
	if e.cancel == nil {
		return
	}
	e.cancel()
	<-e.done
	e.mgr.Close()
	e.cancel = nil
}

// startDriver serves a driver and waits until the plugin manager told it
// it is registered.
func (e *env) startDriver(name string, versions ...string) driver {
	e.t.Helper()
	return e.startDriverAt(name, name, versions...)
}

// startDriverAt serves an instance of the driver with sockets of its own
// (a rolling update's new pod) and waits until the plugin manager told it
// it is registered.
func (e *env) startDriverAt(name, instance string, versions ...string) driver {
	e.t.Helper()
	d := driver{fake.New(name, versions...)}
	if err := d.Serve(filepath.Join(e.root, "plugins", instance, "dra.sock"), filepath.Join(e.regDir, instance+"-reg.sock")); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(d.Stop)
	select {
	case s := <-d.Registration():
		if !s.PluginRegistered {
			e.t.Fatalf("driver %s not registered: %s", name, s.Error)
		}
	case <-time.After(time.Minute):
		e.t.Fatalf("driver %s: no registration status within a minute", name)
	}
	return d
}

// waitDeregistered waits until the plugin manager deregistered driver.
func (e *env) waitDeregistered(name string) {
	e.t.Helper()
	for {
		select {
		case got := <-e.gone:
			if got == name {
				return
			}
		case <-time.After(time.Minute):
			e.t.Fatalf("driver %s not deregistered within a minute", name)
		}
	}
}

// handler tells the test when the Manager deregistered a plugin.
type handler struct {
	*dra.Manager
	gone chan string
}

func (h handler) DeRegisterPlugin(name, endpoint string) {
	h.Manager.DeRegisterPlugin(name, endpoint)
	h.gone <- name
}

// claim is an allocated ResourceClaim for driver, reserved for pods.
func claim(ns, name, uid, driverName string, pods ...*corev1.Pod) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
			Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: driverName, Pool: "pool", Device: "dev-" + name}},
		}}},
	}
	for _, p := range pods {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
	}
	return c
}

// pod is a pod using the named claims directly, one container listing
// them all.
func pod(ns, name, uid string, claimNames ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	for _, cn := range claimNames {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: "pc-" + cn, ResourceClaimName: ptr.To(cn)})
		p.Spec.Containers[0].Resources.Claims = append(p.Spec.Containers[0].Resources.Claims, corev1.ResourceClaim{Name: "pc-" + cn})
	}
	return p
}

func mustPrepare(t *testing.T, m *dra.Manager, p *corev1.Pod) {
	t.Helper()
	if err := m.PrepareResources(context.Background(), p); err != nil {
		t.Fatalf("PrepareResources(%s): %v", p.Name, err)
	}
}

func expectErr(t *testing.T, err error, class error, text string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", text)
	}
	if class != nil && !errors.Is(err, class) {
		t.Errorf("error %q does not match %v", err, class)
	}
	if text != "" && err.Error() != text {
		t.Errorf("error\n %q\nwant\n %q", err, text)
	}
}
