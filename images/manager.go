package images

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/podstart/podstart/credentials"
	"github.com/podstart/podstart/images/pullrecords"
	"github.com/podstart/podstart/internal/backoff"
	"github.com/podstart/podstart/runtime"
)

// Image pull back-off defaults (kubelet's imageBackOffPeriod and
// MaxImageBackOff).
const (
	DefaultBackOffInitial = 10 * time.Second
	DefaultBackOffMax     = 300 * time.Second
)

// Option configures a Manager.
type Option func(*options)

type options struct {
	recorder       EventRecorder
	clock          clock.Clock
	node           credentials.Keyring
	credOpts       []credentials.Option
	serial         bool
	maxParallel    int
	backoffInitial time.Duration
	backoffMax     time.Duration
	handler        func(*corev1.Pod) string
	progress       func(image string, p runtime.PullProgress)
	stall          time.Duration
	maxAttempts    int
	records        *pullrecords.Manager
}

// WithRecorder sets where events go (default: nowhere).
func WithRecorder(r EventRecorder) Option { return func(o *options) { o.recorder = r } }

// WithClock sets the clock for back-off and durations.
func WithClock(c clock.Clock) Option { return func(o *options) { o.clock = c } }

// WithNodeKeyring sets the node's keyring, tried after the pod's pull
// secrets (default: none).
func WithNodeKeyring(k credentials.Keyring) Option { return func(o *options) { o.node = k } }

// WithCredentialOptions passes options to the pull-secret keyring (for
// example credentials.WithTokens()).
func WithCredentialOptions(opts ...credentials.Option) Option {
	return func(o *options) { o.credOpts = append(o.credOpts, opts...) }
}

// WithSerialPulls pulls one image at a time, first come first served
// (kubelet's default, serializeImagePulls).
func WithSerialPulls() Option { return func(o *options) { o.serial, o.maxParallel = true, 0 } }

// WithParallelPulls pulls in parallel with at most max pulls at once
// (kubelet's maxParallelImagePulls); max < 1 means no limit.
func WithParallelPulls(max int) Option {
	return func(o *options) { o.serial, o.maxParallel = false, max }
}

// WithBackOff sets the pull back-off's initial and maximum delay.
func WithBackOff(initial, max time.Duration) Option {
	return func(o *options) { o.backoffInitial, o.backoffMax = initial, max }
}

// WithRuntimeHandler sets how a pod's runtime handler is found (kubelet
// resolves the pod's RuntimeClass); it goes into the CRI image spec.
func WithRuntimeHandler(f func(*corev1.Pod) string) Option { return func(o *options) { o.handler = f } }

// WithProgress receives pull progress when the runtime can report it
// (runtime.ProgressPuller).
func WithProgress(f func(image string, p runtime.PullProgress)) Option {
	return func(o *options) { o.progress = f }
}

// WithStallTimeout cancels a pull that reports no progress for d, with
// ErrPullStalled; it needs a runtime that reports progress.
func WithStallTimeout(d time.Duration) Option { return func(o *options) { o.stall = d } }

// DefaultMaxPullAttempts bounds the credentials one pull tries. Kubelet
// tries every matching credential in turn, so a large pull secret (1 MiB
// can hold thousands of matching keys) holds the serial pull slot for
// thousands of registry round trips; podstart stops after this many and
// says so in the error.
const DefaultMaxPullAttempts = 16

// WithMaxPullAttempts sets how many credentials one pull tries at most
// (default DefaultMaxPullAttempts); n < 0 tries them all, as kubelet.
func WithMaxPullAttempts(n int) Option { return func(o *options) { o.maxAttempts = n } }

// Manager is kubelet's image manager: EnsureImageExists with pull policy,
// back-off, serial or parallel pullers, and one runtime pull shared by
// concurrent callers with the same credentials. Close it to stop pulls in
// flight; it starts no goroutine that outlives Close.
type Manager struct {
	img     runtime.ImageService
	o       options
	backoff *backoff.Backoff
	slots   *slots // nil: unlimited

	mu      sync.Mutex
	flights map[string]*flight
	prevErr map[string]string
	// prevCause is the last pull's error per key, so an error in back-off
	// still matches its cause with errors.Is.
	prevCause map[string]error
	secrets   *credentials.SecretsCache // parsed pull secrets, by content
	closed    bool
	wg        sync.WaitGroup

	// tagged caches applyDefaultTag's answers by image name: a node runs
	// few images and parses each on every container start otherwise.
	tagged map[string]taggedImage
}

type taggedImage struct{ image, repo string }

// maxTagged bounds the parsed image names kept; past it the cache starts
// again empty.
const maxTagged = 1024

// defaultTag is applyDefaultTag, remembered for names that parse.
func (m *Manager) defaultTag(image string) (string, string, error) {
	m.mu.Lock()
	t, ok := m.tagged[image]
	m.mu.Unlock()
	if ok {
		return t.image, t.repo, nil
	}
	tagged, repo, err := applyDefaultTag(image)
	if err != nil {
		return "", "", err
	}
	m.mu.Lock()
	if m.tagged == nil || len(m.tagged) >= maxTagged {
		m.tagged = map[string]taggedImage{}
	}
	m.tagged[image] = taggedImage{tagged, repo}
	m.mu.Unlock()
	return tagged, repo, nil
}

// NewManager returns a manager that pulls through img.
func NewManager(img runtime.ImageService, opts ...Option) *Manager {
	o := options{recorder: discard{}, clock: clock.RealClock{}, serial: true,
		backoffInitial: DefaultBackOffInitial, backoffMax: DefaultBackOffMax,
		handler: func(*corev1.Pod) string { return "" }, maxAttempts: DefaultMaxPullAttempts}
	for _, opt := range opts {
		opt(&o)
	}
	// Nil options keep the defaults.
	if o.recorder == nil {
		o.recorder = discard{}
	}
	if o.clock == nil {
		o.clock = clock.RealClock{}
	}
	if o.handler == nil {
		o.handler = func(*corev1.Pod) string { return "" }
	}
	if o.maxAttempts == 0 {
		o.maxAttempts = DefaultMaxPullAttempts
	}
	m := &Manager{img: img, o: o, flights: map[string]*flight{}, prevErr: map[string]string{}, prevCause: map[string]error{},
		secrets: credentials.NewSecretsCache(0, o.credOpts...),
		backoff: backoff.New(o.clock, o.backoffInitial, o.backoffMax, nil)}
	switch {
	case o.serial:
		m.slots = newSlots(1)
	case o.maxParallel >= 1:
		m.slots = newSlots(o.maxParallel)
	}
	return m
}

// Close cancels the pulls in flight and waits for them to end; later
// calls fail with ErrClosed.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	for _, f := range m.flights {
		f.cancel()
	}
	m.mu.Unlock()
	m.wg.Wait()
	return nil
}

// ApplyDefaultTag appends ":latest" to a reference with neither tag nor
// digest, textually (the name is not qualified), as kubelet does.
func ApplyDefaultTag(image string) (string, error) {
	tagged, _, err := applyDefaultTag(image)
	return tagged, err
}

// applyDefaultTag also returns the normalised repository name that
// keyrings look up, from the same parse (credentials.ParseImageName,
// kubelet's parsers.ParseImageName): the tag is appended textually, as
// kubelet's applyDefaultImageTag does, so a short name stays short.
func applyDefaultTag(image string) (tagged, repo string, err error) {
	n, err := credentials.ParseImageName(image)
	if err != nil {
		// Kubelet's parsers.ParseImageName wording; errors.Is still sees
		// the reference package's sentinel.
		return "", "", err
	}
	if n.Digest == "" && n.Tag != "" && !strings.HasSuffix(image, ":"+n.Tag) {
		return image + ":" + n.Tag, n.Repository, nil
	}
	return image, n.Repository, nil
}

// EnsureImageExists makes sure the container's image is present as its
// pull policy says, pulling it with the pod's pull secrets and then the
// node's credentials. It returns the runtime's image reference, a message
// for people, and on failure an *Error matching one of kubelet's
// sentinels. Events go to the recorder as kubelet emits them.
func (m *Manager) EnsureImageExists(ctx context.Context, pod *corev1.Pod, container *corev1.Container, pullSecrets []corev1.Secret, sandboxConfig *runtimeapi.PodSandboxConfig) (imageRef, message string, err error) {
	return m.ensure(ctx, pod, ContainerRef(pod, container), container.Image, container.ImagePullPolicy, pullSecrets, sandboxConfig)
}

// EnsureImageVolume makes sure the image of the pod's image volume vol
// (ImageVolume, GA in v1.37) is present as its pull policy says, as
// EnsureImageExists does for a container's image: the same credentials,
// pull records and back-off (kubelet's one puller keyed by pod and
// image), with the events on the pod itself (kubelet's pod reference, no
// container field path). vol must be an image volume.
func (m *Manager) EnsureImageVolume(ctx context.Context, pod *corev1.Pod, vol *corev1.Volume, pullSecrets []corev1.Secret, sandboxConfig *runtimeapi.PodSandboxConfig) (imageRef, message string, err error) {
	if vol == nil || vol.Image == nil {
		return "", ErrNotImageVolume.Error(), &Error{Reason: ErrNotImageVolume}
	}
	return m.ensure(ctx, pod, ContainerRef(pod, nil), vol.Image.Reference, vol.Image.PullPolicy, pullSecrets, sandboxConfig)
}

// ensure is EnsureImageExists and EnsureImageVolume: requested is the
// image as the pod names it, ref where its events go.
func (m *Manager) ensure(ctx context.Context, pod *corev1.Pod, ref *corev1.ObjectReference, requested string, policy corev1.PullPolicy, pullSecrets []corev1.Secret, sandboxConfig *runtimeapi.PodSandboxConfig) (imageRef, message string, err error) {
	recordPulled := func(int) {}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		// Nothing is inspected, recorded or backed off once closed.
		return "", ErrClosed.Error(), &Error{Reason: ErrClosed}
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("pod", pod.Namespace+"/"+pod.Name, "image", requested)

	image, repo, err := m.defaultTag(requested)
	if err != nil {
		msg := fmt.Sprintf("Failed to apply default image tag %q: %v", requested, err)
		m.o.recorder.Eventf(ref, corev1.EventTypeWarning, EventInspectFailed, "%s", msg)
		return "", msg, &Error{Reason: ErrInvalidImageName, Err: err}
	}
	spec := &runtimeapi.ImageSpec{Image: image, RuntimeHandler: m.o.handler(pod)}
	if len(pod.Annotations) > 0 {
		spec.Annotations = make(map[string]string, len(pod.Annotations))
		for k, v := range pod.Annotations {
			spec.Annotations[k] = v
		}
	}

	var present string // the image's reference when it is on the node
	if policy == corev1.PullIfNotPresent || policy == corev1.PullNever {
		st, err := m.img.ImageStatus(ctx, spec, false)
		if err != nil {
			err = runtime.Classify(err)
			// Kubelet prints the image reference it failed to get, always
			// "" here; the image asked for says more.
			msg := fmt.Sprintf("Failed to inspect image %q: %v", image, err)
			m.o.recorder.Eventf(ref, corev1.EventTypeWarning, EventInspectFailed, "%s", msg)
			return "", msg, &Error{Reason: ErrImageInspect, Err: err}
		}
		present = st.GetImage().GetId()
		if present == "" && policy == corev1.PullNever {
			return m.neverPull(ref, requested)
		}
	}

	// The pod's credentials are looked up once, and only when needed
	// (kubelet's makeLookupPullCredentialsFunc).
	var (
		creds    []credentials.AuthConfig
		credsErr error
		looked   bool
	)
	lookup := func() ([]credentials.AuthConfig, error) {
		if !looked {
			looked = true
			creds, credsErr = m.lookupCredentials(ctx, pod, pullSecrets, repo)
		}
		return creds, credsErr
	}

	records := m.o.records
	if present != "" {
		if records == nil {
			msg := fmt.Sprintf("Container image %q already present on machine", requested)
			m.o.recorder.Eventf(ref, corev1.EventTypeNormal, EventPulled, "%s", msg)
			return present, msg, nil
		}
		// KEP-2535: may this pod use the image without pulling it?
		must, err := records.MustAttemptImagePull(ctx, requested, present, func() ([]pullrecords.Secret, *pullrecords.ServiceAccount, error) {
			c, err := lookup()
			if err != nil {
				return nil, nil, err
			}
			s, sa := podCredentials(c)
			return s, sa, nil
		})
		if err != nil {
			return m.malformedSecret(ref, requested, err)
		}
		if !must {
			msg := fmt.Sprintf("Container image %q already present on machine and can be accessed by the pod", requested)
			m.o.recorder.Eventf(ref, corev1.EventTypeNormal, EventPulled, "%s", msg)
			return present, msg, nil
		}
		log.V(2).Info("Image present but the pod's credentials must be verified: pulling")
		if policy == corev1.PullNever {
			// As kubelet: the same answer as an absent image, so the
			// image's presence is not revealed to a pod that may not
			// use it.
			return m.neverPull(ref, requested)
		}
	}

	if _, err := lookup(); err != nil {
		return m.malformedSecret(ref, requested, err)
	}

	if records != nil {
		if err := records.RecordPullIntent(requested); err != nil {
			msg := fmt.Sprintf("Failed to record image pull intent for container image %q: %v", requested, err)
			return "", msg, &Error{Reason: ErrImagePull, Err: err}
		}
		pulledWith := -2 // set to the credential used once the pull succeeds
		defer func() {
			if err == nil && pulledWith > -2 {
				_ = records.RecordImagePulled(ctx, requested, imageRef, pullCredentials(creds, pulledWith))
			} else {
				records.RecordImagePullFailed(ctx, requested)
			}
		}()
		recordPulled = func(i int) { pulledWith = i }
	}

	key := string(pod.UID) + "_" + requested
	now := m.o.clock.Now()
	if m.backoff.IsInBackOffSinceUpdate(key, now) {
		m.o.recorder.Eventf(ref, corev1.EventTypeNormal, EventBackOff, "Back-off pulling image %q", requested)
		msg := fmt.Sprintf("Back-off pulling image %q", requested)
		m.mu.Lock()
		if prev, ok := m.prevErr[key]; ok {
			msg += ": " + prev
		}
		cause := m.prevCause[key]
		m.mu.Unlock()
		return "", msg, &Error{Reason: ErrImagePullBackOff, Err: cause, Until: m.backOffUntil(key)}
	}
	m.mu.Lock()
	delete(m.prevErr, key)
	delete(m.prevCause, key)
	m.mu.Unlock()

	m.o.recorder.Eventf(ref, corev1.EventTypeNormal, EventPulling, "Pulling image %q", requested)
	log.V(2).Info("Pulling image", "credentials", len(creds))
	res := m.join(ctx, spec, creds, sandboxConfig)
	total := m.o.clock.Since(now)
	if res.err != nil {
		m.o.recorder.Eventf(ref, corev1.EventTypeWarning, EventFailed, "Failed to pull image %q: %v", requested, res.err)
		if res.cancelled {
			// The caller gave up: the pull did not fail, so no back-off
			// (which would hold back the pod's next, live, caller).
			msg, reason := classifyPullError(requested, res.err)
			return "", msg, &Error{Reason: reason, Err: res.err}
		}
		collected := m.backoff.Next(key, m.o.clock.Now())
		msg, reason := classifyPullError(requested, res.err)
		m.mu.Lock()
		m.prevErr[key] = reason.Error() + ": " + msg
		m.prevCause[key] = res.err
		m.mu.Unlock()
		if collected {
			m.gcPrevErr()
		}
		return "", msg, &Error{Reason: reason, Err: res.err, Until: m.backOffUntil(key)}
	}
	m.o.recorder.Eventf(ref, corev1.EventTypeNormal, EventPulled, "Successfully pulled image %q in %v (%v including waiting). Image size: %v bytes.",
		requested, res.pull.Truncate(time.Millisecond), total.Truncate(time.Millisecond), res.size)
	m.gcBackOff()
	recordPulled(res.cred)
	return res.ref, "", nil
}

// neverPull is kubelet's imageNotPresentOnNeverPolicyError: for an
// absent image, and for a present one the pod may not use.
func (m *Manager) neverPull(ref *corev1.ObjectReference, requested string) (string, string, error) {
	msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", requested)
	m.o.recorder.Eventf(ref, corev1.EventTypeWarning, EventErrImageNeverPull, "%s", msg)
	return "", msg, &Error{Reason: ErrImageNeverPull}
}

// malformedSecret answers a pull secret that does not parse: the error
// names the secret, never its content. Not a pull, so no back-off.
func (m *Manager) malformedSecret(ref *corev1.ObjectReference, requested string, err error) (string, string, error) {
	msg := err.Error()
	m.o.recorder.Eventf(ref, corev1.EventTypeWarning, EventFailed, "Failed to pull image %q: %s", requested, msg)
	return "", msg, &Error{Reason: ErrImagePull, Err: err}
}

// lookupCredentials is the pod's pull secrets, then the node keyring
// (narrowed to the pod when it answers per pod), for repo.
func (m *Manager) lookupCredentials(ctx context.Context, pod *corev1.Pod, pullSecrets []corev1.Secret, repo string) ([]credentials.AuthConfig, error) {
	// Keyrings look up the normalised repository, not the user's string.
	node := m.o.node
	if pk, ok := node.(credentials.PodKeyring); ok && pod != nil {
		// A plugin in service-account token mode answers for this pod.
		node = pk.ForPod(ctx, credentials.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ServiceAccountName: pod.Spec.ServiceAccountName})
	}
	keyring, err := m.secrets.MakeKeyring(pullSecrets, node)
	if err != nil {
		return nil, err
	}
	creds, _ := keyring.Lookup(repo)
	return creds, nil
}

// classifyPullError is kubelet's evalCRIPullErr over podstart's error
// classes: the registry-unavailable and signature texts get kubelet's
// messages; anything else is ErrImagePull with the error's text. As in
// kubelet, several credentials failing differently are ErrImagePull.
func classifyPullError(requested string, err error) (msg string, reason error) {
	text := err.Error()
	if agg, ok := err.(aggregate); ok && agg.distinct() > 1 {
		return text, ErrImagePull
	}
	msg = text
	if s, ok := runtimeStatusMessage(err); ok {
		msg = s
	}
	for _, c := range []struct {
		class error
		why   string
	}{{ErrRegistryUnavailable, "the registry is unavailable"}, {ErrSignatureValidationFailed, "the signature validation failed"}} {
		if rest, ok := strings.CutPrefix(msg, c.class.Error()); ok && errors.Is(err, c.class) {
			return fmt.Sprintf("image pull failed for %s because %s%s", requested, c.why, rest), c.class
		}
	}
	return text, ErrImagePull
}

func (m *Manager) gcBackOff() {
	m.backoff.GC()
	m.gcPrevErr()
}

// gcPrevErr drops the last errors of keys the back-off forgot.
func (m *Manager) gcPrevErr() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key := range m.prevErr {
		if _, ok := m.backoff.Lookup(key); !ok {
			delete(m.prevErr, key)
			delete(m.prevCause, key)
		}
	}
}

// backOffUntil is when key's pull back-off ends (zero: none).
func (m *Manager) backOffUntil(key string) time.Time {
	e, ok := m.backoff.Lookup(key)
	if !ok || e.Delay == 0 {
		return time.Time{}
	}
	return e.LastUpdate.Add(e.Delay)
}

// BackOffState is one pod and image's pull back-off.
type BackOffState struct {
	Delay      time.Duration
	LastUpdate time.Time
	LastError  string
}

// BackOff reports the pull back-off of a pod's image (as written in the
// container spec).
func (m *Manager) BackOff(podUID types.UID, image string) (BackOffState, bool) {
	key := string(podUID) + "_" + image
	e, ok := m.backoff.Lookup(key)
	if !ok {
		return BackOffState{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return BackOffState{Delay: e.Delay, LastUpdate: e.LastUpdate, LastError: m.prevErr[key]}, true
}

// ResetBackOff forgets a pod's image back-off, so the next call pulls at
// once (for when a pull secret was fixed). Kubelet has no such call.
func (m *Manager) ResetBackOff(podUID types.UID, image string) {
	key := string(podUID) + "_" + image
	m.backoff.Reset(key)
	m.mu.Lock()
	delete(m.prevErr, key)
	delete(m.prevCause, key)
	m.mu.Unlock()
}

// fingerprint identifies a list of credentials without keeping them.
func fingerprint(creds []credentials.AuthConfig) string {
	h := sha256.New()
	var n [8]byte
	for _, c := range creds {
		for _, f := range []string{c.Username, c.Password, c.Auth, c.ServerAddress, c.IdentityToken, c.RegistryToken} {
			binary.BigEndian.PutUint64(n[:], uint64(len(f)))
			h.Write(n[:])
			h.Write([]byte(f))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
