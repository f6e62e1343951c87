package volumemanager

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// Objects is an API in memory, for tests, examples and agents without an
// API server. Its getters return copies, and a NotFound error (as an API
// client's) for a missing object. The zero value is empty and ready;
// Set replaces an object of the same kind, namespace and name.
type Objects struct {
	mu          sync.Mutex
	claims      map[string]*corev1.PersistentVolumeClaim
	volumes     map[string]*corev1.PersistentVolume
	attachments map[string]*storagev1.VolumeAttachment
	drivers     map[string]*storagev1.CSIDriver
	secrets     map[string]*corev1.Secret
	nodes       map[string]*corev1.Node
}

var _ API = (*Objects)(nil)

// Set adds or replaces objects: *corev1.PersistentVolumeClaim,
// *corev1.PersistentVolume, *storagev1.VolumeAttachment,
// *storagev1.CSIDriver, *corev1.Secret, *corev1.Node (read through
// WithNodes). Other types panic.
func (o *Objects) Set(objs ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, obj := range objs {
		switch v := obj.(type) {
		case *corev1.PersistentVolumeClaim:
			setIn(&o.claims, v.Namespace+"/"+v.Name, v.DeepCopy())
		case *corev1.PersistentVolume:
			setIn(&o.volumes, v.Name, v.DeepCopy())
		case *storagev1.VolumeAttachment:
			setIn(&o.attachments, v.Name, v.DeepCopy())
		case *storagev1.CSIDriver:
			setIn(&o.drivers, v.Name, v.DeepCopy())
		case *corev1.Secret:
			setIn(&o.secrets, v.Namespace+"/"+v.Name, v.DeepCopy())
		case *corev1.Node:
			setIn(&o.nodes, v.Name, v.DeepCopy())
		default:
			panic("volumemanager.Objects: unsupported type")
		}
	}
}

func setIn[T any](m *map[string]T, key string, v T) {
	if *m == nil {
		*m = map[string]T{}
	}
	(*m)[key] = v
}

func get[T interface{ DeepCopy() T }](o *Objects, m map[string]T, resource, key, name string) (T, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := m[key]
	if !ok {
		var zero T
		return zero, apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
	}
	return v.DeepCopy(), nil
}

// GetPersistentVolumeClaim implements ClaimGetter.
func (o *Objects) GetPersistentVolumeClaim(_ context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error) {
	return get(o, o.claims, "persistentvolumeclaims", namespace+"/"+name, name)
}

// GetPersistentVolume implements VolumeGetter.
func (o *Objects) GetPersistentVolume(_ context.Context, name string) (*corev1.PersistentVolume, error) {
	return get(o, o.volumes, "persistentvolumes", name, name)
}

// GetVolumeAttachment implements AttachmentGetter.
func (o *Objects) GetVolumeAttachment(_ context.Context, name string) (*storagev1.VolumeAttachment, error) {
	return get(o, o.attachments, "volumeattachments", name, name)
}

// GetCSIDriver implements DriverGetter.
func (o *Objects) GetCSIDriver(_ context.Context, name string) (*storagev1.CSIDriver, error) {
	return get(o, o.drivers, "csidrivers", name, name)
}

// GetSecret implements SecretGetter.
func (o *Objects) GetSecret(_ context.Context, namespace, name string) (*corev1.Secret, error) {
	return get(o, o.secrets, "secrets", namespace+"/"+name, name)
}

// nodeObjects is an Objects that is also a NodeGetter.
type nodeObjects struct{ *Objects }

// WithNodes returns o as an API that is also a NodeGetter, reading the
// Nodes Set in o.
func (o *Objects) WithNodes() interface {
	API
	ClaimStatusPatcher
	NodeGetter
} {
	return nodeObjects{o}
}

// GetNode implements NodeGetter.
func (n nodeObjects) GetNode(_ context.Context, name string) (*corev1.Node, error) {
	return get(n.Objects, n.nodes, "nodes", name, name)
}

var _ ClaimStatusPatcher = (*Objects)(nil)

// PatchPersistentVolumeClaimStatus implements ClaimStatusPatcher: the
// strategic merge patch applied to the claim held, refused with a
// Conflict when it names a resourceVersion other than the claim's (the
// API server's precondition); a numeric resourceVersion is then
// incremented.
func (o *Objects) PatchPersistentVolumeClaimStatus(_ context.Context, namespace, name string, patch []byte) (*corev1.PersistentVolumeClaim, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	cur, ok := o.claims[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumeclaims"}, name)
	}
	var p struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if rv := p.Metadata.ResourceVersion; rv != "" && rv != cur.ResourceVersion {
		return nil, apierrors.NewConflict(schema.GroupResource{Resource: "persistentvolumeclaims"}, name,
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	orig, err := json.Marshal(cur)
	if err != nil {
		return nil, err
	}
	patched, err := strategicpatch.StrategicMergePatch(orig, patch, corev1.PersistentVolumeClaim{})
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	next := &corev1.PersistentVolumeClaim{}
	if err := json.Unmarshal(patched, next); err != nil {
		return nil, err
	}
	// The status subresource: only the status changes.
	out := cur.DeepCopy()
	out.Status = next.Status
	if n, err := strconv.ParseUint(cur.ResourceVersion, 10, 64); err == nil {
		out.ResourceVersion = strconv.FormatUint(n+1, 10)
	}
	o.claims[namespace+"/"+name] = out
	return out.DeepCopy(), nil
}
