// Package fake is an in-memory CRI runtime for tests and demos, built in
// the manner of controller-runtime's fake client: seeded state, scripted
// failures and latency per method, a record of every call, and an
// injectable clock. It implements runtime.Runtime and is safe for
// concurrent use; NewServer serves it (or any runtime.Runtime) over gRPC on
// a unix socket so the same scenarios run in-process and over the wire.
//
// It behaves like containerd where pod start can tell: image names are
// normalised ("busybox" is "docker.io/library/busybox:latest"), a container
// can only be created in a ready sandbox from a present image, an image on
// a registry with credentials set by WithRegistryAuth fails without them
// with containerd's "401 Unauthorized" text, and every error is a gRPC
// status classified by runtime.Classify. Containers move from created to
// running to exited; WithStartFunc and ExitContainer decide when and how
// they exit. A container's log path is its sandbox's log directory joined
// with the config's.
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
// Beyond failing and delaying calls (Intercept, FailNext, Fail,
// SetLatency, Hang):
//   - SeedSandbox and SeedContainer put instances on the runtime without a
//     call, as a node found after an agent restart;
//   - InterceptAnswer lets an AnswerFunc see each answer after the call
//     took effect and replace its response or error; LoseAnswer makes the
//     next calls of a method take effect while their caller hears
//     Unavailable (a CreateContainer whose answer was lost). Both act in
//     the fake, so they hold in process and over the wire. Answering does
//     the same for any runtime.Runtime, such as a client of containerd;
//   - ServeControl serves a small HTTP control endpoint on a unix socket,
//     so that another process can make a container exit or a sandbox die
//     (ControlExitContainer, ControlKillSandbox, or curl) while the runtime
//     is served on a CRI socket.
package fake
