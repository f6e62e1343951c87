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
// they exit. Image IDs are containerd's shape: the ID (and PullImage's
// answer) is one sha256 digest, the repo digest another, and
// ContainerStatus reports the repo digest as the image ref while
// ListContainers gives the ID; a container's log path is its sandbox's
// log directory joined with the config's.
//
// Beyond failing and delaying calls (Intercept, FailNext, Fail,
// SetLatency, Hang):
//   - SeedSandbox and SeedContainer put instances on the runtime without a
//     call, as a node found after an agent restart;
//   - Answering wraps a runtime so an AnswerFunc sees each answer and may
//     change it; LoseAnswers makes a call take effect while its caller
//     hears Unavailable (a CreateContainer whose answer was lost);
//   - ServeControl lets another process make a container exit or a
//     sandbox die (ControlExitContainer, ControlKillSandbox) while the
//     runtime is served on a socket.
package fake
