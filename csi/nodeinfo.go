package csi

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// NodeIDAnnotation is the Node annotation holding each driver's node ID
// (a JSON object, driver name → node ID).
const NodeIDAnnotation = "csi.volume.kubernetes.io/nodeid"

// MigratedPlugins are the in-tree plugins kubelet v1.37.2 reports as
// migrated to CSI on its CSINode (all of them, sorted).
var MigratedPlugins = []string{
	"kubernetes.io/aws-ebs",
	"kubernetes.io/azure-disk",
	"kubernetes.io/azure-file",
	"kubernetes.io/cinder",
	"kubernetes.io/gce-pd",
	"kubernetes.io/portworx-volume",
	"kubernetes.io/vsphere-volume",
}

// NewCSINode is the CSINode kubelet creates for its node: named as the
// node, owned by it (nodeUID), no drivers, the migrated-plugins annotation.
func NewCSINode(nodeName string, nodeUID types.UID) *storagev1.CSINode {
	return &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{
			Name: nodeName,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: nodeName, UID: nodeUID,
			}},
			Annotations: map[string]string{corev1.MigratedPluginsAnnotationKey: strings.Join(MigratedPlugins, ",")},
		},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{}},
	}
}

// NodeOwnsCSINode is kubelet's nodeOwnsCSINode: whether a Node owner
// reference names this node with its UID; it also returns the last Node
// owner's UID seen. Kubelet deletes a CSINode its node does not own, and
// creates it again.
func NodeOwnsCSINode(csiNode *storagev1.CSINode, nodeName string, nodeUID types.UID) (bool, types.UID) {
	var owner types.UID
	for _, ref := range csiNode.OwnerReferences {
		if ref.Kind != "Node" {
			continue
		}
		owner = ref.UID
		if ref.Name == nodeName && ref.UID == nodeUID {
			return true, owner
		}
	}
	return false, owner
}

// InstallDriverOnCSINode is kubelet's installDriverToCSINode as a pure
// function: it returns a copy of csiNode with the driver's entry (node ID,
// sorted topology keys, allocatable count when MaxVolumes > 0, capped at
// MaxInt32) last, and the migrated-plugins annotation set; changed is
// false when nothing differs (no write needed).
func InstallDriverOnCSINode(csiNode *storagev1.CSINode, info NodeInfo) (out *storagev1.CSINode, changed bool, err error) {
	if info.NodeID == "" {
		return nil, false, fmt.Errorf("%w: error adding CSI driver node info: driverNodeID must not be empty", ErrInvalidRequest)
	}
	if err := ValidateDriverName(info.Driver); err != nil {
		return nil, false, err
	}
	out = csiNode.DeepCopy()
	keys := make([]string, 0, len(info.Topology))
	for k := range info.Topology {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	specChanged := true
	drivers := []storagev1.CSINodeDriver{}
	for _, d := range out.Spec.Drivers {
		if d.Name != info.Driver {
			drivers = append(drivers, d)
			continue
		}
		have := slices.Clone(d.TopologyKeys)
		sort.Strings(have)
		if d.NodeID == info.NodeID && slices.Equal(slices.Compact(have), keys) && keepAllocatable(d, info.MaxVolumes) {
			specChanged = false
		}
	}
	annotationChanged := setMigratedPlugins(out)
	if !specChanged && !annotationChanged {
		return csiNode, false, nil
	}
	entry := storagev1.CSINodeDriver{Name: info.Driver, NodeID: info.NodeID, TopologyKeys: keys}
	if info.MaxVolumes > 0 {
		n := info.MaxVolumes
		if n > math.MaxInt32 {
			n = math.MaxInt32
		}
		c := int32(n)
		entry.Allocatable = &storagev1.VolumeNodeResources{Count: &c}
	}
	out.Spec.Drivers = append(drivers, entry)
	return out, true, nil
}

func keepAllocatable(d storagev1.CSINodeDriver, max int64) bool {
	if max == 0 {
		return d.Allocatable == nil || d.Allocatable.Count == nil
	}
	return d.Allocatable != nil && d.Allocatable.Count != nil && int64(*d.Allocatable.Count) == max
}

// setMigratedPlugins is kubelet's setMigrationAnnotation with every
// in-tree plugin migrated.
func setMigratedPlugins(c *storagev1.CSINode) bool {
	want := strings.Join(MigratedPlugins, ",")
	old := c.Annotations[corev1.MigratedPluginsAnnotationKey]
	if old != "" {
		set := strings.Split(old, ",")
		sort.Strings(set)
		if strings.Join(slices.Compact(set), ",") == want {
			return false
		}
	}
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[corev1.MigratedPluginsAnnotationKey] = want
	return true
}

// UninstallDriverFromCSINode returns a copy of csiNode without the
// driver's entry; changed is false when it had none.
func UninstallDriverFromCSINode(csiNode *storagev1.CSINode, driver string) (*storagev1.CSINode, bool) {
	out := csiNode.DeepCopy()
	drivers := out.Spec.Drivers[:0]
	for _, d := range out.Spec.Drivers {
		if d.Name != driver {
			drivers = append(drivers, d)
		}
	}
	if len(drivers) == len(csiNode.Spec.Drivers) {
		return csiNode, false
	}
	out.Spec.Drivers = drivers
	return out, true
}

// InstallDriverOnNode is kubelet's updateNodeIDInNode and
// updateTopologyLabels: a copy of node with the driver's node ID in the
// NodeIDAnnotation and the topology segments as labels. A label already
// set to another value is kubelet's "detected topology value collision"
// error. changed is false when nothing differs.
func InstallDriverOnNode(node *corev1.Node, info NodeInfo) (*corev1.Node, bool, error) {
	if info.NodeID == "" {
		return nil, false, fmt.Errorf("%w: error adding CSI driver node info: driverNodeID must not be empty", ErrInvalidRequest)
	}
	ids, err := nodeIDs(node)
	if err != nil {
		return nil, false, err
	}
	out := node.DeepCopy()
	changed := false
	if v, ok := ids[info.Driver]; !ok || v != info.NodeID {
		ids[info.Driver] = info.NodeID
		b, err := json.Marshal(ids)
		if err != nil {
			return nil, false, err
		}
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[NodeIDAnnotation] = string(b)
		changed = true
	}
	if len(info.Topology) > 0 {
		keys := make([]string, 0, len(info.Topology))
		for k := range info.Topology {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := info.Topology[k]
			if cur, ok := out.Labels[k]; ok && cur != v {
				return nil, false, fmt.Errorf("detected topology value collision: driver reported %q:%q but existing label is %q:%q", k, v, k, cur)
			}
		}
		if out.Labels == nil {
			out.Labels = map[string]string{}
		}
		for _, k := range keys {
			out.Labels[k] = info.Topology[k]
		}
		// kubelet reports a change whenever the driver has topology.
		changed = true
	}
	if !changed {
		return node, false, nil
	}
	return out, true, nil
}

// UninstallDriverFromNode is kubelet's removeNodeIDFromNode: the
// driver's entry goes from the NodeIDAnnotation (the annotation itself
// when it was the last); topology labels stay, as kubelet's.
func UninstallDriverFromNode(node *corev1.Node, driver string) (*corev1.Node, bool, error) {
	if node.Annotations[NodeIDAnnotation] == "" {
		return node, false, nil
	}
	ids, err := nodeIDs(node)
	if err != nil {
		return nil, false, err
	}
	if _, ok := ids[driver]; !ok {
		return node, false, nil
	}
	delete(ids, driver)
	out := node.DeepCopy()
	if len(ids) == 0 {
		delete(out.Annotations, NodeIDAnnotation)
		return out, true, nil
	}
	b, err := json.Marshal(ids)
	if err != nil {
		return nil, false, err
	}
	out.Annotations[NodeIDAnnotation] = string(b)
	return out, true, nil
}

// nodeIDs parses the NodeIDAnnotation.
func nodeIDs(node *corev1.Node) (map[string]string, error) {
	v := node.Annotations[NodeIDAnnotation]
	ids := map[string]string{}
	if v == "" {
		return ids, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(v), &m); err != nil {
		return nil, fmt.Errorf("failed to parse node's %q annotation value (%q) err=%v", NodeIDAnnotation, v, err)
	}
	for k, id := range m {
		ids[k] = id
	}
	return ids, nil
}
