package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	coreinformers "k8s.io/client-go/informers/core/v1"
	storageinformers "k8s.io/client-go/informers/storage/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/podstart/podstart/csi"
	"github.com/podstart/podstart/volumemanager"
)

// storageObjects is volumemanager.API over the API client, reading as
// kubelet reads: claims, volumes, secrets and VolumeAttachments live (the
// node authorizer lets a node only get a VolumeAttachment; kubelet's CSI
// attacher gets it in WaitForAttach, once node.status.volumesAttached
// lists the volume), CSIDrivers from an informer (kubelet's CSI plugin's
// CSIDriverLister) and the Node from an informer of the one Node
// (kubelet's node lister; read live while it is not in the cache).
type storageObjects struct {
	client  kubernetes.Interface
	drivers storagelisters.CSIDriverLister
	nodes   corelisters.NodeLister
	// informers to run, and whether they have synced.
	informers []cache.SharedIndexInformer
}

// newStorageObjects makes the informers of CSIDrivers and of the Node
// nodeName; run starts them.
func newStorageObjects(client kubernetes.Interface, nodeName string) *storageObjects {
	drivers := storageinformers.NewCSIDriverInformer(client, 0, cache.Indexers{})
	nodes := coreinformers.NewFilteredNodeInformer(client, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", nodeName).String()
	})
	return &storageObjects{client: client, drivers: storagelisters.NewCSIDriverLister(drivers.GetIndexer()),
		nodes: corelisters.NewNodeLister(nodes.GetIndexer()), informers: []cache.SharedIndexInformer{drivers, nodes}}
}

// run runs the informers until ctx ends; synced says when they have
// listed once.
func (o *storageObjects) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, inf := range o.informers {
		wg.Go(func() { inf.Run(ctx.Done()) })
	}
	wg.Wait()
}

// synced says whether every informer has listed once.
func (o *storageObjects) synced() bool {
	for _, inf := range o.informers {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

func (o *storageObjects) GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*corev1.PersistentVolumeClaim, error) {
	return o.client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (o *storageObjects) GetPersistentVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error) {
	return o.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
}

func (o *storageObjects) GetVolumeAttachment(ctx context.Context, name string) (*storagev1.VolumeAttachment, error) {
	return o.client.StorageV1().VolumeAttachments().Get(ctx, name, metav1.GetOptions{})
}

func (o *storageObjects) GetCSIDriver(_ context.Context, name string) (*storagev1.CSIDriver, error) {
	d, err := o.drivers.Get(name)
	if err != nil {
		return nil, err
	}
	return d.DeepCopy(), nil
}

// GetNode is the Node from the informer's cache, or live while the cache
// does not hold it.
func (o *storageObjects) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	n, err := o.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return o.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, err
	}
	return n.DeepCopy(), nil
}

func (o *storageObjects) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return o.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

// PatchPersistentVolumeClaimStatus is kubelet's PVC status patch after a
// node expansion (the node authorizer lets a node patch the status of
// the claims its pods use).
func (o *storageObjects) PatchPersistentVolumeClaimStatus(ctx context.Context, namespace, name string, patch []byte) (*corev1.PersistentVolumeClaim, error) {
	return o.client.CoreV1().PersistentVolumeClaims(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
}

// nodeInfoWriter is csi.NodeInfoWriter over the API client, as kubelet's
// nodeinfomanager: the Node's csi.volume.kubernetes.io/nodeid annotation
// and topology labels (a strategic merge patch of the Node's metadata),
// then the CSINode's driver entry (the CSINode created owned by the Node,
// and made again if another Node object owns it). Each write is retried on
// a conflict.
type nodeInfoWriter struct {
	client   kubernetes.Interface
	nodeName string
}

func (w nodeInfoWriter) InstallDriver(ctx context.Context, info csi.NodeInfo) error {
	node, err := w.updateNode(ctx, func(n *corev1.Node) (*corev1.Node, bool, error) { return csi.InstallDriverOnNode(n, info) })
	if err != nil {
		return fmt.Errorf("error updating Node object with CSI driver node info: %w", err)
	}
	err = w.updateCSINode(ctx, node, func(c *storagev1.CSINode) (*storagev1.CSINode, bool, error) {
		return csi.InstallDriverOnCSINode(c, info)
	})
	if err != nil {
		return fmt.Errorf("error updating CSINode object with CSI driver node info: %w", err)
	}
	return nil
}

func (w nodeInfoWriter) UninstallDriver(ctx context.Context, driver string) error {
	node, err := w.client.CoreV1().Nodes().Get(ctx, w.nodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	err = w.updateCSINode(ctx, node, func(c *storagev1.CSINode) (*storagev1.CSINode, bool, error) {
		out, changed := csi.UninstallDriverFromCSINode(c, driver)
		return out, changed, nil
	})
	if err != nil {
		return fmt.Errorf("error uninstalling CSI driver from CSINode object: %w", err)
	}
	if _, err := w.updateNode(ctx, func(n *corev1.Node) (*corev1.Node, bool, error) { return csi.UninstallDriverFromNode(n, driver) }); err != nil {
		return fmt.Errorf("error removing CSI driver node info from Node object: %w", err)
	}
	return nil
}

// initCSINode is kubelet's InitializeCSINodeWithAnnotation at start: the
// node's CSINode, owned by the Node, exists before any driver registers.
func (w nodeInfoWriter) initCSINode(ctx context.Context, node *corev1.Node) error {
	return w.updateCSINode(ctx, node, func(c *storagev1.CSINode) (*storagev1.CSINode, bool, error) { return c, false, nil })
}

// updateNode patches the Node's metadata with what change makes of it.
func (w nodeInfoWriter) updateNode(ctx context.Context, change func(*corev1.Node) (*corev1.Node, bool, error)) (*corev1.Node, error) {
	var node *corev1.Node
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := w.client.CoreV1().Nodes().Get(ctx, w.nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		updated, changed, err := change(n)
		if err != nil || !changed {
			node = n
			return err
		}
		patch, err := metadataPatch(n, updated)
		if err != nil {
			return err
		}
		node, err = w.client.CoreV1().Nodes().Patch(ctx, w.nodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	return node, err
}

// metadataPatch is the strategic merge patch from old's labels and
// annotations to updated's, with old's resourceVersion as precondition.
func metadataPatch(old, updated *corev1.Node) ([]byte, error) {
	strip := func(n *corev1.Node) ([]byte, error) {
		return json.Marshal(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: n.Labels, Annotations: n.Annotations}})
	}
	a, err := strip(old)
	if err != nil {
		return nil, err
	}
	b, err := strip(updated)
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(a, b, corev1.Node{})
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, err
	}
	meta, _ := m["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		m["metadata"] = meta
	}
	meta["resourceVersion"] = old.ResourceVersion
	return json.Marshal(m)
}

// updateCSINode writes what change makes of the node's CSINode, creating
// it (owned by the Node) first when it is missing, and deleting and
// creating it again when the Node does not own it (kubelet's
// nodeOwnsCSINode check).
func (w nodeInfoWriter) updateCSINode(ctx context.Context, node *corev1.Node, change func(*storagev1.CSINode) (*storagev1.CSINode, bool, error)) error {
	api := w.client.StorageV1().CSINodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := api.Get(ctx, w.nodeName, metav1.GetOptions{})
		if err == nil {
			if owns, _ := csi.NodeOwnsCSINode(c, w.nodeName, node.UID); !owns {
				if err := api.Delete(ctx, w.nodeName, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(c.UID))}); err != nil && !apierrors.IsNotFound(err) {
					return err
				}
				err = apierrors.NewNotFound(storagev1.Resource("csinodes"), w.nodeName)
			}
		}
		if apierrors.IsNotFound(err) {
			if c, err = api.Create(ctx, csi.NewCSINode(w.nodeName, node.UID), metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		if err != nil {
			return err
		}
		updated, changed, err := change(c)
		if err != nil || !changed {
			return err
		}
		_, err = api.Update(ctx, updated, metav1.UpdateOptions{})
		return err
	})
}

var (
	_ volumemanager.API                = (*storageObjects)(nil)
	_ volumemanager.ClaimStatusPatcher = (*storageObjects)(nil)
	_ volumemanager.NodeGetter         = (*storageObjects)(nil)
	_ csi.NodeInfoWriter               = nodeInfoWriter{}
)
