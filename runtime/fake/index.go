package fake

import "sort"

// The fake's indexes: sandboxes and containers by their pod's UID label,
// containers by sandbox. A node agent lists one pod's instances at each
// sync (a label selector on the pod's UID) and removes a sandbox's
// containers with it; without them each such call scanned, and the lists
// sorted, every instance on the node, so that starting or removing N pods
// cost O(N²) (issue 41: 10,000 pods on one agent). All guarded by mu.

// podUIDLabel is kubelet's label holding a pod's UID on its sandboxes and
// containers (podsync.LabelPodUID).
const podUIDLabel = "io.kubernetes.pod.uid"

type index struct {
	sandboxesByPod      map[string]map[string]*sandbox
	containersByPod     map[string]map[string]*container
	containersBySandbox map[string]map[string]*container
}

func add[T any](m *map[string]map[string]T, key, id string, v T) {
	if *m == nil {
		*m = map[string]map[string]T{}
	}
	set := (*m)[key]
	if set == nil {
		set = map[string]T{}
		(*m)[key] = set
	}
	set[id] = v
}

func drop[T any](m map[string]map[string]T, key, id string) {
	if set := m[key]; set != nil {
		delete(set, id)
		if len(set) == 0 {
			delete(m, key)
		}
	}
}

// addSandbox stores s and indexes it. r.mu is held.
func (r *Runtime) addSandbox(s *sandbox) {
	r.sandboxes[s.id] = s
	add(&r.idx.sandboxesByPod, s.config.GetLabels()[podUIDLabel], s.id, s)
}

// removeSandbox forgets s. r.mu is held.
func (r *Runtime) removeSandbox(s *sandbox) {
	delete(r.sandboxes, s.id)
	drop(r.idx.sandboxesByPod, s.config.GetLabels()[podUIDLabel], s.id)
}

// addContainer stores c and indexes it. r.mu is held.
func (r *Runtime) addContainer(c *container) {
	r.containers[c.id] = c
	add(&r.idx.containersByPod, c.config.GetLabels()[podUIDLabel], c.id, c)
	add(&r.idx.containersBySandbox, c.sandboxID, c.id, c)
}

// removeContainer forgets c. r.mu is held.
func (r *Runtime) removeContainer(c *container) {
	delete(r.containers, c.id)
	drop(r.idx.containersByPod, c.config.GetLabels()[podUIDLabel], c.id)
	drop(r.idx.containersBySandbox, c.sandboxID, c.id)
}

// sandboxCandidates are the sandboxes a filter with these fields may
// select, from the narrowest index: the caller still applies the whole
// filter. r.mu is held.
func (r *Runtime) sandboxCandidates(id string, selector map[string]string) []*sandbox {
	if id != "" {
		if s := r.sandboxes[id]; s != nil {
			return []*sandbox{s}
		}
		return nil
	}
	set := r.sandboxes
	if uid, ok := selector[podUIDLabel]; ok {
		set = r.idx.sandboxesByPod[uid]
	}
	out := make([]*sandbox, 0, len(set))
	for _, s := range set {
		out = append(out, s)
	}
	return out
}

// containerCandidates are the containers, by creation then ID, a filter
// with these fields may select, from the narrowest index: the caller
// still applies the whole filter. Due exits are settled first. r.mu is
// held.
func (r *Runtime) containerCandidates(id, sandboxID string, selector map[string]string) []*container {
	r.settle()
	var out []*container
	switch uid, byPod := selector[podUIDLabel]; {
	case id != "":
		if c := r.containers[id]; c != nil {
			out = append(out, c)
		}
		return out
	case byPod:
		out = values(r.idx.containersByPod[uid])
	case sandboxID != "":
		out = values(r.idx.containersBySandbox[sandboxID])
	default:
		out = values(r.containers)
	}
	sortContainers(out)
	return out
}

func values[T any](m map[string]T) []T {
	out := make([]T, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// sortContainers orders containers by creation, then ID.
func sortContainers(cs []*container) {
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].createdAt != cs[j].createdAt {
			return cs[i].createdAt < cs[j].createdAt
		}
		return cs[i].id < cs[j].id
	})
}
