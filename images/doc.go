// Package images is kubelet's image manager (pkg/kubelet/images,
// v1.33–v1.37.2): Manager.EnsureImageExists decides whether a container's
// image must be pulled, pulls it through a runtime.ImageService with the
// right credentials, and reports what happened as kubelet does.
//
//   - Default tag: ":latest" is appended textually to a reference with
//     neither tag nor digest; an unparsable one is ErrInvalidImageName
//     (event InspectFailed).
//   - Pull policy: Always pulls without asking the runtime; IfNotPresent
//     and Never ask ImageStatus (a failure is ErrImageInspect, event
//     InspectFailed); present means no pull (event Pulled "already present
//     on machine"); Never and absent is ErrImageNeverPull. An empty or
//     unknown policy pulls.
//   - Credentials: the pod's pull secrets, then the node keyring
//     (credentials.MakeKeyring), looked up by the normalised repository;
//     a node keyring that answers per pod (credentials.PodKeyring: exec
//     plugins in service-account token mode, KEP-4412) is narrowed to the
//     pulling pod and its service account first;
//     every matching credential is tried in order until one works (at
//     most DefaultMaxPullAttempts per pull, WithMaxPullAttempts; kubelet
//     tries them all, which a large pull secret turns into thousands of
//     attempts holding the pull slot); the
//     errors are aggregated with kubelet's text and never quote a secret.
//     A malformed pull secret is an *Error (ErrImagePull, matching
//     credentials.ErrMalformedSecret) with a Failed event, and no back-off
//     (kubelet returns the bare error).
//     Pod annotations and the runtime handler go into the CRI image spec.
//   - Back-off per "<podUID>_<image as written>": 10 s doubling to 300 s.
//     Entries not updated for twice the maximum are collected after a
//     success (as kubelet) and also, at most once per maximum, after a
//     failure (kubelet never collects then).
//     While in back-off the answer is ErrImagePullBackOff, with the last
//     error in the message (and, beyond kubelet, in the error: errors.Is
//     still matches its cause, runtime.ErrUnauthorized for a 401), and
//     the runtime is not called.
//     A caller whose context is cancelled (not timed out) while it waits
//     for a pull starts no back-off, and a pull left with no waiter is
//     unregistered at once, so a live caller never inherits another's
//     cancellation.
//   - Errors and events: Pulling then Pulled or Failed; BackOff; texts and
//     sentinels as kubelet's (ErrImagePull, ErrRegistryUnavailable,
//     ErrSignatureValidationFailed …). Every error is an *Error whose text
//     is the sentinel (the waiting reason) and which also matches the
//     runtime's class, such as runtime.ErrUnauthorized for a 401.
//   - Pullers: serial, first come first served (the default, as kubelet's
//     serializeImagePulls), or parallel with an optional limit.
//
// # Ensure secret-pulled images (KEP-2535)
//
// With WithPullRecords (a pullrecords.Manager), EnsureImageExists does what
// kubelet v1.37.2 does with KubeletEnsureSecretPulledImages on (its default):
//
//   - Every pull (any policy) first records an intent for the image as
//     written; failing to write it is ErrImagePull with kubelet's message
//     "Failed to record image pull intent for container image …" (matching
//     pullrecords.ErrRecordIntent) and no pull. A pull refused by back-off
//     or failed ends the intent; a successful one records the credential
//     that worked: the pull secret (coordinates and a SHA-256 of the
//     credential, never the credential), the service account of a plugin
//     in token mode, or, for the node's keyring or an anonymous pull,
//     access for every pod on the node.
//   - An image present for an IfNotPresent or Never container is used
//     without a pull only when the records allow it
//     (pullrecords.Manager.MustAttemptImagePull, with the pod's pull
//     secrets and plugin service account looked up only if needed): event
//     Pulled "Container image %q already present on machine and can be
//     accessed by the pod". Otherwise IfNotPresent pulls again with the
//     pod's credentials, which is the verification (success is recorded
//     and the pod runs; failure is ErrImagePull as any pull), and Never is
//     ErrImageNeverPull with the same message as an absent image ("… is
//     not present with pull policy of Never"), so the image's presence is
//     not revealed.
//
// Without WithPullRecords a present image is used by any pod (message
// "Container image %q already present on machine"), as kubelet with the
// feature off. It is opt-in, where kubelet has it on, because the records
// need a directory that outlives the process (kubelet's
// <root-dir>/image_manager) and podstart has no root directory of its own;
// records kept only in memory (an empty pullrecords.Config.Dir) forget, at
// restart, which images the manager pulled, so they would then count as
// preloaded. Turning it on by default would also change what existing
// callers get for images already on the node.
//
// # Beyond kubelet
//
// Waiting for a pull slot honours the context, and no goroutine outlives
// Close or its callers (kubelet's serial worker never stops).
// Concurrent calls whose requests the runtime could not tell apart (the
// same image spec, runtime handler, credentials and sandbox config) share
// one runtime pull (kubernetes#125164); a caller with other credentials,
// or another pod's sandbox config (a runtime may pick a mirror or a
// signature policy per namespace), never rides on another's pull, and
// followers take no slot. Each caller keeps its own back-off.
// A shared pull is cancelled when its last waiter gives up. Back-off can be
// inspected (BackOff) and reset (ResetBackOff) for when a secret is fixed.
// A runtime that reports progress (runtime.ProgressPuller) feeds
// WithProgress, and WithStallTimeout cancels a pull that stops progressing
// (ErrPullStalled). Registry-unavailable and signature errors are
// recognised from the CRI status message, so they are also recognised over
// gRPC, where kubelet's prefix match on the whole error text does not see
// them. A failed inspection names the image asked for (kubelet's message
// quotes the image reference it did not get: always ""). After Close a
// call returns ErrClosed at once, with no runtime call, event or back-off.
// Pull secrets are parsed once per content (credentials.SecretsCache):
// kubelet parses them on every pull (3.9 ms for a 1,024-key secret here;
// 34 µs with the cache). Not implemented: kubelet's pull QPS throttle.
// Concurrent callers sharing one pull each record their own pull secret
// (the credentials are equal by content, not by source). An error in
// pull records is an *Error with ErrImagePull (kubelet returns the bare
// error).
//
// # Logs
//
// EnsureImageExists logs to the logr.Logger in its context
// (logr.FromContextOrDiscard), so logs are discarded by default. It logs
// how many credentials a pull tries, never the credentials themselves.
package images
