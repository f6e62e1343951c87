package podsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/criconfig"
	"github.com/podstart/podstart/internal/statefile"
)

// Kubelet's user-namespace defaults (pkg/kubelet/userns and its config):
// 65536 IDs per pod, and with no "kubelet" entry in /etc/subuid the range
// from 65536 to the top of the 32-bit ID space.
const (
	DefaultUserNamespaceIDsPerPod = 65536
	defaultUserNamespaceFirstID   = 65536
	defaultMaxPods                = 110
)

// ErrUserNamespace: a pod's user namespace could not be allocated or its
// record on disk is invalid.
var ErrUserNamespace = errors.New("user namespace")

// UserNamespaces is kubelet's user-namespace manager: it gives each pod
// with hostUsers: false a range of host IDs of its own (container IDs 0 to
// idsPerPod-1, UIDs and GIDs alike), records it in the pod directory as
// kubelet does (<root>/pods/<uid>/userns, kubelet's JSON), finds the
// ranges of existing pods there when it starts, and frees a pod's range
// when the pod is removed. It is a criconfig.UserNamespaceMapper and safe
// for concurrent use. Unlike kubelet, which takes a random free range (its
// allocation bitmap's random scan), it takes the lowest free one: the
// same pods get the same host IDs run after run, which makes a node's
// files and processes easier to read; no range is more or less isolated
// than another.
type UserNamespaces struct {
	podsDir   string
	first     uint32 // first host ID of the node's range
	slots     int    // ranges of idsPerPod in the node's range
	idsPerPod uint32

	mu     sync.Mutex
	loaded bool
	used   map[int]types.UID
	usedBy map[types.UID]int
}

// NewUserNamespaces returns an allocator of the host IDs [firstID,
// firstID+length) in ranges of idsPerPod, with kubelet's checks: idsPerPod
// a multiple of 65536, firstID a non-zero multiple of it (ID 0 of the host
// is never mapped), length a multiple of it with room for maxPods pods.
// Zero values take kubelet's defaults (65536 per pod, the range above the
// first 65536 IDs, 110 pods).
func NewUserNamespaces(rootDir string, firstID, length, idsPerPod uint32, maxPods int) (*UserNamespaces, error) {
	if idsPerPod == 0 {
		idsPerPod = DefaultUserNamespaceIDsPerPod
	}
	if firstID == 0 && length == 0 {
		firstID = idsPerPod
		length = uint32((1 << 32) - uint64(firstID))
	}
	if maxPods == 0 {
		maxPods = defaultMaxPods
	}
	switch {
	case idsPerPod%DefaultUserNamespaceIDsPerPod != 0:
		return nil, fmt.Errorf("%w: kubelet user namespace length %v is not a multiple of %d", ErrUserNamespace, idsPerPod, DefaultUserNamespaceIDsPerPod)
	case firstID%idsPerPod != 0:
		return nil, fmt.Errorf("%w: kubelet user assigned ID %v is not a multiple of %v", ErrUserNamespace, firstID, idsPerPod)
	case firstID < idsPerPod:
		return nil, fmt.Errorf("%w: kubelet user assigned ID %v must be greater or equal to %v", ErrUserNamespace, firstID, idsPerPod)
	case length%idsPerPod != 0:
		return nil, fmt.Errorf("%w: kubelet user assigned IDs length %v is not a multiple of %v", ErrUserNamespace, length, idsPerPod)
	case int(length/idsPerPod) < maxPods:
		return nil, fmt.Errorf("%w: kubelet user assigned IDs are not enough to support %v pods", ErrUserNamespace, maxPods)
	}
	return &UserNamespaces{podsDir: filepath.Join(rootDir, "pods"), first: firstID, slots: int(length / idsPerPod),
		idsPerPod: idsPerPod, used: map[int]types.UID{}, usedBy: map[types.UID]int{}}, nil
}

var _ criconfig.UserNamespaceMapper = (*UserNamespaces)(nil)

// userNamespaceFile is kubelet's record of a pod's mapping.
type userNamespaceFile struct {
	UIDMappings []idMapping `json:"uidMappings"`
	GIDMappings []idMapping `json:"gidMappings"`
}

type idMapping struct {
	HostID      uint32 `json:"hostId"`
	ContainerID uint32 `json:"containerId"`
	Length      uint32 `json:"length"`
}

// usernsFile is the record's name; maxUsernsSize caps what is read of it.
// Kubelet's record holds one UID and one GID mapping (about 110 bytes of
// JSON, and its parser allows no more), so 64 KiB is room to spare; a
// larger file is refused unread, as an invalid record.
const (
	usernsFile    = "userns"
	maxUsernsSize = 64 << 10
)

// UserNamespace returns the pod's mapping, allocating and recording one
// the first time.
func (u *UserNamespaces) UserNamespace(pod *corev1.Pod) (*runtimeapi.UserNamespace, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := u.load(); err != nil {
		return nil, err
	}
	slot, ok := u.usedBy[pod.UID]
	if !ok {
		slot = -1
		for i := 0; i < u.slots; i++ {
			if _, taken := u.used[i]; !taken {
				slot = i
				break
			}
		}
		if slot < 0 {
			return nil, fmt.Errorf("%w: could not find an empty slot to allocate a user namespace", ErrUserNamespace)
		}
		host := u.first + uint32(slot)*u.idsPerPod
		m := []idMapping{{HostID: host, ContainerID: 0, Length: u.idsPerPod}}
		if err := u.write(pod.UID, userNamespaceFile{UIDMappings: m, GIDMappings: m}); err != nil {
			return nil, err
		}
		u.used[slot], u.usedBy[pod.UID] = pod.UID, slot
	}
	host := u.first + uint32(slot)*u.idsPerPod
	ids := []*runtimeapi.IDMapping{{HostId: host, ContainerId: 0, Length: u.idsPerPod}}
	gids := []*runtimeapi.IDMapping{{HostId: host, ContainerId: 0, Length: u.idsPerPod}}
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: ids, Gids: gids}, nil
}

// Release frees the pod's range (RemovePod calls it once the pod
// directory is gone).
func (u *UserNamespaces) Release(uid types.UID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if slot, ok := u.usedBy[uid]; ok {
		delete(u.used, slot)
		delete(u.usedBy, uid)
	}
}

// load reads the ranges of the pods on disk, once. A record that does not
// fit this allocator fails every allocation, as kubelet refuses to start:
// two pods must never share IDs.
func (u *UserNamespaces) load() error {
	if u.loaded {
		return nil
	}
	entries, err := os.ReadDir(u.podsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: read pods from disk: %v", ErrUserNamespace, err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		// A regular file of at most maxUsernsSize, opened without following
		// a symlink or waiting on a FIFO (statefile): anything else is an
		// invalid record. One bounded read per pod directory, so no ctx.
		b, err := statefile.Read(context.Background(), filepath.Join(u.podsDir, e.Name(), usernsFile), maxUsernsSize)
		if errors.Is(err, os.ErrNotExist) || err == nil && len(b) == 0 {
			continue
		}
		if err != nil {
			return fmt.Errorf("%w: record pod mappings for existing pod %q: %w", ErrUserNamespace, e.Name(), err)
		}
		if err := u.record(types.UID(e.Name()), b); err != nil {
			return fmt.Errorf("%w: record pod mappings for existing pod %q: %v", ErrUserNamespace, e.Name(), err)
		}
	}
	u.loaded = true
	return nil
}

// record is kubelet's parseUserNsFileAndRecord with its checks (its
// messages, without the trailing periods two of them have).
func (u *UserNamespaces) record(uid types.UID, b []byte) error {
	var f userNamespaceFile
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("invalid user namespace mappings file: %w", err)
	}
	if len(f.UIDMappings) != 1 || len(f.GIDMappings) != 1 {
		return errors.New("invalid user namespace configuration: no more than one mapping allowed")
	}
	if f.UIDMappings[0] != f.GIDMappings[0] {
		return errors.New("invalid user namespace configuration: GID and UID mappings should be identical")
	}
	m := f.UIDMappings[0]
	if m.ContainerID != 0 {
		return errors.New("invalid user namespace configuration: UID 0 must be mapped")
	}
	if m.Length != u.idsPerPod {
		return fmt.Errorf("wrong user namespace length %v", m.Length)
	}
	if m.HostID%u.idsPerPod != 0 {
		return fmt.Errorf("wrong user namespace offset specified %v", m.HostID)
	}
	if m.HostID < u.first || int((m.HostID-u.first)/u.idsPerPod) >= u.slots {
		return fmt.Errorf("id %v is out of range", m.HostID)
	}
	slot := int((m.HostID - u.first) / u.idsPerPod)
	if other, taken := u.used[slot]; taken && other != uid {
		return fmt.Errorf("range picked for pod %q already taken", uid)
	}
	u.used[slot], u.usedBy[uid] = uid, slot
	return nil
}

// write records the mapping atomically and durably (kubelet fsyncs the
// directory too).
func (u *UserNamespaces) write(uid types.UID, f userNamespaceFile) error {
	b, err := json.Marshal(f)
	if err == nil {
		err = writeRecord(filepath.Join(u.podsDir, string(uid)), usernsFile, b, true)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUserNamespace, err)
	}
	return nil
}
