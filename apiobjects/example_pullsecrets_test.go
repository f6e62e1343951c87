package apiobjects_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstart/podstart/apiobjects"
	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/podsync"
)

// PullSecrets gathers a pod's image pull secrets for podworker; one that
// cannot be fetched is left out, and kubelet v1.37's Warning event says so
// only after a sync whose image pull failed.
func ExamplePullSecrets() {
	var objs apiobjects.Objects
	objs.SetSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "regcred"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}})
	rec := &recordedEvents{} // client-go's record.EventRecorder in a node agent
	pull := &apiobjects.PullSecrets{Source: &objs, Recorder: rec}
	// podworker.New(syncer, podworker.WithPullSecrets(pull.ForPod),
	//	podworker.WithOnSync(func(_ types.UID, st podworker.PodState) { pull.AfterSync(st.Pod, st.Result) }))

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-web"},
		Spec: corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}, {Name: "old-cred"}}}}
	secrets, _ := pull.ForPod(context.Background(), pod)
	fmt.Println(len(secrets), secrets[0].Name, len(rec.events))

	// The sync's pull failed (the result podworker passes to WithOnSync).
	pull.AfterSync(pod, podsync.Result{Results: []*podsync.SyncResult{{Action: podsync.ActionStartContainer, Target: "web",
		Err: &images.Error{Reason: images.ErrImagePull, Err: errors.New("401 Unauthorized")}}}})
	fmt.Println(rec.events[0])
	// Output:
	// 1 regcred 0
	// Warning FailedToRetrieveImagePullSecret Unable to retrieve some image pull secrets (old-cred); attempting to pull the image may not succeed.
}
