// Package fake is an in-memory CRI runtime for tests and demos, built in
// the manner of controller-runtime's fake client: seeded state, scripted
// failures, latency and answers per method, a record of every call, and an
// injectable clock. It implements runtime.Runtime (with pull progress and
// container events) and is safe for concurrent use; NewServer serves it (or
// any runtime.Runtime) over gRPC on a unix socket so the same scenarios run
// in-process and over the wire.
//
// It behaves like containerd where pod start can tell: image names are
// normalised ("busybox" is "docker.io/library/busybox:latest"), a container
// can only be created in a ready sandbox from a present image, an image on
// a registry with credentials set by WithRegistryAuth fails without them
// with containerd's "401 Unauthorized" text, and every error is a gRPC
// status classified by runtime.Classify. Containers move from created to
// running to exited; their command, WithStartFunc and ExitContainer decide
// when and how they exit (see below). A container's log path is its
// sandbox's log directory joined with the config's.
//
// # What a started container does
//
// A runtime built without WithStartFunc runs CommandStart: it reads the
// command line the ContainerConfig carries, Command followed by Args (as a
// runtime appends a pod's args to its command or an image's entrypoint),
// and does what a few common commands do. The program is matched by its
// base name (true, /bin/true), and the shells are sh, bash, ash and dash:
//
//	command line                        the container
//	(no Command: the image's own)       keeps running
//	true                                exits 0 at once
//	false                               exits 1 at once
//	sleep N...                          exits 0 after the sum of the N on the runtime's clock
//	sleep infinity, sleep inf           keeps running
//	sleep (no N, or one not a number,   exits 1 at once, as sleep's usage error
//	  negative, NaN)
//	sh -c "exit N"                      exits N mod 256 at once ("exit" alone: 0)
//	sh -c "true" / "false" / "sleep N"  as the command itself; sh -c "" exits 0
//	anything else                       keeps running until stopped, as before
//
// An N of sleep is a decimal number of seconds, maybe fractional or with
// an exponent ("0.5", "1e2"), with an optional suffix s, m, h or d, as GNU
// and busybox sleep read it; several are summed, as they sum them. A sleep
// longer than a time.Duration (about 292 years, "1e300") keeps running. A
// script is read only when it is one simple command of plain words: one
// with quotes, expansions, redirections, lists, pipes, comments or several
// lines ("exit $CODE", "sleep 5; exit 1", "trap 'exit 0' TERM; sleep
// 3600 & wait") keeps running, as does "exit N" with an N that is not a
// decimal number of at most 64 bits, sh without -c, and sh -ec or other
// combined flags.
//
// An exit's Reason is containerd's: "Completed" for 0, "Error" otherwise;
// its Message is empty. A sleep ends when the clock (WithClock) reaches
// its end: with a clock that has AfterFunc (the real clock,
// k8s.io/utils/clock/testing's FakeClock) a timer ends it and sends its
// CONTAINER_STOPPED event; in any case the next call that reads containers
// finds it exited, with its finish time at its end, so a test steps its
// fake clock and sees the exit on its next call, without sleeping. A
// container stopped, removed or killed with its sandbox before its end
// leaves no timer behind.
//
// WithStartFunc replaces CommandStart and decides alone (nil keeps a
// container running whatever its command); an Exit with After exits that
// long after the start, as a sleep does. A StartFunc may script some
// containers and return CommandStart(config) for the others. Seeded
// containers stay in the state seeded, whatever their command.
//
// # Images
//
// Images are named as containerd 2.3 names them (in containerd's
// internal/cri/server: images/image_pull.go, images/image_status.go,
// container_status.go, container_list.go):
//   - PullImage answers the image ID, "sha256:" and 64 hex digits (on
//     containerd the digest of the image's config); ImageStatus and
//     ListImages report it as Id and find the image by it, by any
//     normalised tag and by a repo digest.
//   - RepoTags hold the normalised name pulled
//     ("docker.io/library/busybox:1.35"); RepoDigests hold the repository
//     and another digest, the manifest's
//     ("docker.io/library/busybox@sha256:…"). An image pulled by digest has
//     no tag and that reference as its repo digest. Spec is not set.
//   - ContainerStatus gives the image's first repo tag as Image (Image set
//     alone: the config's UserSpecifiedImage is not echoed), its first repo
//     digest as ImageRef and the ID as ImageId; once the image is removed,
//     the config's image spec and the ID. ListContainers gives the config's
//     image spec as sent and the ID as both ImageRef and ImageId.
//
// Two tags of the same content are one image with two tags on containerd
// and two images here.
//
// # Scripting calls
//
// A call is recorded (Calls, CallCount), then its interceptors run
// (Intercept, and FailNext, Fail, SetLatency and Hang built on it), which
// may fail or delay it before it takes effect; then the fake does the work;
// then its answer interceptors run (InterceptAnswer, and LoseAnswer built
// on it), which see the response in its CRI message shape and may replace
// the response or the error after the call took effect. LoseAnswer models
// an answer lost on the way, such as a CreateContainer whose container
// exists but whose ID the caller never learnt: the caller hears
// codes.Unavailable. Both kinds run outside the fake's lock and act in the
// fake, so they hold in process and over the wire alike. Answering gives
// answer interception to any runtime.Runtime, such as a client of a real
// runtime.
//
// # Hosting a kubelet
//
// Served with NewServer, the fake can host the real kubelet (v1.37.2,
// standalone, with static pods; see bench/ in the repository). Besides pod
// start and the relist, kubelet calls: Version and ImageFsInfo to check
// the endpoint; RuntimeConfig for the cgroup driver (WithCgroupDriver;
// without it Unimplemented, and kubelet falls back on its own setting);
// Status every 5 s (WithRuntimeHandlers and WithRuntimeFeatures say what
// containerd 2.x says, ContainerdHandlers and ContainerdFeatures);
// ImageFsInfo, ListImages and ListContainerStats for its stats, image
// manager and eviction (the image filesystem's mount point should be a
// directory that exists, WithImageFsMountpoint, or kubelet logs each time
// that it cannot stat it); and, every 10 s for every running container,
// ContainerStatus and a stat of its log file, with ReopenContainerLog for
// a file that is missing: WithLogFiles creates the files as containerd
// does, at StartContainer and ReopenContainerLog. UpdateRuntimeConfig
// (the pod CIDR, kept for PodCIDR) and PodSandboxStats are answered too.
// GetContainerEvents streams the fake's events (kubelet's evented PLEG is
// off by default and does not ask); ListMetricDescriptors,
// ListPodSandboxMetrics, checkpoints and the streaming calls answer
// Unimplemented, which kubelet tolerates where it asks.
//
// # State from outside the calls
//
// SeedSandbox and SeedContainer put instances on the runtime as a node
// found after an agent restart: built from the configs exactly as
// RunPodSandbox and CreateContainer build them, in the state and with the
// times given, with no call recorded, no interceptor run and no event
// sent. ExitContainer and KillSandbox act as the world does on a running
// node: a container's process ends, a sandbox dies. ServeControl offers
// those two on a small HTTP endpoint on a unix socket, so that another
// process (ControlExitContainer, ControlKillSandbox, or curl) can crash a
// container of a fake served with NewServer.
package fake
