package dra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/podstart/podstart/internal/statefile"
)

// CheckpointFile is the name of the manager's state file in its state
// directory, kubelet's (pkg/kubelet/cm/dra: dra_manager_state, in
// <root-dir> by default).
const CheckpointFile = "dra_manager_state"

// maxCheckpointSize caps what is read of a checkpoint: far above what a
// node's claims take (a few hundred bytes each).
const maxCheckpointSize = 64 << 20

// The checkpoint's kind and apiVersion, kubelet's.
const (
	checkpointKind       = "DRACheckpoint"
	checkpointAPIVersion = "checkpoint.dra.kubelet.k8s.io/v1"
)

// ClaimInfo is one claim the manager prepared (or is preparing) for pods
// on this node, as kubelet's checkpoint records it (its
// state.ClaimInfoState, field for field).
type ClaimInfo struct {
	ClaimUID  types.UID
	ClaimName string
	Namespace string
	// PodUIDs are the pods that use the claim.
	PodUIDs sets.Set[string]
	// DriverState has an entry for every driver with an allocation result
	// in the claim, even one that gave no devices.
	DriverState map[string]DriverState
}

// DriverState is what one driver prepared for a claim.
type DriverState struct {
	Devices []Device
	// SkipNodeOperations: NodePrepareResources or NodeUnprepareResources
	// not called for this driver (kubelet's DRAOptionalNodeOperations,
	// off by default; podstart refuses such claims).
	SkipNodeOperations []resourcev1.SkipNodeOperation `json:"skipNodeOperations,omitempty"`
}

// Device is a device a driver prepared, as its NodePrepareResources
// answer gave it.
type Device struct {
	PoolName     string
	DeviceName   string
	ShareID      *types.UID
	RequestNames []string
	CDIDeviceIDs []string
}

type checkpointData struct {
	Kind               string      `json:"kind,omitempty"`
	APIVersion         string      `json:"apiVersion,omitempty"`
	ClaimInfoStateList []ClaimInfo `json:"ClaimInfoStateList"`
}

type checkpointFile struct {
	Data     string
	Checksum uint32
}

// EncodeCheckpoint returns the bytes of kubelet's DRA checkpoint holding
// claims, in their order: the JSON of the claim list with its kind and
// apiVersion, carried as a string beside its CRC-32 (IEEE). A nil list is
// written as kubelet writes a new checkpoint (null).
func EncodeCheckpoint(claims []ClaimInfo) ([]byte, error) {
	data, err := json.Marshal(checkpointData{Kind: checkpointKind, APIVersion: checkpointAPIVersion, ClaimInfoStateList: claims})
	if err != nil {
		return nil, err
	}
	return json.Marshal(checkpointFile{Data: string(data), Checksum: crc32.ChecksumIEEE(data)})
}

// DecodeCheckpoint reads what EncodeCheckpoint (or kubelet) wrote. Its
// errors match ErrCheckpoint: bad JSON, a checksum that does not match
// (kubelet's "checkpoint is corrupted"), another kind or apiVersion, a
// claim without a name, namespace or UID, or a claim listed twice.
func DecodeCheckpoint(blob []byte) ([]ClaimInfo, error) {
	var f checkpointFile
	if err := json.Unmarshal(blob, &f); err != nil {
		return nil, &classErr{msg: fmt.Sprintf("DRA checkpoint: %v", err), class: ErrCheckpoint, cause: err}
	}
	if got := crc32.ChecksumIEEE([]byte(f.Data)); got != f.Checksum {
		return nil, &classErr{msg: fmt.Sprintf("DRA checkpoint: checkpoint is corrupted (checksum %d, content %d)", f.Checksum, got), class: ErrCheckpoint}
	}
	var d checkpointData
	if err := json.Unmarshal([]byte(f.Data), &d); err != nil {
		return nil, &classErr{msg: fmt.Sprintf("DRA checkpoint: %v", err), class: ErrCheckpoint, cause: err}
	}
	// Kubelet does not check these; a file of another kind would read as
	// no claims at all, and its claims would never be unprepared.
	if (d.Kind != "" && d.Kind != checkpointKind) || (d.APIVersion != "" && d.APIVersion != checkpointAPIVersion) {
		return nil, &classErr{msg: fmt.Sprintf("DRA checkpoint: kind %q apiVersion %q, want %s %s", d.Kind, d.APIVersion, checkpointKind, checkpointAPIVersion), class: ErrCheckpoint}
	}
	seen := make(map[string]bool, len(d.ClaimInfoStateList))
	for i, c := range d.ClaimInfoStateList {
		if c.ClaimName == "" || c.Namespace == "" || c.ClaimUID == "" {
			return nil, &classErr{msg: fmt.Sprintf("DRA checkpoint: claim %d has no name, namespace or UID", i), class: ErrCheckpoint}
		}
		k := c.Namespace + "/" + c.ClaimName
		if seen[k] {
			return nil, &classErr{msg: fmt.Sprintf("DRA checkpoint: ResourceClaim %s listed twice", k), class: ErrCheckpoint}
		}
		seen[k] = true
		if c.PodUIDs == nil {
			d.ClaimInfoStateList[i].PodUIDs = sets.New[string]()
		}
	}
	return d.ClaimInfoStateList, nil
}

// readCheckpoint reads the checkpoint at path; an absent file is no
// claims (exists false).
func readCheckpoint(ctx context.Context, path string) (claims []ClaimInfo, exists bool, err error) {
	blob, err := statefile.Read(ctx, path, maxCheckpointSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, &classErr{msg: fmt.Sprintf("DRA checkpoint: %v", err), class: ErrCheckpoint, cause: err}
	}
	claims, err = DecodeCheckpoint(blob)
	return claims, true, err
}

// writeCheckpoint replaces the file at path as kubelet's file store does:
// a temporary file beside it (name starting with '.', mode 0600), synced,
// then renamed over it.
func writeCheckpoint(path string, claims []ClaimInfo) error {
	blob, err := EncodeCheckpoint(claims)
	if err != nil {
		return &classErr{msg: fmt.Sprintf("DRA checkpoint: %v", err), class: ErrCheckpoint, cause: err}
	}
	if err := writeAtomic(path, blob); err != nil {
		return &classErr{msg: fmt.Sprintf("could not save checkpoint %s: %v", filepath.Base(path), err), class: ErrCheckpoint, cause: err}
	}
	return nil
}

func writeAtomic(path string, blob []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".")
	if err != nil {
		return err
	}
	name := tmp.Name()
	if _, err := tmp.Write(blob); err != nil {
		tmp.Close()
		os.Remove(name)
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		os.Remove(name)
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(name)
		return err
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return err
	}
	return nil
}
