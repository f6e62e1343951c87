package fake_test

import (
	"context"
	"regexp"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstart/podstart/runtime/fake"
)

var (
	imageIDRE    = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	repoDigestRE = regexp.MustCompile(`^docker\.io/library/busybox@sha256:[0-9a-f]{64}$`)
)

// TestContainerStatusImage pins the image fields of containers as
// containerd 2.3 reports them (internal/cri/server/container_status.go and
// container_list.go): ContainerStatus gives the first repo tag as Image, the
// first repo digest as ImageRef and the config digest as ImageId, falling
// back to the config's image spec and the image ID when the image has no
// tag, no digest or is gone; ListContainers gives the config's image spec
// as sent and the image ID as both ImageRef and ImageId.
func TestContainerStatusImage(t *testing.T) {
	t.Parallel()
	const digest = "sha256:0000000000000000000000000000000000000000000000000000000000000001"
	tests := []struct {
		name       string
		pull       string // the reference pulled
		remove     bool   // remove the image after the container is created
		wantImage  string // ContainerStatus.Image.Image; "" for the config's spec
		wantDigest bool   // ContainerStatus.ImageRef is the repo digest, else the ID
	}{
		{name: "by tag", pull: "busybox:1.35", wantImage: "docker.io/library/busybox:1.35", wantDigest: true},
		{name: "by digest", pull: "busybox@" + digest, wantDigest: true},
		{name: "image removed", pull: "busybox:1.35", remove: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fake.New()
			ctx := context.Background()
			id, err := f.PullImage(ctx, &runtimeapi.ImageSpec{Image: tt.pull}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			st, _ := f.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: tt.pull}, false)
			img := st.GetImage()
			if !imageIDRE.MatchString(id) || img.GetId() != id || len(img.RepoDigests) != 1 || !repoDigestRE.MatchString(img.RepoDigests[0]) ||
				img.RepoDigests[0] == "docker.io/library/busybox@"+id || img.Spec != nil {
				t.Fatalf("pulled %q, image %v", id, img)
			}
			// As kubelet does: the config names the image by its ID and
			// keeps the name the user wrote.
			cfg := containerCfg("app")
			cfg.Image = &runtimeapi.ImageSpec{Image: id, UserSpecifiedImage: tt.pull}
			cid, err := f.CreateContainer(ctx, sandbox(t, f, "p", false), cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.remove {
				if err := f.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: id}); err != nil {
					t.Fatal(err)
				}
			}
			resp, err := f.ContainerStatus(ctx, cid, false)
			if err != nil {
				t.Fatal(err)
			}
			s := resp.Status
			wantSpec := cfg.Image
			if tt.wantImage != "" {
				wantSpec = &runtimeapi.ImageSpec{Image: tt.wantImage}
			}
			wantRef := id
			if tt.wantDigest {
				wantRef = img.RepoDigests[0]
			}
			if s.Image.String() != wantSpec.String() || s.ImageRef != wantRef || s.ImageId != id {
				t.Errorf("status image %v, ref %q, id %q; want %v, %q, %q", s.Image, s.ImageRef, s.ImageId, wantSpec, wantRef, id)
			}
			list, _ := f.ListContainers(ctx, nil)
			if len(list) != 1 || list[0].Image.String() != cfg.Image.String() || list[0].ImageRef != id || list[0].ImageId != id {
				t.Errorf("listed %v", list)
			}
		})
	}
}

// TestPullByRepoDigest: pulling the repo digest of an image pulled by tag
// finds the same image, as on containerd, where both name one manifest.
func TestPullByRepoDigest(t *testing.T) {
	t.Parallel()
	f := fake.New(fake.WithImages("busybox:1.35"))
	ctx := context.Background()
	st, _ := f.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "busybox:1.35"}, false)
	id, err := f.PullImage(ctx, &runtimeapi.ImageSpec{Image: st.Image.RepoDigests[0]}, nil, nil)
	if err != nil || id != st.Image.Id {
		t.Fatalf("PullImage(repo digest) = %q, %v; want %q", id, err, st.Image.Id)
	}
	if imgs, _ := f.ListImages(ctx, nil); len(imgs) != 1 {
		t.Fatalf("%d images, want 1", len(imgs))
	}
}
