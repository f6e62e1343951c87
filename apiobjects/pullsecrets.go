package apiobjects

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
)

// ServiceAccountGetter gives ServiceAccounts, as a lister or client-go's
// ServiceAccounts(ns).Get. A missing one is an errors.IsNotFound error.
type ServiceAccountGetter interface {
	GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
}

// EventFailedToRetrieveImagePullSecret is kubelet's reason for the Warning
// event on a pod some of whose pull secrets could not be fetched and whose
// sync then failed to pull an image.
const EventFailedToRetrieveImagePullSecret = "FailedToRetrieveImagePullSecret"

// PullSecrets gathers a pod's image pull secrets as kubelet v1.37.2's
// getPullSecretsForPod: the pod's imagePullSecrets in order, entries with
// an empty name skipped (the API server lets them through); a Secret
// that cannot be fetched, for whatever reason, is left out and logged
// (its name, never its data). The pull then goes on with what was found,
// and fails or not on its own.
//
// As kubelet v1.37.2 (which moved it out of the lookup), the Warning
// event FailedToRetrieveImagePullSecret comes only after a sync that
// tried to pull and failed: AfterSync, called with the sync's result,
// sends "Unable to retrieve some image pull secrets (a, b); attempting to
// pull the image may not succeed." naming every secret the pod's last
// ForPod left out, when one of the sync's steps failed with
// images.ErrImagePull. A sync that did not pull (an image present, a pull
// back-off, ErrImagePullBackOff) or whose pull succeeded sends none, nor
// do the runtime's registry-unavailable and signature failures, which
// kubelet does not count as ErrImagePull. The event names secrets, never
// their contents.
//
// Its ForPod method is what podworker.WithPullSecrets takes; AfterSync
// fits podworker.WithOnSync:
//
//	podworker.WithPullSecrets(p.ForPod),
//	podworker.WithOnSync(func(_ types.UID, st podworker.PodState) { p.AfterSync(st.Pod, st.Result) })
//
// Kubelet reads only the pod's list: the ServiceAccount admission plugin
// has already copied the service account's imagePullSecrets into a pod
// that listed none when the pod was created. A pod created without that
// plugin (another API server, a static pod, a test's fake clientset) does
// not get them; ServiceAccounts, when set, adds them here instead.
//
// A PullSecrets remembers, per pod, the names its last ForPod left out
// until AfterSync takes them; it must not be copied after first use.
type PullSecrets struct {
	// Source gives the Secrets (nil: none can be fetched, every one is
	// reported as kubelet reports a failed fetch).
	Source Source
	// Recorder receives the event (nil: none is sent). Client-go's
	// record.EventRecorder fits.
	Recorder podsync.EventRecorder
	// ServiceAccounts, when set, adds the imagePullSecrets of the pod's
	// service account ("default" when the pod names none) after the
	// pod's own, skipping names the pod already lists. A missing service
	// account adds nothing; another error fails ForPod, so the sync is
	// retried rather than pulling without credentials. This goes beyond
	// kubelet, which leaves the copy to admission (and admission copies
	// them only into a pod that lists none).
	ServiceAccounts ServiceAccountGetter

	mu      sync.Mutex
	missing map[types.UID][]string // by pod: the names the last ForPod left out
}

// ForPod returns the pod's pull secrets, and remembers for AfterSync the
// ones it could not fetch. It fails only when ctx ends, or when the
// service account cannot be read (ServiceAccounts set).
func (p *PullSecrets) ForPod(ctx context.Context, pod *corev1.Pod) ([]corev1.Secret, error) {
	refs := pod.Spec.ImagePullSecrets
	if p.ServiceAccounts != nil {
		name := pod.Spec.ServiceAccountName
		if name == "" {
			name = "default"
		}
		sa, err := p.ServiceAccounts.GetServiceAccount(ctx, pod.Namespace, name)
		switch {
		case err == nil:
			listed := map[string]bool{}
			refs = append([]corev1.LocalObjectReference(nil), refs...)
			for _, r := range refs {
				listed[r.Name] = true
			}
			for _, r := range sa.ImagePullSecrets {
				if !listed[r.Name] {
					listed[r.Name] = true
					refs = append(refs, r)
				}
			}
		case !apierrors.IsNotFound(err):
			return nil, err
		}
	}

	log := logr.FromContextOrDiscard(ctx)
	secrets := []corev1.Secret{}
	var failed []string
	for _, ref := range refs {
		if ref.Name == "" {
			continue // kubernetes#99454: allowed by validation, ignored to avoid warnings
		}
		var (
			s   *corev1.Secret
			err error
		)
		if p.Source == nil {
			err = ErrNoSource
		} else {
			s, err = p.Source.GetSecret(ctx, pod.Namespace, ref.Name)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			log.Info("Unable to retrieve pull secret, the image pull may not succeed.", "pod", pod.Namespace+"/"+pod.Name, "secret", pod.Namespace+"/"+ref.Name, "err", err)
			failed = append(failed, ref.Name)
			continue
		}
		secrets = append(secrets, *s)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(failed) > 0 {
		if p.missing == nil {
			p.missing = map[types.UID][]string{}
		}
		p.missing[pod.UID] = failed
	} else {
		delete(p.missing, pod.UID)
	}
	return secrets, nil
}

// AfterSync is called with a sync's result for pod (podworker's
// PodState.Result). It takes what the pod's last ForPod left out and,
// when there was some and a step of r failed with images.ErrImagePull,
// sends the Warning event FailedToRetrieveImagePullSecret on pod. It
// forgets the pod either way, so a pod gone leaves nothing behind.
func (p *PullSecrets) AfterSync(pod *corev1.Pod, r podsync.Result) {
	if pod == nil {
		return
	}
	p.mu.Lock()
	failed := p.missing[pod.UID]
	delete(p.missing, pod.UID)
	p.mu.Unlock()
	if len(failed) == 0 || p.Recorder == nil {
		return
	}
	for _, sr := range r.Results {
		// Only a sync that tried a pull: a back-off is ErrImagePullBackOff.
		if sr.Err != nil && errors.Is(sr.Err, images.ErrImagePull) {
			p.Recorder.Eventf(pod, corev1.EventTypeWarning, EventFailedToRetrieveImagePullSecret,
				"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(failed, ", "))
			return
		}
	}
}
