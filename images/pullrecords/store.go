package pullrecords

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/internal/statefile"
)

// On-disk layout, as kubelet's fsPullRecordsAccessor: <dir>/pulling holds
// one ImagePullIntent per image, <dir>/pulled one ImagePulledRecord per
// image reference, each in a file named "sha256-" + the hex SHA-256 of the
// image (or image reference), written to a ".tmp" file and renamed.
const (
	pullingDir     = "pulling"
	pulledDir      = "pulled"
	filePrefix     = "sha256-"
	tmpSuffix      = ".tmp"
	groupName      = "kubelet.config.k8s.io"
	kindIntent     = "ImagePullIntent"
	kindPulled     = "ImagePulledRecord"
	currentVersion = "v1beta1"
)

// Caps on what one record file may hold (see the package doc). An intent
// holds one image reference (a name of at most 255 bytes with a tag and a
// digest: well under 1 KiB); a pulled record holds, per image name, the
// secrets (at most about 480 bytes each, with the longest namespace, name
// and UID) and service accounts that pulled it, so 1 MiB is thousands of
// secrets, more than a node sees for one image. A larger file is refused
// unread, as a corrupt one.
const (
	maxIntentSize = 64 << 10
	maxPulledSize = 1 << 20
)

func maxSize(sub string) int64 {
	if sub == pullingDir {
		return maxIntentSize
	}
	return maxPulledSize
}

var (
	currentAPIVersion = groupName + "/" + currentVersion
	knownAPIVersions  = map[string]bool{groupName + "/v1alpha1": true, currentAPIVersion: true}
)

// fileName is kubelet's cacheFilename.
func fileName(key string) string {
	return fmt.Sprintf("%s%x", filePrefix, sha256.Sum256([]byte(key)))
}

// files is where records are kept: a directory, or memory.
type files interface {
	// read returns fs.ErrNotExist when absent, an error matching ErrDecode
	// for a file refused unread (not regular, or over its cap).
	read(sub, name string) ([]byte, error)
	write(sub, name string, data []byte) error
	remove(sub, name string) error // absent is not an error
	// list stops early with ctx's error when ctx ends.
	list(ctx context.Context, sub string) (map[string][]byte, error)
}

type dirFiles struct{ dir string }

func (d dirFiles) read(sub, name string) ([]byte, error) {
	// One capped read of a regular file opened without blocking: nothing
	// here waits, so no ctx is needed.
	return readRecord(context.Background(), filepath.Join(d.dir, sub, name), maxSize(sub))
}

// readRecord is statefile.Read with a refused file reported as a corrupt
// record (ErrDecode), as kubelet reports a file it cannot decode.
func readRecord(ctx context.Context, path string, max int64) ([]byte, error) {
	data, err := statefile.Read(ctx, path, max)
	if statefile.Refused(err) {
		return nil, fmt.Errorf("%w: %w", ErrDecode, err)
	}
	return data, err
}

func (d dirFiles) write(sub, name string, data []byte) error {
	dir := filepath.Join(d.dir, sub)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	target := filepath.Join(dir, name)
	tmp := target + tmpSuffix
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, target); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

func (d dirFiles) remove(sub, name string) error {
	err := os.Remove(filepath.Join(d.dir, sub, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func (d dirFiles) list(ctx context.Context, sub string) (map[string][]byte, error) {
	dir := filepath.Join(d.dir, sub)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	var errs []error
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		// Kubelet skips directories, files it did not write and .tmp
		// files.
		if e.IsDir() || !strings.HasPrefix(e.Name(), filePrefix) || strings.HasSuffix(e.Name(), tmpSuffix) {
			continue
		}
		// Anything else that is not a regular file (a FIFO, a symlink)
		// or is over the cap is an error, as a corrupt record.
		data, err := readRecord(ctx, filepath.Join(dir, e.Name()), maxSize(sub))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", e.Name(), err))
			continue
		}
		out[e.Name()] = data
	}
	return out, errors.Join(errs...)
}

type memFiles struct {
	mu    sync.Mutex
	files map[string][]byte
}

func (m *memFiles) read(sub, name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	data, ok := m.files[sub+"/"+name]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return data, nil
}

func (m *memFiles) write(sub, name string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[sub+"/"+name] = append([]byte(nil), data...)
	return nil
}

func (m *memFiles) remove(sub, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.files, sub+"/"+name)
	return nil
}

func (m *memFiles) list(_ context.Context, sub string) (map[string][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]byte{}
	for k, v := range m.files {
		if name, ok := strings.CutPrefix(k, sub+"/"); ok {
			out[name] = v
		}
	}
	return out, nil
}

// ErrDecode: a record file does not hold a record kubelet (v1alpha1 or
// v1beta1) or podstart wrote.
var ErrDecode = errors.New("malformed image pull record")

// decode reads a record of kind into out, strictly (unknown fields are an
// error, as with kubelet's strict codec). current says whether it is in the
// version written today.
func decode(data []byte, kind string, out any) (current bool, err error) {
	var tm struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(data, &tm); err != nil {
		return false, fmt.Errorf("%w: %w", ErrDecode, err)
	}
	if tm.Kind != kind || !knownAPIVersions[tm.APIVersion] {
		return false, fmt.Errorf("%w: kind %q apiVersion %q, want %s", ErrDecode, tm.Kind, tm.APIVersion, kind)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return false, fmt.Errorf("%w: %w", ErrDecode, err)
	}
	return tm.APIVersion == currentAPIVersion, nil
}

// encode writes a record as kubelet's JSON serializer does: kind and
// apiVersion first, one line.
func encode(obj any) ([]byte, error) {
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(obj); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// store reads and writes intents and pulled records; callers serialise.
type store struct{ f files }

func (s store) writeIntent(image string) error {
	data, err := encode(&Intent{
		TypeMeta: typeMeta(kindIntent), Image: image})
	if err != nil {
		return err
	}
	return s.f.write(pullingDir, fileName(image), data)
}

func (s store) deleteIntent(image string) error { return s.f.remove(pullingDir, fileName(image)) }

func (s store) intentExists(image string) (bool, error) {
	data, err := s.f.read(pullingDir, fileName(image))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	var in Intent
	if _, err := decode(data, kindIntent, &in); err != nil {
		return false, err
	}
	return in.Image == image, nil
}

func (s store) listIntents(ctx context.Context) ([]*Intent, error) {
	all, err := s.f.list(ctx, pullingDir)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	var out []*Intent
	for _, name := range sortedKeys(all) {
		in := new(Intent)
		if _, err := decode(all[name], kindIntent, in); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		out = append(out, in)
	}
	return out, errors.Join(errs...)
}

// getPulled is kubelet's GetImagePulledRecord: a file that does not decode
// exists (with the error); a record for another reference (a hash
// collision) does not.
func (s store) getPulled(imageRef string) (*PulledRecord, bool, error) {
	data, err := s.f.read(pulledDir, fileName(imageRef))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case errors.Is(err, ErrDecode):
		return nil, true, err // refused unread: exists, as a corrupt record
	case err != nil:
		return nil, false, err
	}
	rec := new(PulledRecord)
	if _, err := decode(data, kindPulled, rec); err != nil {
		return nil, true, err
	}
	if rec.ImageRef != imageRef {
		return nil, false, nil
	}
	return rec, true, nil
}

func (s store) writePulled(rec *PulledRecord) error {
	rec.TypeMeta = typeMeta(kindPulled)
	data, err := encode(rec)
	if err != nil {
		return err
	}
	return s.f.write(pulledDir, fileName(rec.ImageRef), data)
}

func (s store) deletePulled(imageRef string) error {
	return s.f.remove(pulledDir, fileName(imageRef))
}

func (s store) listPulled(ctx context.Context) ([]*PulledRecord, error) {
	all, err := s.f.list(ctx, pulledDir)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	var out []*PulledRecord
	for _, name := range sortedKeys(all) {
		rec := new(PulledRecord)
		if _, err := decode(all[name], kindPulled, rec); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		out = append(out, rec)
	}
	return out, errors.Join(errs...)
}

// migrate rewrites v1alpha1 records as v1beta1, as kubelet does at start.
func (s store) migrate(ctx context.Context) error {
	var errs []error
	intents, _ := s.f.list(ctx, pullingDir)
	for _, name := range sortedKeys(intents) {
		in := new(Intent)
		if current, err := decode(intents[name], kindIntent, in); err == nil && !current {
			errs = append(errs, s.writeIntent(in.Image))
		}
	}
	pulled, _ := s.f.list(ctx, pulledDir)
	for _, name := range sortedKeys(pulled) {
		rec := new(PulledRecord)
		if current, err := decode(pulled[name], kindPulled, rec); err == nil && !current {
			errs = append(errs, s.writePulled(rec))
		}
	}
	return errors.Join(errs...)
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{Kind: kind, APIVersion: currentAPIVersion}
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
