//go:build !linux

package nodestatus

// fsCapacity reports no ephemeral storage outside Linux.
func fsCapacity(string) int64 { return 0 }
