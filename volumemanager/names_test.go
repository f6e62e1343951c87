package volumemanager

import (
	"errors"
	"testing"
)

// TestNames pins kubelet v1.37.2's names (values from sha256sum of the
// same strings).
func TestNames(t *testing.T) {
	for _, tc := range []struct{ name, got, want string }{
		{"AttachmentName", AttachmentName("vol-1", "csi.example.com", "node-1"), "csi-b74c7fc125891ffa0d0f2e0d645733e3fae7fba3066e76500a771ea08be9da28"},
		{"InlineVolumeHandle", InlineVolumeHandle("uid-p", "cache"), "csi-7e8130bf769efdd438f0f7f9c50aa8f99bc8cfcc4b8657f3a9f40181521fdfab"},
		{"UniqueVolumeName", string(UniqueVolumeName("csi.example.com", "vol-1")), "kubernetes.io/csi/csi.example.com^vol-1"},
		{"InlineVolumeName", string(InlineVolumeName("uid-p", "cache")), "kubernetes.io/csi/uid-p-cache"},
		{"TargetPath", TargetPath("/var/lib/kubelet", "uid-p", "pv-1"), "/var/lib/kubelet/pods/uid-p/volumes/kubernetes.io~csi/pv-1/mount"},
		{"BlockStagingPath", BlockStagingPath("/var/lib/kubelet", "pv-1"), "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/staging/pv-1"},
		{"BlockPublishPath", BlockPublishPath("/var/lib/kubelet", "uid-p", "pv-1"), "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/publish/pv-1/uid-p"},
		{"BlockGlobalMapPath", BlockGlobalMapPath("/var/lib/kubelet", "pv-1"), "/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/pv-1/dev"},
		{"PodDeviceMapPath", PodDeviceMapPath("/var/lib/kubelet", "uid-p", "pv-1"), "/var/lib/kubelet/pods/uid-p/volumeDevices/kubernetes.io~csi/pv-1"},
		{"StagingPath", StagingPath("/var/lib/kubelet", "csi.example.com", "vol-1"),
			"/var/lib/kubelet/plugins/kubernetes.io/csi/csi.example.com/d2e8363faaac7ae76def3b14091d8eb5755f6b92e9531627aeec833a8731cc49/globalmount"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestCheckDriverName(t *testing.T) {
	for _, ok := range []string{"csi.example.com", "hostpath.csi.k8s.io", "EBS.csi.aws.com"} {
		if err := CheckDriverName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "../x", "a/b", "a b", "-a", "a_b", string(make([]byte, 64))} {
		if err := CheckDriverName(bad); !errors.Is(err, ErrInvalidName) {
			t.Errorf("%q: err = %v, want ErrInvalidName", bad, err)
		}
	}
}
