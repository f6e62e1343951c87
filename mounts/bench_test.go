package mounts

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkMake: a container with 20 mounts (some with subPath and
// propagation), the hosts file and the termination file, on memDisk so
// that only the translation is measured.
func BenchmarkMake(b *testing.B) {
	vols := VolumeMap{}
	var vms []corev1.VolumeMount
	var pvs []corev1.Volume
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("vol%d", i)
		pvs = append(pvs, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		vols[name] = Volume{HostPath: "/var/lib/kubelet/pods/uid/volumes/" + name, SELinuxRelabel: i%2 == 0}
		vm := corev1.VolumeMount{Name: name, MountPath: fmt.Sprintf("/mnt/%d", i), ReadOnly: i%3 == 0}
		if i%4 == 0 {
			vm.SubPath = "sub/dir"
		}
		if i%5 == 0 {
			vm.MountPropagation = ptr(corev1.MountPropagationHostToContainer)
		}
		vms = append(vms, vm)
	}
	p, c := pod(vms...)
	p.Spec.Volumes = append(p.Spec.Volumes, pvs...)
	c.TerminationMessagePath = "/dev/termination-log"
	req := Request{Pod: p, Container: c, Volumes: vols, PodDir: "/var/lib/kubelet/pods/uid", PodIPs: []string{"10.0.0.5"}}
	disk := newMemDisk()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Make(ctx, req, WithDisk(disk)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOSDisk: the files written for each container start.
func BenchmarkOSDisk(b *testing.B) {
	dir := b.TempDir()
	var d OSDisk
	hosts, _ := HostsFileContent("web", "", []string{"10.0.0.5"}, nil)
	b.Run("hosts-file", func(b *testing.B) {
		for b.Loop() {
			if err := d.WriteFile(dir+"/pod/etc-hosts", hosts, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("termination-file", func(b *testing.B) {
		for b.Loop() {
			if _, err := d.CreateTerminationFile(dir + "/pod/containers/app"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkHostMounterMountPoint: the check each sync makes per
// memory-backed volume before deciding to mount (statx, then statfs for a
// mount root).
func BenchmarkHostMounterMountPoint(b *testing.B) {
	var m HostMounter
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := m.MountPoint(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseMountInfo: a node's mount table of 500 entries, read once
// per pod removal.
func BenchmarkParseMountInfo(b *testing.B) {
	var sb strings.Builder
	for i := range 500 {
		fmt.Fprintf(&sb, "%d 22 0:%d / /var/lib/kubelet/pods/uid-%d/volumes/kubernetes.io~secret/tok rw,relatime shared:5 - tmpfs tmpfs rw,size=1024k,noswap\n", 100+i, 40+i, i)
	}
	in := sb.String()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseMountInfo(strings.NewReader(in)); err != nil {
			b.Fatal(err)
		}
	}
}

func benchPayload(gen byte) map[string]File {
	files := map[string]File{}
	for i := range 16 {
		data := make([]byte, 256)
		data[0] = gen
		files[fmt.Sprintf("key-%d", i)] = File{Data: data, Mode: 0o644}
	}
	files["sub/dir/ca.crt"] = File{Data: []byte("CA"), Mode: 0o644}
	return files
}

// BenchmarkWriteAtomic: a Secret-like payload of 16 files of 256 bytes
// and one nested file. "unchanged" is what every sync of a running pod
// does (compare, write nothing); "changed" alternates two payloads, each
// write a new directory, the swap and the removal of the old one.
func BenchmarkWriteAtomic(b *testing.B) {
	b.Run("unchanged", func(b *testing.B) {
		root := b.TempDir()
		dir := root + "/pods/uid/volumes/kubernetes.io~secret/vol"
		files := benchPayload(0)
		if err := WriteAtomic(root, dir, files); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := WriteAtomic(root, dir, files); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("changed", func(b *testing.B) {
		root := b.TempDir()
		dir := root + "/pods/uid/volumes/kubernetes.io~secret/vol"
		p := [2]map[string]File{benchPayload(0), benchPayload(1)}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := WriteAtomic(root, dir, p[i%2]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
