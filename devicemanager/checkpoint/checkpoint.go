// Package checkpoint reads and writes kubelet's device manager checkpoint,
// the file kubelet_internal_checkpoint in the device-plugins directory,
// byte for byte as kubelet v1.37.2 writes it: JSON of
//
//	{"Data":{"PodDeviceEntries":[...],"RegisteredDevices":{...}},"Checksum":N}
//
// where N is kubelet's checksum of Data: FNV-32a over the spew dump that
// k8s.io/utils/dump.ForHash makes of Data. The dump names Go types, so the
// types here carry kubelet's package name (checkpoint) and type names
// (checkpointData, PodDevicesEntry, DevicesPerNUMA) and field names.
//
// A kubelet and a podstart agent can read each other's files.
package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"

	"k8s.io/utils/dump"
)

// FileName is kubelet's name of the checkpoint file, in the device-plugins
// directory.
const FileName = "kubelet_internal_checkpoint"

// MaxSize caps the checkpoint a Read accepts (kubelet reads any size).
const MaxSize = 64 << 20

var (
	// ErrNotFound: there is no checkpoint file (kubelet's
	// ErrCheckpointNotFound).
	ErrNotFound = errors.New("checkpoint is not found")
	// ErrCorrupt: the file is not kubelet's JSON, or its checksum does
	// not match its data (kubelet's CorruptCheckpointError).
	ErrCorrupt = errors.New("checkpoint is corrupted")
)

// DevicesPerNUMA are device IDs by NUMA node; devices without topology are
// under -1.
type DevicesPerNUMA map[int64][]string

// PodDevicesEntry is one container's devices of one resource, with the
// device plugin's Allocate response (a serialized
// v1beta1.ContainerAllocateResponse).
type PodDevicesEntry struct {
	PodUID        string
	ContainerName string
	ResourceName  string
	DeviceIDs     DevicesPerNUMA
	AllocResp     []byte
}

// checkpointData is kubelet's checkpointData: its name is part of the
// checksum.
type checkpointData struct {
	PodDeviceEntries  []PodDevicesEntry
	RegisteredDevices map[string][]string
}

type file struct {
	Data     checkpointData
	Checksum uint64
}

// Checkpoint is the content of a checkpoint file. RegisteredDevices are
// the healthy devices of each resource when it was written.
type Checkpoint struct {
	Entries           []PodDevicesEntry
	RegisteredDevices map[string][]string
}

func checksum(d checkpointData) uint64 {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(d))
	return uint64(h.Sum32())
}

// Marshal returns the file's bytes for c, as kubelet writes them. Kubelet
// writes no entries as null and registered devices as an object (empty:
// {}); Marshal does the same.
func Marshal(c Checkpoint) ([]byte, error) {
	d := checkpointData{PodDeviceEntries: c.Entries, RegisteredDevices: c.RegisteredDevices}
	if len(d.PodDeviceEntries) == 0 {
		d.PodDeviceEntries = nil
	}
	if d.RegisteredDevices == nil {
		d.RegisteredDevices = map[string][]string{}
	}
	return json.Marshal(file{Data: d, Checksum: checksum(d)})
}

// Unmarshal parses a checkpoint file and verifies its checksum as kubelet
// does; a file that fails either gives an error matching ErrCorrupt.
func Unmarshal(b []byte) (Checkpoint, error) {
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if got := checksum(f.Data); got != f.Checksum {
		return Checkpoint{}, fmt.Errorf("%w: checksum mismatch: expected %d, actual %d", ErrCorrupt, f.Checksum, got)
	}
	return Checkpoint{Entries: f.Data.PodDeviceEntries, RegisteredDevices: f.Data.RegisteredDevices}, nil
}

// Read reads dir's checkpoint file. It refuses a file that is not a
// regular file (a symlink is not followed) or that is larger than
// MaxSize, as ErrCorrupt; a missing file gives ErrNotFound.
func Read(dir string) (Checkpoint, error) {
	p := filepath.Join(dir, FileName)
	fi, err := os.Lstat(p)
	if errors.Is(err, os.ErrNotExist) {
		return Checkpoint{}, ErrNotFound
	}
	if err != nil {
		return Checkpoint{}, err
	}
	if !fi.Mode().IsRegular() {
		return Checkpoint{}, fmt.Errorf("%w: %s is not a regular file", ErrCorrupt, p)
	}
	if fi.Size() > MaxSize {
		return Checkpoint{}, fmt.Errorf("%w: %s is larger than %d bytes", ErrCorrupt, p, MaxSize)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return Checkpoint{}, err
	}
	return Unmarshal(b)
}

// Write writes c to dir's checkpoint file as kubelet's file store does: to
// a temporary file whose name starts with "." in dir, synced, then
// renamed over the file.
func Write(dir string, c Checkpoint) error {
	b, err := Marshal(c)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, werr := writeAll(tmp, b)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(name, filepath.Join(dir, FileName))
	}
	if werr != nil {
		_ = os.Remove(name)
		return fmt.Errorf("write checkpoint %s: %w", FileName, werr)
	}
	return nil
}

func writeAll(f *os.File, b []byte) (int64, error) {
	n, err := bytes.NewReader(b).WriteTo(f)
	return n, err
}

// Devices returns all device IDs of d, sorted.
func (d DevicesPerNUMA) Devices() []string {
	seen := map[string]bool{}
	var out []string
	for _, ids := range d {
		for _, id := range ids {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	sort.Strings(out)
	return out
}
