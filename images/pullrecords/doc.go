// Package pullrecords is kubelet v1.37.2's image pull manager
// (pkg/kubelet/images/pullmanager) for KEP-2535, "Ensure secret-pulled
// images" (feature KubeletEnsureSecretPulledImages, beta and on by default
// since v1.35): it remembers which credentials pulled which image, so that
// a pod may not use an image on the node that it could not have pulled
// itself. The images package consults it when given
// images.WithPullRecords.
//
// # Records
//
// Before each pull the manager writes an intent (<Dir>/pulling, one file
// per image as the pod wrote it), reference counted across concurrent
// pulls; after a successful pull, a record (<Dir>/pulled, one file per
// image reference the runtime returned) mapping the image name without tag
// or digest to the credentials that worked: the pull secret's namespace,
// name and UID with the hex SHA-256 of the credential (kubelet's
// hashAuthConfig, credentials.AuthConfig.Hash, compared with kubelet's in
// test/diff; the credential itself is never stored), the service
// account a credential provider plugin was given, or NodePodsAccessible
// for the node's own credentials or an anonymous pull. Files are named
// "sha256-" + the hex SHA-256 of the image or reference, written through a
// ".tmp" file and a rename, and hold kubelet's JSON
// (kubelet.config.k8s.io/v1beta1 ImagePullIntent and ImagePulledRecord;
// v1alpha1 is read and rewritten), so Config.Dir may be a kubelet's
// <root-dir>/image_manager. An empty Dir keeps the same records in memory.
//
// New turns intents left by an earlier run whose image is on the node into
// records without credentials (a pull that may have finished but whose
// credentials are unknown: the next pod verifies).
//
// # Decision (MustAttemptImagePull)
//
// For an image already present: an image counts as pulled by the manager
// when it has a record, an intent in flight or an intent on disk; the
// policy then says whether verification is needed (NeverVerify: never;
// NeverVerifyPreloadedImages, the default: only for images the manager
// pulled; NeverVerifyAllowlistedImages: except for the allowlist's images
// or "/*" prefixes; AlwaysVerify: always). Verification passes when the
// record for the pod's image name is NodePodsAccessible, or holds one of
// the pod's pull secrets by credential hash or by coordinates (the other
// half is then added to the record, while it holds fewer than 100
// secrets), or the pod's service account. Otherwise the pod must pull the
// image with its own credentials. Unreadable records, and an image name
// that does not parse, mean verification.
//
// # Beyond kubelet
//
// An empty Policy is NeverVerifyPreloadedImages (kubelet's configuration
// defaulting; its pull manager rejects ""). The record types are declared
// here with kubelet's field names, rather than imported from
// k8s.io/kubelet/config/v1beta1, which would bring in k8s.io/component-base.
// Kubelet keeps an in-memory cache in front of the files (v1.37.2); this
// package reads the small files each time. Records are serialised by one
// lock rather than kubelet's striped locks. Kubelet's image garbage
// collector calls PruneUnknownRecords; podstart has none, so a caller that
// removes images calls it.
//
// Record files are read more warily than kubelet's os.ReadFile (package
// internal/statefile): only regular files, opened without following a
// symlink and without blocking (a FIFO named like a record is not waited
// on), of at most 64 KiB for an intent and 1 MiB for a pulled record (a
// larger one is refused from its size, unread). A refused file is a
// corrupt record (ErrDecode): listed with an error and skipped, and for a
// lookup an error, so the pod verifies, and the next successful pull
// writes a new record in its place. New checks ctx between files.
package pullrecords
