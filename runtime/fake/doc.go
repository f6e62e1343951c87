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
// they exit.
package fake
