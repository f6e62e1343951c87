package images

import "k8s.io/apimachinery/pkg/types"

func typesUID(s string) types.UID { return types.UID(s) }

// waiters counts the callers waiting on the flights of an image.
func (m *Manager) waiters(image string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for key, f := range m.flights {
		if len(key) > len(image) && key[:len(image)+1] == image+"\x00" {
			n += f.waiters
		}
	}
	return n
}

// prevErrs counts the last errors kept.
func (m *Manager) prevErrs() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.prevErr)
}
