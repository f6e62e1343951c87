package statusmanager

import (
	"bytes"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// StatusPatch is the patch kubelet's PatchPodStatus sends to the pods/status
// subresource: a two-way strategic merge patch from the status the API
// server holds (old) to the new one. Only the new side carries the pod's
// UID, so the patch always holds {"metadata":{"uid":…}}, which the API
// server checks as a precondition: a patch meant for a pod deleted and
// recreated under the same name is refused. unchanged reports a patch with
// nothing but that precondition, which kubelet does not send.
func StatusPatch(uid types.UID, old, new corev1.PodStatus) (patch []byte, unchanged bool, err error) {
	oldJSON, err := json.Marshal(corev1.Pod{Status: old})
	if err != nil {
		return nil, false, fmt.Errorf("statusmanager: marshal old status: %w", err)
	}
	newJSON, err := json.Marshal(corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: new})
	if err != nil {
		return nil, false, fmt.Errorf("statusmanager: marshal new status: %w", err)
	}
	patch, err = strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, corev1.Pod{})
	if err != nil {
		return nil, false, fmt.Errorf("statusmanager: status patch: %w", err)
	}
	return patch, bytes.Equal(patch, fmt.Appendf(nil, `{"metadata":{"uid":%q}}`, uid)), nil
}
