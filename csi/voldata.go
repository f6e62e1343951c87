package csi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// VolumeData is kubelet's vol_data.json: beside a staging directory
// (VolumeHandle and DriverName only), beside a publish directory (all but
// SELinuxMountContext unless a context mount was made), and in a block
// volume's data directory. Reconstruction after a restart reads it back.
type VolumeData struct {
	SpecVolID           string `json:"specVolID,omitempty"`
	VolumeHandle        string `json:"volumeHandle,omitempty"`
	DriverName          string `json:"driverName,omitempty"`
	NodeName            string `json:"nodeName,omitempty"`
	AttachmentID        string `json:"attachmentID,omitempty"`
	VolumeLifecycleMode string `json:"volumeLifecycleMode,omitempty"`
	SELinuxMountContext string `json:"seLinuxMountContext,omitempty"`
}

// maxVolData bounds what ReadVolumeData reads (kubelet's files are a few
// hundred bytes).
const maxVolData = 64 << 10

// writeVolumeData writes dir/vol_data.json as kubelet's saveVolumeData:
// a JSON object of strings, one encoder line.
func writeVolumeData(dir string, d VolumeData) error {
	p := filepath.Join(dir, VolDataFileName)
	f, err := os.Create(p)
	if err != nil {
		return errors.New(csiLog("failed to save volume data file %s: %v", p, err))
	}
	err = json.NewEncoder(f).Encode(d.asMap())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.New(csiLog("failed to save volume data file %s: %v", p, err))
	}
	return nil
}

// asMap is d as kubelet writes it: a map, so the keys come out sorted,
// byte for byte as kubelet's file.
func (d VolumeData) asMap() map[string]string {
	m := map[string]string{}
	for k, v := range map[string]string{
		"specVolID": d.SpecVolID, "volumeHandle": d.VolumeHandle, "driverName": d.DriverName,
		"nodeName": d.NodeName, "attachmentID": d.AttachmentID,
		"volumeLifecycleMode": d.VolumeLifecycleMode, "seLinuxMountContext": d.SELinuxMountContext,
	} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// ReadVolumeData reads dir/vol_data.json. A missing file is an error
// matching os.ErrNotExist. Every name it returns has been validated, so
// a tampered file cannot steer later paths.
func ReadVolumeData(dir string) (VolumeData, error) {
	p := filepath.Join(dir, VolDataFileName)
	f, err := os.Open(p)
	if err != nil {
		return VolumeData{}, fmt.Errorf("%s: %w", csiLog("failed to open volume data file [%s]", p), err)
	}
	defer f.Close()
	var d VolumeData
	if err := json.NewDecoder(io.LimitReader(f, maxVolData)).Decode(&d); err != nil {
		return VolumeData{}, errors.New(csiLog("failed to parse volume data file [%s]: %v", p, err))
	}
	if err := ValidateDriverName(d.DriverName); err != nil {
		return VolumeData{}, fmt.Errorf("volume data file [%s]: %w", p, err)
	}
	if err := ValidateVolumeHandle(d.VolumeHandle); err != nil {
		return VolumeData{}, fmt.Errorf("volume data file [%s]: %w", p, err)
	}
	if d.SpecVolID != "" {
		if err := ValidateSpecName(d.SpecVolID); err != nil {
			return VolumeData{}, fmt.Errorf("volume data file [%s]: %w", p, err)
		}
	}
	return d, nil
}
