package criconfig

// The conversions below are shared with package cgroups, which gives the
// pod and QoS cgroups the values criconfig gives the containers.

// MilliCPUToShares is kubelet's cm.MilliCPUToShares: CPU shares for a
// request in millicores (2 for none, at most 262144).
func MilliCPUToShares(milli int64) int64 { return milliCPUToShares(milli) }

// MilliCPUToQuota is kubelet's cm.MilliCPUToQuota: the CFS quota in µs
// for a limit in millicores over period µs (0 for no limit, at least
// 1000).
func MilliCPUToQuota(milli, period int64) int64 { return milliCPUToQuota(milli, period) }

// HugePageUnit is kubelet's HugePageUnitSizeFromByteSize: a page size in
// bytes as the cgroup files name it (2097152 → "2MB").
func HugePageUnit(size int64) string { return hugePageUnit(size) }
