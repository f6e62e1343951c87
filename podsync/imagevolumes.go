package podsync

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/images"
	"github.com/podstart/podstart/mounts"
)

// ImageVolumeEnsurer is an ImageEnsurer that also makes image volumes'
// images present (ImageVolume, GA and on by default in v1.37);
// *images.Manager is one. With an ImageEnsurer that is not, a container
// mounting an image volume fails to start with an error naming the
// volume (ErrVolumeNotSupported), never without it.
type ImageVolumeEnsurer interface {
	EnsureImageVolume(ctx context.Context, pod *corev1.Pod, vol *corev1.Volume, pullSecrets []corev1.Secret, sandboxConfig *runtimeapi.PodSandboxConfig) (imageRef, message string, err error)
}

// imageVolumePull is one image volume's pull in this sync.
type imageVolumePull struct {
	ref, requested string
	msg            string
	err            error
}

// pullImageVolumes is kubelet's getImageVolumes: once per sync, before
// its first container start, every image volume of the pod is made
// present as its pull policy says, whichever container mounts it. A
// failed pull fails only the containers that mount the volume
// (imageVolumeError).
func (in *podInputs) pullImageVolumes(ctx context.Context, pullSecrets []corev1.Secret, sandboxConfig *runtimeapi.PodSandboxConfig) {
	if in.imagesPulled {
		return
	}
	in.imagesPulled = true
	for i := range in.pod.Spec.Volumes {
		v := &in.pod.Spec.Volumes[i]
		if v.Image == nil {
			continue
		}
		if in.imageVols == nil {
			in.imageVols = map[string]imageVolumePull{}
		}
		e, ok := in.s.images.(ImageVolumeEnsurer)
		if !ok {
			err := fmt.Errorf("volume %q: an image volume needs an image puller that pulls them (podsync.ImageVolumeEnsurer, such as *images.Manager): %w", v.Name, ErrVolumeNotSupported)
			in.imageVols[v.Name] = imageVolumePull{msg: err.Error(), err: stepError(ErrCreateContainerConfig, err)}
			continue
		}
		ref, msg, err := e.EnsureImageVolume(ctx, in.pod, v, pullSecrets, sandboxConfig)
		in.imageVols[v.Name] = imageVolumePull{ref: ref, requested: v.Image.Reference, msg: msg, err: err}
	}
}

// imageVolumeError is kubelet's toKubeContainerImageVolumes for c: each
// image volume c mounts whose pull failed is a Failed event on c, and the
// last of them fails c's start with that pull's error and message.
func (in *podInputs) imageVolumeError(c *corev1.Container) (msg string, err error) {
	for _, vm := range c.VolumeMounts {
		p, ok := in.imageVols[vm.Name]
		if !ok || p.err == nil {
			continue
		}
		in.s.o.recorder.Eventf(images.ContainerRef(in.pod, c), corev1.EventTypeWarning, "Failed", "Error: %v", p.err)
		msg, err = p.msg, p.err
	}
	return msg, err
}

// addImageVolumes is vols with the image volumes pulled in this sync.
func (in *podInputs) addImageVolumes(vols mounts.VolumeMap) mounts.VolumeMap {
	out := make(mounts.VolumeMap, len(vols)+len(in.imageVols))
	maps.Copy(out, vols)
	for name, p := range in.imageVols {
		if p.err != nil {
			continue
		}
		// Kubelet's image volume plugin: always read-only, not managed,
		// never relabelled.
		out[name] = mounts.Volume{ReadOnly: true, Image: &mounts.ImageVolume{
			Ref: p.ref, Requested: p.requested, RuntimeHandler: in.s.o.handler(in.pod), Annotations: maps.Clone(in.pod.Annotations),
		}}
	}
	return out
}
