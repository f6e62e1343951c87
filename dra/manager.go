package dra

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
)

// ClaimGetter reads ResourceClaims from the API server (an informer's
// lister or a client; kubelet reads them with a GET each time). It returns
// an error matching the API's NotFound when there is no such claim.
type ClaimGetter interface {
	GetResourceClaim(ctx context.Context, namespace, name string) (*resourcev1.ResourceClaim, error)
}

// ClaimGetterFunc adapts a function to ClaimGetter.
type ClaimGetterFunc func(ctx context.Context, namespace, name string) (*resourcev1.ResourceClaim, error)

// GetResourceClaim calls f.
func (f ClaimGetterFunc) GetResourceClaim(ctx context.Context, namespace, name string) (*resourcev1.ResourceClaim, error) {
	return f(ctx, namespace, name)
}

// Manager is kubelet's DRA manager: it prepares the ResourceClaims of a
// pod with their drivers before the pod's sandbox is made, gives each
// container the CDI devices of its claims, and unprepares claims no pod
// uses any more once a pod's containers are gone. It is the Handler of
// the DRAPlugin type for package pluginmanager. Safe for concurrent use.
type Manager struct {
	claims  ClaimGetter
	log     logr.Logger
	cache   *claimCache
	plugins *registry

	health   healthCache
	onHealth func([]types.UID)
	now      func() time.Time
}

// Option configures a Manager.
type Option func(*Manager)

// WithLogger sets the logger (default: none).
func WithLogger(l logr.Logger) Option { return func(m *Manager) { m.log = l } }

// New reads the checkpoint CheckpointFile in stateDir (kubelet's root
// dir), creating the directory (0755) and an empty checkpoint when there
// is none, as kubelet's NewManager. A checkpoint that cannot be read fails
// New (ErrCheckpoint): kubelet then asks to drain the node and remove the
// file. Claims read from it are unprepared when their pods go; a pod
// that needs one again has it prepared again (drivers answer
// idempotently).
func New(ctx context.Context, stateDir string, claims ClaimGetter, opts ...Option) (*Manager, error) {
	if claims == nil {
		return nil, errors.New("dra: New with a nil ClaimGetter")
	}
	if stateDir == "" || !filepath.IsAbs(stateDir) || filepath.Clean(stateDir) != stateDir {
		return nil, fmt.Errorf("dra: state directory %q is not a clean absolute path", stateDir)
	}
	m := &Manager{claims: claims, log: logr.Discard(), now: time.Now}
	for _, o := range opts {
		o(m)
	}
	m.plugins = &registry{log: m.log, watch: m.watchHealth}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, fmt.Errorf("create ResourceClaim cache: %w", err)
	}
	path := filepath.Join(stateDir, CheckpointFile)
	list, exists, err := readCheckpoint(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("create ResourceClaim cache: GetOrCreate() on checkpoint state: %w", err)
	}
	m.cache = &claimCache{path: path, claims: make(map[string]*claimInfo, len(list))}
	if !exists {
		if err := writeCheckpoint(path, nil); err != nil {
			return nil, fmt.Errorf("create ResourceClaim cache: %w", err)
		}
	}
	for _, c := range list {
		if c.DriverState == nil {
			c.DriverState = map[string]DriverState{}
		}
		m.cache.add(&claimInfo{ClaimInfo: c})
	}
	return m, nil
}

// Close closes the connections to the drivers. Registrations after it
// fail; prepares and unprepares then find no driver.
func (m *Manager) Close() error {
	m.plugins.close()
	return nil
}

// ValidatePlugin is kubelet's: the plugin must offer a gRPC service
// kubelet speaks (v1.DRAPlugin or v1beta1.DRAPlugin).
func (m *Manager) ValidatePlugin(pluginName, endpoint string, versions []string) error {
	_, err := m.plugins.validate(pluginName, endpoint, versions)
	return err
}

// RegisterPlugin records the driver's socket at endpoint and connects to
// it; timeout bounds each call to it (DefaultCallTimeout when 0). A
// driver may have several sockets (a rolling update): calls go to the
// newest connected one. A socket that registers again (replaced at its
// path) has been deregistered first by the plugin manager, so its new
// connection replaces the old.
//
// A driver that lists a DRAResourceHealth service is watched for device
// health until it is deregistered or the Manager closed.
func (m *Manager) RegisterPlugin(_ context.Context, pluginName, endpoint string, versions []string, timeout time.Duration) error {
	return m.plugins.add(pluginName, endpoint, versions, timeout)
}

// DeRegisterPlugin forgets the driver's socket and closes its connection.
func (m *Manager) DeRegisterPlugin(pluginName, endpoint string) {
	m.plugins.remove(pluginName, endpoint)
}

// Drivers lists the drivers with a registered socket, sorted.
func (m *Manager) Drivers() []string { return m.plugins.drivers() }

// Claims returns a copy of the claims the manager holds (what its
// checkpoint records), ordered by namespace and name.
func (m *Manager) Claims() []ClaimInfo {
	m.cache.RLock()
	defer m.cache.RUnlock()
	list := m.cache.list()
	for i := range list {
		list[i] = list[i].deepCopy()
	}
	return list
}

// PodMightNeedToUnprepareResources reports whether a claim still lists
// the pod (kubelet keeps such a pod's record until UnprepareResources).
func (m *Manager) PodMightNeedToUnprepareResources(uid types.UID) bool {
	m.cache.RLock()
	defer m.cache.RUnlock()
	return m.cache.hasPodReference(uid)
}

func validatePod(pod *corev1.Pod) error {
	if pod == nil {
		return errors.New("dra: nil pod")
	}
	if pod.UID == "" || pod.Namespace == "" || pod.Name == "" {
		return fmt.Errorf("dra: pod %q in namespace %q with UID %q: name, namespace and UID are required", pod.Name, pod.Namespace, pod.UID)
	}
	return nil
}

// prepared is one claim to prepare for the pod.
type prepared struct {
	claim   *resourcev1.ResourceClaim
	info    *claimInfo
	plugins map[string]*plugin
}

// PrepareResources is kubelet's: for each claim of the pod (spec's, and
// the scheduler's claim for extended resources) the ResourceClaim is
// read, checked (owned by the pod when made from a template, reserved for
// it, allocated) and its drivers found, all before anything changes; then
// the pod is recorded in each claim's entry (checkpointed), and each
// claim not yet prepared is sent to NodePrepareResources, one call per
// driver for all of the pod's claims, bounded by the driver's timeout;
// the devices and CDI IDs of the answers are recorded and checkpointed.
// Its errors read "prepare dynamic resources: ..." with kubelet's text.
func (m *Manager) PrepareResources(ctx context.Context, pod *corev1.Pod) error {
	if err := validatePod(pod); err != nil {
		return err
	}
	if err := m.prepare(ctx, pod); err != nil {
		return fmt.Errorf("prepare dynamic resources: %w", err)
	}
	return nil
}

func (m *Manager) prepare(ctx context.Context, pod *corev1.Pod) error {
	log := m.log.WithValues("pod", pod.Namespace+"/"+pod.Name)
	pcs := podClaims(pod)
	infos := make([]prepared, len(pcs))
	// Validate first, changing nothing: a pod that fails here can be
	// deleted without an unprepare of what was never prepared.
	for i := range pcs {
		name, mustCheckOwner, err := claimName(pod, &pcs[i])
		if err != nil {
			return err
		}
		if name == nil {
			continue
		}
		claim, err := m.claims.GetResourceClaim(ctx, pod.Namespace, *name)
		if err != nil {
			return fmt.Errorf("fetch ResourceClaim %s: %w", *name, err)
		}
		if claim == nil {
			return fmt.Errorf("fetch ResourceClaim %s: the getter returned no claim", *name)
		}
		if mustCheckOwner {
			if err := isForPod(pod, claim); err != nil {
				return err
			}
		}
		if !isReservedForPod(pod, claim) {
			return &classErr{msg: fmt.Sprintf("pod %s (%s) is not allowed to use ResourceClaim %s (%s)", pod.Name, pod.UID, *name, claim.UID), class: ErrClaimNotUsable}
		}
		info, err := newClaimInfo(claim)
		if err != nil {
			return fmt.Errorf("ResourceClaim %s: %w", claim.Name, err)
		}
		plugins := make(map[string]*plugin, len(info.DriverState))
		for driver := range info.DriverState {
			p, err := m.plugins.get(driver)
			if err != nil {
				return err
			}
			plugins[driver] = p
		}
		infos[i] = prepared{claim: claim, info: info, plugins: plugins}
	}

	batches := map[*plugin][]*drapb.Claim{}
	toPrepare := map[types.UID]*resourcev1.ResourceClaim{}
	err := func() (retErr error) {
		m.cache.Lock()
		defer m.cache.Unlock()
		changed := false
		// Kubelet writes the checkpoint after each claim; podstart once
		// for all of them, before any driver is called, and not at all
		// when nothing changed (each write is synced to disk).
		defer func() {
			if changed {
				if err := m.cache.sync(); err != nil && retErr == nil {
					retErr = fmt.Errorf("checkpoint ResourceClaim cache: %w", err)
				}
			}
		}()
		for _, in := range infos {
			if in.claim == nil {
				continue
			}
			ci, ok := m.cache.get(in.claim.Name, in.claim.Namespace)
			if !ok {
				ci = in.info
				m.cache.add(ci)
				changed = true
			} else {
				if ci.ClaimUID != in.claim.UID {
					return &classErr{msg: fmt.Sprintf("old ResourceClaim with same name %s and different UID %s still exists (previous pod force-deleted?!)", in.claim.Name, ci.ClaimUID), class: ErrClaimNotUsable}
				}
				if ci.unpreparing {
					return &classErr{msg: fmt.Sprintf("ResourceClaim %s is being unprepared", in.claim.Name), class: ErrClaimNotUsable}
				}
			}
			if !ci.PodUIDs.Has(string(pod.UID)) {
				ci.PodUIDs.Insert(string(pod.UID))
				changed = true
			}
			if ci.prepared {
				log.V(5).Info("Resources already prepared", "claim", in.claim.Name)
				continue
			}
			if _, dup := toPrepare[ci.ClaimUID]; dup {
				// Two pod claims naming one ResourceClaim: sent once
				// (kubelet sends it twice and then counts one answer
				// missing).
				continue
			}
			toPrepare[ci.ClaimUID] = in.claim
			c := &drapb.Claim{Namespace: ci.Namespace, Uid: string(ci.ClaimUID), Name: ci.ClaimName}
			for driver := range ci.DriverState {
				p := in.plugins[driver]
				if p == nil {
					// An entry read from the checkpoint whose claim
					// now names other drivers: the UID check above
					// makes this a claim the API changed under us.
					return &classErr{msg: fmt.Sprintf("ResourceClaim %s: driver %s not in its allocation", in.claim.Name, driver), class: ErrClaimNotUsable}
				}
				batches[p] = append(batches[p], c)
			}
		}
		return nil
	}()
	if err != nil {
		return err
	}

	for _, p := range sortedPlugins(batches) {
		claims := batches[p]
		resp, err := p.prepare(ctx, &drapb.NodePrepareResourcesRequest{Claims: claims})
		if err != nil {
			return &classErr{msg: fmt.Sprintf("NodePrepareResources: %v", err), class: ErrDriver, cause: err}
		}
		for _, uid := range sortedKeys(resp.GetClaims()) {
			result := resp.Claims[uid]
			req := lookupClaim(claims, uid)
			if req == nil {
				return &classErr{msg: fmt.Sprintf("NodePrepareResources returned result for unknown claim UID %s", sanitize(uid)), class: ErrDriver}
			}
			if result.GetError() != "" {
				return &classErr{msg: fmt.Sprintf("NodePrepareResources failed for ResourceClaim %s: %s", req.Name, sanitize(result.GetError())), class: ErrDriver}
			}
			devices := make([]Device, 0, len(result.GetDevices()))
			for _, d := range result.GetDevices() {
				for _, id := range d.GetCdiDeviceIds() {
					if err := validateCDIName(id); err != nil {
						return &classErr{msg: fmt.Sprintf("NodePrepareResources returned an invalid CDI device ID for ResourceClaim %s: %v", req.Name, err), class: ErrDriver}
					}
				}
				devices = append(devices, Device{PoolName: d.GetPoolName(), DeviceName: d.GetDeviceName(),
					ShareID: (*types.UID)(d.ShareId), RequestNames: d.GetRequestNames(), CDIDeviceIDs: d.GetCdiDeviceIds()})
			}
			claim := toPrepare[types.UID(uid)]
			err := func() error {
				m.cache.Lock()
				defer m.cache.Unlock()
				ci, ok := m.cache.get(claim.Name, claim.Namespace)
				if !ok {
					return fmt.Errorf("internal error: unable to get claim info for ResourceClaim %s in namespace %s", claim.Name, claim.Namespace)
				}
				// The driver's answer is authoritative for this claim
				// and driver: a retried prepare does not duplicate.
				ci.resetDevices(p.driver)
				for _, d := range devices {
					ci.addDevice(p.driver, d)
				}
				return nil
			}()
			if err != nil {
				return err
			}
		}
		if unfinished := len(claims) - len(resp.GetClaims()); unfinished != 0 {
			return &classErr{msg: fmt.Sprintf("NodePrepareResources skipped %d ResourceClaims", unfinished), class: ErrDriver}
		}
	}

	if len(toPrepare) == 0 {
		return nil // nothing changed since the checkpoint above
	}
	m.cache.Lock()
	defer m.cache.Unlock()
	for _, claim := range toPrepare {
		ci, ok := m.cache.get(claim.Name, claim.Namespace)
		if !ok {
			return fmt.Errorf("internal error: unable to get claim info for ResourceClaim %s in namespace %s", claim.Name, claim.Namespace)
		}
		ci.prepared = true
	}
	if err := m.cache.sync(); err != nil {
		return fmt.Errorf("checkpoint ResourceClaim state: %w", err)
	}
	return nil
}

func lookupClaim(claims []*drapb.Claim, uid string) *drapb.Claim {
	for _, c := range claims {
		if c.Uid == uid {
			return c
		}
	}
	return nil
}

// sortedPlugins orders a pod's calls by driver and socket (kubelet's map
// order varies).
func sortedPlugins[V any](m map[*plugin]V) []*plugin {
	out := make([]*plugin, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *plugin) int {
		if a.driver != b.driver {
			if a.driver < b.driver {
				return -1
			}
			return 1
		}
		if a.endpoint < b.endpoint {
			return -1
		}
		if a.endpoint > b.endpoint {
			return 1
		}
		return 0
	})
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// sanitize passes a driver's string into an error as kubelet does when
// it is short and printable, else quoted and cut, so that a hostile
// driver cannot write lines or megabytes into events and logs.
func sanitize(s string) string {
	const max = 1024
	ok := len(s) <= max
	for _, r := range s {
		if !ok {
			break
		}
		ok = r != utf8.RuneError && unicode.IsPrint(r)
	}
	if ok {
		return s
	}
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}
