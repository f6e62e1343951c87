package apiobjects

import (
	"context"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podstart/podstart/podsync"
)

// ServiceAccountGetter gives ServiceAccounts, as a lister or client-go's
// ServiceAccounts(ns).Get. A missing one is an errors.IsNotFound error.
type ServiceAccountGetter interface {
	GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
}

// EventFailedToRetrieveImagePullSecret is kubelet's reason for the Warning
// event on a pod some of whose pull secrets could not be fetched.
const EventFailedToRetrieveImagePullSecret = "FailedToRetrieveImagePullSecret"

// PullSecrets gathers a pod's image pull secrets as kubelet v1.36's
// getPullSecretsForPod: the pod's imagePullSecrets in order, entries with
// an empty name skipped (the API server lets them through); a Secret
// that cannot be fetched, for whatever reason, is left out and logged,
// and one Warning event FailedToRetrieveImagePullSecret on the pod names
// every one left out: "Unable to retrieve some image pull secrets (a,
// b); attempting to pull the image may not succeed." The pull then goes
// on with what was found, and fails or not on its own.
//
// Its ForPod method is what podworker.WithPullSecrets takes.
//
// Kubelet reads only the pod's list: the ServiceAccount admission plugin
// has already copied the service account's imagePullSecrets into a pod
// that listed none when the pod was created. A pod created without that
// plugin (another API server, a static pod, a test's fake clientset) does
// not get them; ServiceAccounts, when set, adds them here instead.
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
}

// ForPod returns the pod's pull secrets. It fails only when ctx ends, or
// when the service account cannot be read (ServiceAccounts set).
func (p PullSecrets) ForPod(ctx context.Context, pod *corev1.Pod) ([]corev1.Secret, error) {
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
	if len(failed) > 0 && p.Recorder != nil {
		p.Recorder.Eventf(pod, corev1.EventTypeWarning, EventFailedToRetrieveImagePullSecret,
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(failed, ", "))
	}
	return secrets, nil
}
