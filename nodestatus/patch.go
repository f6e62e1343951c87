package nodestatus

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// StatusPatch is kubelet's node status patch (component-helpers'
// PatchNodeStatus): a strategic merge patch from old to cur for the
// node's status subresource, the spec left out, and the addresses
// replaced whole when they changed (their merge key is wrong in the API).
func StatusPatch(old, cur *corev1.Node) ([]byte, error) {
	oldJSON, err := json.Marshal(old)
	if err != nil {
		return nil, fmt.Errorf("failed to Marshal oldData for node %q: %v", old.Name, err)
	}
	fixAddresses := len(old.Status.Addresses) > 0 && !equality.Semantic.DeepEqual(old.Status.Addresses, cur.Status.Addresses)
	diff := cur.DeepCopy()
	diff.Spec = old.Spec
	if fixAddresses {
		diff.Status.Addresses = old.Status.Addresses
	}
	newJSON, err := json.Marshal(diff)
	if err != nil {
		return nil, fmt.Errorf("failed to Marshal newData for node %q: %v", old.Name, err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, corev1.Node{})
	if err != nil {
		return nil, fmt.Errorf("failed to CreateTwoWayMergePatch for node %q: %v", old.Name, err)
	}
	if !fixAddresses {
		return patch, nil
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, err
	}
	b, err := json.Marshal(cur.Status.Addresses)
	if err != nil {
		return nil, err
	}
	var addrs []any
	if err := json.Unmarshal(b, &addrs); err != nil {
		return nil, err
	}
	addrs = append(addrs, map[string]any{"$patch": "replace"})
	st, _ := m["status"].(map[string]any)
	if st == nil {
		st = map[string]any{}
		m["status"] = st
	}
	st["addresses"] = addrs
	return json.Marshal(m)
}
