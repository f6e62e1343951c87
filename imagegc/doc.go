// Package imagegc is kubelet v1.37.2's image garbage collector
// (pkg/kubelet/images/image_gc_manager.go and the loop of
// Kubelet.StartGarbageCollection) as a library: it removes unused images
// through CRI RemoveImage when the image filesystem fills, and, when asked,
// images unused for too long.
//
// # Policy
//
// Defaults are kubelet's configuration: imageGCHighThresholdPercent 85,
// imageGCLowThresholdPercent 80, imageMinimumGCAge 2m, imageMaximumGCAge 0
// (off). New refuses what kubelet's NewImageGCManager refuses (a threshold
// outside 0–100, low above high), with its messages (ErrInvalidPolicy).
//
// # Detection
//
// Each pass lists the runtime's images and all of its containers, in any
// state (kubelet's GetPods(all)). An image is in use when a container's
// ImageId (its ImageRef on runtimes older than CRI v1.30) names it, or a
// container's status shows it mounted as an image volume (ImageVolume, GA
// in v1.36). The Manager remembers, by image ID, when it first saw each
// image and when it last saw it in use; images gone from the runtime are
// forgotten. Images the runtime reports as pinned are never removed.
//
// # A pass (GarbageCollect)
//
//  1. If MaxAge is set and the Manager is older than MaxAge, every image
//     not in use and not pinned whose last use (never: the zero time) is
//     more than MaxAge ago is removed (reason "age"). MinAge does not
//     apply here, as in kubelet. A removal failure ends the pass with
//     ErrRemoveFailed.
//  2. The runtime's ImageFsInfo names the image filesystem's mount point
//     (the first filesystem; none is ErrNoImageFs); a Filesystem (Statfs by
//     default: statfs(2), blocks and available blocks times the fragment
//     size, as cAdvisor measures the filesystem kubelet finds for that
//     mount point) gives capacity and available bytes. Available is capped
//     at capacity. A capacity of 0, no mount point, or a mount point not on
//     this node is ErrInvalidCapacity with a Warning InvalidDiskCapacity
//     event.
//  3. Usage is 100 − available×100/capacity (integer division). At or
//     above the high threshold, capacity×(100−low)/100 − available bytes
//     are to be freed: the images not in use and not pinned, least
//     recently used first (ties: first detected first), skipping those
//     first seen less than MinAge ago, are removed (reason "space") until
//     that much is freed, summing the sizes the runtime reported. Removal
//     failures are collected and the pass ends with ErrRemoveFailed
//     (kubelet's text, each runtime error also wrapped). If less was freed
//     than wanted, the pass ends with ErrInsufficientSpace, whose text is
//     kubelet's "Insufficient free disk space on the node's image
//     filesystem (N% of S used)…" message, also sent as a Warning
//     FreeDiskSpaceFailed event.
//
// DeleteUnusedImages (what kubelet's eviction manager calls to reclaim the
// image filesystem) removes every image not in use, not pinned and not
// younger than MinAge, whatever the usage.
//
// Run does a pass at once and then every Period (5 minutes, kubelet's
// ImageGCPeriod) after the previous one ends, on the Manager's clock,
// until its context ends. A failed pass is logged; a failure that follows
// a failure is also a Warning ImageGCFailed event whose message is the
// error's text. With a high threshold of 100 and no MaxAge
// (Policy.Disabled) Run only detects, as kubelet then runs only its
// detection loop, so that DeleteUnusedImages still knows images' ages.
//
// Events go to the recorder given with WithRecorder, about the object its
// function returns (NodeRef builds kubelet's node reference); errors are
// matchable with errors.Is. Passes run one at a time.
//
// # Pull records (KEP-2535)
//
// With WithPullRecords (for example a *pullrecords.Manager), after every
// pass that listed images, the pulled records last updated before the pass
// began are deleted unless their image reference is the ID or a repo
// digest of an image the pass listed and did not remove.
//
// # Differences from kubelet
//
//   - An image size the runtime reports as 2^63 bytes or more counts as
//     math.MaxInt64 bytes, and the bytes freed in a pass saturate there;
//     kubelet converts the CRI's uint64 to int64, so such a size wraps
//     negative and its pass removes every unused image.
//   - Pull records: kubelet calls PruneUnknownRecords only after a pass that
//     found usage over the high threshold (and after DeleteUnusedImages),
//     with the images its removal loop looked at and kept. That list leaves
//     out images in use, pinned images and the images after the loop
//     stopped, so kubelet v1.37.2 deletes their records too, and a later pod
//     may use such an image as a preloaded one without verification. This
//     package keeps the records of every image still on the node and prunes
//     after every pass, so records of images removed for their age go too.
//   - Sandbox image: kubelet relies on the runtime marking it pinned
//     (containerd 1.7+, CRI-O). WithSandboxImages names images never
//     removed whatever the runtime says, for containerd 1.6, which does not.
//   - A container that is gone between ListContainers and its
//     ContainerStatus uses no image, and a status response without a
//     status has no image volumes; kubelet fails the whole pass for both.
//   - Ordering ties (same last use and first detection, such as images
//     first seen in the same pass and never used) are broken by image ID;
//     kubelet leaves them to its map's iteration order.
//   - The Manager's age (for MaxAge) counts from New; kubelet's from
//     StartGarbageCollection.
//   - No metrics, no tracing, no cached image list for node status
//     (nodestatus lists images itself); RuntimeClassInImageCriAPI (alpha,
//     off) is not implemented: records are by image ID alone, and
//     RemoveImage is sent the image ID without a runtime handler, as
//     kubelet does with the gate off.
//   - A Filesystem error other than "does not exist" ends the pass with
//     that error; kubelet's cAdvisor logs such errors and reports the
//     filesystem without capacity.
//   - Usage and the bytes to free are computed without overflow; kubelet's
//     capacity×(100−low) overflows int64 on filesystems over about 92 PB.
//   - Kubelet's older "Failed to garbage collect required amount of
//     images" message is gone from v1.37.2; this package sends v1.37.2's
//     FreeDiskSpaceFailed message.
package imagegc
