// Package core has kubelet v1.37.2's internal pod type (the types of
// k8s.io/kubernetes/pkg/apis/core reachable from core.Pod) with exactly
// their names, field order and field types, and the conversion to it from
// the v1 pod. Kubelet's static pod UID is a go-spew dump of that internal
// pod; a dump prints Go type names ("core.Pod", "core.Container") and every
// field in declaration order, so hashing the v1 pod instead gives another
// value. The types are generated from kubelet's own by reflection
// (test/diff/internal/gencore); test/diff's TestGeneratedCoreTypes fails
// when they no longer match.
package core

//go:generate go run -C ../../../test/diff ./internal/gencore/gen -o ../../staticpods/internal/core/zz_generated.types.go
