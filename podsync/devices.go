package podsync

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstart/podstart/criconfig"
)

// JoinDevices returns Devices that asks each of ds in turn and joins
// their options in that order: devices, mounts, environment and CDI names
// appended, annotations merged (a later source's value wins, as kubelet
// writes its list in order). The first error stops it. Kubelet's
// containerManager.GetResources asks the DRA manager, then the device
// manager: JoinDevices(draManager, deviceManager). Nil entries are skipped.
func JoinDevices(ds ...Devices) Devices { return joinedDevices(ds) }

type joinedDevices []Devices

func (j joinedDevices) DeviceOptions(ctx context.Context, pod *corev1.Pod, c *corev1.Container) (criconfig.DeviceOptions, error) {
	var out criconfig.DeviceOptions
	for _, d := range j {
		if d == nil {
			continue
		}
		o, err := d.DeviceOptions(ctx, pod, c)
		if err != nil {
			return criconfig.DeviceOptions{}, err
		}
		out.Devices = append(out.Devices, o.Devices...)
		out.Mounts = append(out.Mounts, o.Mounts...)
		out.Env = append(out.Env, o.Env...)
		out.CDIDevices = append(out.CDIDevices, o.CDIDevices...)
		for k, v := range o.Annotations {
			if out.Annotations == nil {
				out.Annotations = make(map[string]string, len(o.Annotations))
			}
			out.Annotations[k] = v
		}
	}
	return out, nil
}
