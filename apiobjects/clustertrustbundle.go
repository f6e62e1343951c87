package apiobjects

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ClusterTrustBundleSource gives the ClusterTrustBundles
// (certificates.k8s.io/v1, the version kubelet v1.37 reads first) that
// clusterTrustBundle projections name or select: an informer's lister,
// an API client, or Objects in memory.
//
// GetClusterTrustBundle returns the named bundle; a missing one is an
// error for which k8s.io/apimachinery's errors.IsNotFound is true, as
// client-go's and listers' are (optional projections rely on it).
//
// ListClusterTrustBundles returns the bundles whose labels selector
// matches; it may also return bundles of other signers (a lister cannot
// filter on spec.signerName), which are dropped. It is never called with
// a selector that matches nothing (a projection without labelSelector),
// so an adapter may send selector.String() to the API server as a label
// selector.
type ClusterTrustBundleSource interface {
	GetClusterTrustBundle(ctx context.Context, name string) (*certificatesv1.ClusterTrustBundle, error)
	ListClusterTrustBundles(ctx context.Context, signerName string, selector labels.Selector) ([]*certificatesv1.ClusterTrustBundle, error)
}

// Errors of clusterTrustBundle projections, matched with errors.Is; the
// messages are kubelet's.
var (
	// ErrNoClusterTrustBundles: a clusterTrustBundle projection with no
	// ClusterTrustBundleSource to read (kubelet with no
	// ClusterTrustBundle API, or in static mode).
	ErrNoClusterTrustBundles = errors.New("ClusterTrustBundle projection is not supported in static kubelet mode")
	// ErrNoClusterTrustBundleMatch: a projection by signerName whose
	// signer and labelSelector select no bundle, and that is not
	// optional.
	ErrNoClusterTrustBundleMatch = errors.New("combination of signerName and labelSelector matched zero ClusterTrustBundles")
	// ErrInvalidClusterTrustBundleProjection: a projection with neither
	// name nor signerName, a labelSelector that does not parse, or one
	// longer than kubelet's limit (100 KiB). The API server refuses the
	// first two; Volumes refuses them before setup (validation.Check).
	ErrInvalidClusterTrustBundleProjection = errors.New("invalid clusterTrustBundle projection")
)

// maxLabelSelectorLength is kubelet's limit on a projection's selector,
// as a string.
const maxLabelSelectorLength = 100 * 1024

// ClusterTrustBundlePayload is the content of a clusterTrustBundle
// projection's file, as kubelet's ClusterTrustBundle manager gives it:
//
//   - by name: the named bundle's certificates; a missing bundle is an
//     empty file when the projection is optional, otherwise
//     "while getting ClusterTrustBundle: <the NotFound error>";
//   - by signerName: the certificates of every bundle of that signer
//     whose labels labelSelector matches (no labelSelector matches no
//     bundle; an empty one matches all); no bundle is an empty file when
//     optional, otherwise ErrNoClusterTrustBundleMatch.
//
// Every PEM block of the bundles' spec.trustBundle is read (its headers
// and text around it ignored), deduplicated by its DER bytes and written
// as a CERTIFICATE block, ordered by DER bytes. The bundles are read on
// each call (kubelet caches the result for up to 5 minutes, dropped when
// its informer sees a change). A nil src fails with
// ErrNoClusterTrustBundles, and so does a source that returns it (one
// that finds no ClusterTrustBundle API), unwrapped; the source's other
// errors are wrapped as kubelet wraps its lister's.
func ClusterTrustBundlePayload(ctx context.Context, src ClusterTrustBundleSource, proj *corev1.ClusterTrustBundleProjection) ([]byte, error) {
	optional := proj.Optional != nil && *proj.Optional
	switch {
	case proj.Name == nil && proj.SignerName == nil:
		return nil, &payloadError{"ClusterTrustBundle projection requires either name or signerName to be set", ErrInvalidClusterTrustBundleProjection}
	case src == nil:
		return nil, ErrNoClusterTrustBundles
	case proj.Name != nil:
		b, err := src.GetClusterTrustBundle(ctx, *proj.Name)
		if apierrors.IsNotFound(err) && optional {
			return []byte{}, nil
		}
		if err != nil {
			return nil, sourceError("while getting ClusterTrustBundle: %w", err)
		}
		return trustAnchors([]*certificatesv1.ClusterTrustBundle{b}), nil
	}
	signer := *proj.SignerName
	var matched []*certificatesv1.ClusterTrustBundle
	// Kubelet reads a nil selector as one that matches nothing.
	if proj.LabelSelector != nil {
		selector, err := metav1.LabelSelectorAsSelector(proj.LabelSelector)
		if err != nil {
			return nil, &wrappedPayloadError{fmt.Errorf("while parsing label selector: %w", err), ErrInvalidClusterTrustBundleProjection}
		}
		if n := len(selector.String()); n > maxLabelSelectorLength {
			return nil, &payloadError{fmt.Sprintf("label selector length (%d) is larger than %d", n, maxLabelSelectorLength), ErrInvalidClusterTrustBundleProjection}
		}
		all, err := src.ListClusterTrustBundles(ctx, signer, selector)
		if err != nil {
			return nil, sourceError("while listing ClusterTrustBundles matching label selector %v: %w", proj.LabelSelector, err)
		}
		for _, b := range all {
			// A source may give other signers' bundles, or ignore the
			// selector; neither is projected.
			if b != nil && b.Spec.SignerName == signer && selector.Matches(labels.Set(b.Labels)) {
				matched = append(matched, b)
			}
		}
	}
	if len(matched) == 0 {
		if optional {
			return []byte{}, nil
		}
		return nil, ErrNoClusterTrustBundleMatch
	}
	return trustAnchors(matched), nil
}

// sourceError is the source's error in kubelet's words: a lister's,
// wrapped as kubelet's manager wraps it; ErrNoClusterTrustBundles (a
// source that finds no ClusterTrustBundle API) as it is, as kubelet's
// NoopManager answers.
func sourceError(format string, args ...any) error {
	err := args[len(args)-1].(error)
	if errors.Is(err, ErrNoClusterTrustBundles) {
		return err
	}
	return fmt.Errorf(format, args...)
}

// wrappedPayloadError is a payloadError that also keeps its cause for
// errors.Is and errors.As.
type wrappedPayloadError struct {
	err   error
	class error
}

func (e *wrappedPayloadError) Error() string   { return e.err.Error() }
func (e *wrappedPayloadError) Unwrap() []error { return []error{e.err, e.class} }

// trustAnchors is kubelet's normalizeTrustAnchors, in a stable order: the
// DER bytes of every PEM block of the bundles, once each, sorted, written
// back as CERTIFICATE blocks. Kubelet shuffles the sorted list.
func trustAnchors(bundles []*certificatesv1.ClusterTrustBundle) []byte {
	var ders [][]byte
	for _, b := range bundles {
		if b == nil { // a source's (nil, nil): no certificate
			continue
		}
		rest := []byte(b.Spec.TrustBundle)
		for {
			var block *pem.Block
			block, rest = pem.Decode(rest)
			if block == nil {
				break
			}
			ders = append(ders, block.Bytes)
		}
	}
	slices.SortFunc(ders, bytes.Compare)
	ders = slices.CompactFunc(ders, bytes.Equal)
	out := []byte{}
	for _, der := range ders {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	return out
}
