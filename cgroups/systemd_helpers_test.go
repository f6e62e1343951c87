package cgroups

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// mustDirs is m.dirs(n), failing the test on an invalid name.
func mustDirs(t testing.TB, m *Manager, n Name) []string {
	t.Helper()
	d, err := m.dirs(n)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// mustPodName is m.PodName(pod), failing the test on an invalid UID.
func mustPodName(t testing.TB, m *Manager, pod *corev1.Pod) Name {
	t.Helper()
	n, err := m.PodName(pod)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// mustName is PodName(root, pod), failing the test on an invalid UID.
func mustName(t testing.TB, root Name, pod *corev1.Pod) Name {
	t.Helper()
	n, err := PodName(root, pod)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
