package cgroups

import "testing"

// mustDirs is m.dirs(n), failing the test on an invalid name.
func mustDirs(t testing.TB, m *Manager, n Name) []string {
	t.Helper()
	d, err := m.dirs(n)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
