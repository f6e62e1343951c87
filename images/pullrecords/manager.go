package pullrecords

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PodCredentialsFunc returns the pod's pull secrets and the service
// account a plugin was given for it (nil: none). MustAttemptImagePull
// calls it only when it has to.
type PodCredentialsFunc func() ([]Secret, *ServiceAccount, error)

// ImageLister lists the images on the node (runtime.ImageService is one).
type ImageLister interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
}

// Config says where records are kept and which policy applies.
type Config struct {
	// Dir holds the "pulling" and "pulled" directories. Kubelet's is
	// <root-dir>/image_manager; pointing Dir there shares records with a
	// kubelet. Empty keeps records in memory, for this process only.
	Dir string
	// Policy defaults to NeverVerifyPreloadedImages, as kubelet.
	Policy Policy
	// Allowlist is preloadedImagesVerificationAllowlist, used by
	// NeverVerifyAllowlistedImages.
	Allowlist []string
}

// ErrRecordIntent: a pull intent could not be written, so the image is
// not pulled (kubelet's "failed to record image pull intent").
var ErrRecordIntent = errors.New("failed to record image pull intent")

// writeWhileMatchingLimit is kubelet's writeRecordWhileMatchingLimit: a
// secret that matches by hash or coordinates only is added to the record
// while the record holds fewer secrets than this.
const writeWhileMatchingLimit = 100

// Manager is kubelet's PullManager (pkg/kubelet/images/pullmanager): it
// records pull intents and successful pulls with the credentials used,
// and decides whether a pod must pull an image that is already present.
// It is safe for concurrent use.
type Manager struct {
	store   store
	enforce enforcer
	now     func() time.Time

	mu      sync.Mutex     // serialises record reads and writes
	intents map[string]int // image -> pulls in flight
}

// New opens (creating) the records in cfg.Dir, rewrites kubelet v1alpha1
// records as v1beta1, and turns pull intents left by an earlier run whose
// image is now on the node (images lists them; nil skips this) into
// pulled records without credentials, so that such images are verified
// (kubelet's initialize). Record files are read as the package doc says
// (regular files only, capped); New returns ctx's error if ctx ends while
// it reads them.
func New(ctx context.Context, cfg Config, images ImageLister) (*Manager, error) {
	enf, err := newEnforcer(cfg.Policy, cfg.Allowlist)
	if err != nil {
		return nil, err
	}
	var f files = &memFiles{files: map[string][]byte{}}
	if cfg.Dir != "" {
		d := dirFiles{dir: cfg.Dir}
		for _, sub := range []string{pullingDir, pulledDir} {
			if err := mkdir(d, sub); err != nil {
				return nil, err
			}
		}
		f = d
	}
	m := &Manager{store: store{f}, enforce: enf, now: time.Now, intents: map[string]int{}}
	log := logr.FromContextOrDiscard(ctx)
	if err := m.store.migrate(ctx); err != nil {
		log.Error(err, "Error migrating image pull records")
	}
	m.initialize(ctx, images)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("reading image pull records: %w", err)
	}
	return m, nil
}

func mkdir(d dirFiles, sub string) error {
	return os.MkdirAll(filepath.Join(d.dir, sub), 0o700)
}

// initialize is kubelet's PullManager.initialize.
func (m *Manager) initialize(ctx context.Context, images ImageLister) {
	log := logr.FromContextOrDiscard(ctx)
	intents, err := m.store.listIntents(ctx)
	if err != nil {
		log.Error(err, "There were errors listing image pull intents, continuing with an incomplete list")
	}
	if len(intents) == 0 || images == nil || ctx.Err() != nil {
		return
	}
	list, err := images.ListImages(ctx, nil)
	if err != nil {
		log.Error(err, "Failed to list images")
	}
	inFlight := map[string]bool{}
	for _, in := range intents {
		inFlight[in.Image] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, img := range list {
		found := map[string]bool{}
		for _, name := range append(append([]string(nil), img.GetRepoDigests()...), img.GetRepoTags()...) {
			if inFlight[name] {
				found[name] = true
			}
		}
		for image := range found {
			if err := m.writePulledIfChangedLocked(image, img.GetId(), nil); err != nil {
				log.Error(err, "Failed to write an image pull record", "imageRef", img.GetId())
				continue
			}
			if err := m.store.deleteIntent(image); err != nil {
				log.V(2).Info("Failed to remove image pull intent", "image", image, "err", err)
			}
		}
	}
}

// RecordPullIntent records that image (as the pod wrote it) is about to be
// pulled. Each call must be matched by RecordImagePulled or
// RecordImagePullFailed.
func (m *Manager) RecordPullIntent(image string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.store.writeIntent(image); err != nil {
		return fmt.Errorf("%w: %w", ErrRecordIntent, err)
	}
	m.intents[image]++
	return nil
}

// RecordImagePulled records that image was pulled as imageRef with creds
// (nil: unknown, so the next pod must verify) and ends one intent. A
// failure to write keeps the intent, so the image still counts as pulled
// by the manager, as in kubelet.
func (m *Manager) RecordImagePulled(ctx context.Context, image, imageRef string, creds *Credentials) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.writePulledIfChangedLocked(image, imageRef, creds); err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "Failed to write image pulled record", "imageRef", imageRef)
		return err
	}
	m.decrementLocked(ctx, image)
	return nil
}

// RecordImagePullFailed ends one intent for image; the last one removes
// the intent record.
func (m *Manager) RecordImagePullFailed(ctx context.Context, image string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.decrementLocked(ctx, image)
}

func (m *Manager) decrementLocked(ctx context.Context, image string) {
	if m.intents[image] <= 1 {
		if err := m.store.deleteIntent(image); err != nil {
			logr.FromContextOrDiscard(ctx).Error(err, "Failed to remove image pull intent", "image", image)
			return
		}
		delete(m.intents, image)
		return
	}
	m.intents[image]--
}

// MustAttemptImagePull is kubelet's decision for an image that is present
// as imageRef: false when the policy needs no verification, or a record
// shows the image pulled by every pod on the node's credentials, or by
// one of the pod's pull secrets (same hash, or same coordinates) or its
// service account; true otherwise (the pod must pull with its own
// credentials). Unreadable records mean true. An error is podCreds's.
func (m *Manager) MustAttemptImagePull(ctx context.Context, image, imageRef string, podCreds PodCredentialsFunc) (bool, error) {
	if imageRef == "" {
		return true, nil
	}
	log := logr.FromContextOrDiscard(ctx)
	rec, pulledByManager, err := m.lookup(image, imageRef)
	if err != nil {
		log.Error(err, "Unable to access cache records about image pulls")
		return true, nil
	}
	if !m.enforce(image, pulledByManager) {
		return false, nil
	}
	if rec == nil {
		return true, nil
	}
	name, err := TrimTagDigest(image)
	if err != nil {
		log.Error(err, "Failed to parse image name, forcing image credentials reverification", "image", image)
		return true, nil
	}
	cached, ok := rec.CredentialMapping[name]
	if !ok {
		return true, nil
	}
	if cached.NodePodsAccessible {
		return false, nil
	}
	if len(cached.KubernetesSecrets) == 0 && len(cached.KubernetesServiceAccounts) == 0 {
		return true, nil
	}
	secrets, sa, err := podCreds()
	if err != nil {
		return true, err
	}
	for _, ps := range secrets {
		for _, cs := range cached.KubernetesSecrets {
			hashes := cs.CredentialHash != "" && ps.CredentialHash == cs.CredentialHash
			coords := ps.UID == cs.UID && ps.Namespace == cs.Namespace && ps.Name == cs.Name
			small := len(cached.KubernetesSecrets) < writeWhileMatchingLimit
			switch {
			case hashes:
				if !coords && small {
					// The same credential from another secret: remember it.
					m.rememberSecret(ctx, image, imageRef, ps)
				}
				return false, nil
			case coords && small:
				// The same secret, rotated: remember the new hash. (As in
				// kubelet, a record of 100 secrets or more does not
				// accept a secret by coordinates alone.)
				m.rememberSecret(ctx, image, imageRef, ps)
				return false, nil
			}
		}
	}
	if sa != nil && slices.Contains(cached.KubernetesServiceAccounts, *sa) {
		return false, nil
	}
	return true, nil
}

func (m *Manager) rememberSecret(ctx context.Context, image, imageRef string, s Secret) {
	m.mu.Lock()
	err := m.writePulledIfChangedLocked(image, imageRef, &Credentials{KubernetesSecrets: []Secret{s}})
	m.mu.Unlock()
	if err != nil {
		logr.FromContextOrDiscard(ctx).Error(err, "Failed to write an image pulled record", "image", image, "imageRef", imageRef)
	}
}

// lookup reads the record of imageRef and whether the manager pulled it
// (a record, an intent in flight, or an intent left on disk).
func (m *Manager) lookup(image, imageRef string) (*PulledRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, exists, err := m.store.getPulled(imageRef)
	switch {
	case err != nil:
		return nil, false, err
	case exists || rec != nil:
		return rec, true, nil
	case m.intents[image] > 0:
		return nil, true, nil
	}
	ok, err := m.store.intentExists(image)
	if err != nil {
		return nil, false, fmt.Errorf("failed to check existence of an image pull intent: %w", err)
	}
	return nil, ok, nil
}

// writePulledIfChangedLocked is kubelet's writePulledRecordIfChanged.
func (m *Manager) writePulledIfChangedLocked(image, imageRef string, creds *Credentials) error {
	name, err := TrimTagDigest(image)
	if err != nil {
		return fmt.Errorf("invalid image name %q: %w", image, err)
	}
	rec, _, err := m.store.getPulled(imageRef)
	if err != nil {
		rec = nil
	}
	changed := false
	if rec == nil {
		changed = true
		rec = &PulledRecord{LastUpdatedTime: metav1.NewTime(m.now()), ImageRef: imageRef,
			CredentialMapping: map[string]Credentials{}}
		// The record alone marks the image as pulled by the manager; with
		// no credentials the next pod must verify.
		if creds != nil {
			rec.CredentialMapping[name] = *creds
		}
	} else {
		rec, changed = mergeCreds(rec, name, creds, m.now())
	}
	if !changed {
		return nil
	}
	return m.store.writePulled(rec)
}

// mergeCreds is kubelet's pulledRecordMergeNewCreds.
func mergeCreds(orig *PulledRecord, name string, creds *Credentials, now time.Time) (*PulledRecord, bool) {
	if creds == nil || (!creds.NodePodsAccessible && len(creds.KubernetesSecrets) == 0 && len(creds.KubernetesServiceAccounts) == 0) {
		return orig, false
	}
	sel, found := orig.CredentialMapping[name]
	if !found {
		ret := orig.DeepCopy()
		if ret.CredentialMapping == nil {
			ret.CredentialMapping = map[string]Credentials{}
		}
		ret.CredentialMapping[name] = *creds
		ret.LastUpdatedTime = metav1.NewTime(now)
		return ret, true
	}
	if sel.NodePodsAccessible {
		return orig, false
	}
	switch {
	case creds.NodePodsAccessible:
		sel = Credentials{NodePodsAccessible: true}
	case len(creds.KubernetesSecrets) > 0:
		var changed bool
		if sel.KubernetesSecrets, changed = mergeSecrets(sel.KubernetesSecrets, creds.KubernetesSecrets); !changed {
			return orig, false
		}
	case len(creds.KubernetesServiceAccounts) > 0:
		var changed bool
		if sel.KubernetesServiceAccounts, changed = mergeServiceAccounts(sel.KubernetesServiceAccounts, creds.KubernetesServiceAccounts); !changed {
			return orig, false
		}
	}
	ret := orig.DeepCopy()
	ret.CredentialMapping[name] = sel
	ret.LastUpdatedTime = metav1.NewTime(now)
	return ret, true
}

// mergeSecrets keeps one secret per namespace, name and UID (the new hash
// wins), sorted by namespace, name, UID.
func mergeSecrets(orig, add []Secret) ([]Secret, bool) {
	type coords struct{ uid, ns, name string }
	set := map[coords]string{}
	for _, s := range orig {
		set[coords{s.UID, s.Namespace, s.Name}] = s.CredentialHash
	}
	changed := false
	for _, s := range add {
		k := coords{s.UID, s.Namespace, s.Name}
		if h, ok := set[k]; !ok || h != s.CredentialHash {
			changed = true
			set[k] = s.CredentialHash
		}
	}
	if !changed {
		return orig, false
	}
	out := make([]Secret, 0, len(set))
	for k, h := range set {
		out = append(out, Secret{UID: k.uid, Namespace: k.ns, Name: k.name, CredentialHash: h})
	}
	slices.SortFunc(out, func(a, b Secret) int {
		return cmpCoords(a.Namespace, a.Name, a.UID, b.Namespace, b.Name, b.UID)
	})
	return out, true
}

func mergeServiceAccounts(orig, add []ServiceAccount) ([]ServiceAccount, bool) {
	changed := false
	out := orig
	for _, s := range add {
		if !slices.Contains(out, s) {
			if !changed {
				out = append([]ServiceAccount(nil), orig...)
			}
			changed = true
			out = append(out, s)
		}
	}
	if !changed {
		return orig, false
	}
	slices.SortFunc(out, func(a, b ServiceAccount) int {
		return cmpCoords(a.Namespace, a.Name, a.UID, b.Namespace, b.Name, b.UID)
	})
	return out, true
}

func cmpCoords(ans, aname, auid, bns, bname, buid string) int {
	if c := strings.Compare(ans, bns); c != 0 {
		return c
	}
	if c := strings.Compare(aname, bname); c != 0 {
		return c
	}
	return strings.Compare(auid, buid)
}

// PruneUnknownRecords deletes the pulled records of image references not
// in inUse that were last updated before until (kubelet's image garbage
// collector calls it with the images it listed and a time taken before
// listing them).
func (m *Manager) PruneUnknownRecords(ctx context.Context, inUse []string, until time.Time) {
	log := logr.FromContextOrDiscard(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	recs, err := m.store.listPulled(ctx)
	if err != nil {
		log.Error(err, "There were errors listing image pulled records, pruning an incomplete list")
	}
	for _, r := range recs {
		if !r.LastUpdatedTime.Time.Before(until) || slices.Contains(inUse, r.ImageRef) {
			continue
		}
		if err := m.store.deletePulled(r.ImageRef); err != nil {
			log.Error(err, "Failed to remove an image pulled record", "imageRef", r.ImageRef)
		}
	}
}

// Record returns the pulled record of imageRef, if there is one.
func (m *Manager) Record(imageRef string) (*PulledRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok, err := m.store.getPulled(imageRef)
	if err != nil {
		return nil, ok, err
	}
	return rec, rec != nil, nil
}
