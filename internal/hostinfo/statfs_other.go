//go:build !linux

package hostinfo

// FSCapacity reports no filesystem size outside Linux.
func FSCapacity(string) int64 { return 0 }
