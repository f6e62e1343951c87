package credentials

import (
	"errors"
	"strings"
	"testing"

	"github.com/distribution/reference"
)

// Repository and ParseImageName give what kubelet v1.37.2's
// parsers.ParseImageName gives (its repoToPull, tag and digest).
func TestParseImageName(t *testing.T) {
	t.Parallel()
	sha256 := "sha256:" + strings.Repeat("a", 64)
	sha512 := "sha512:" + strings.Repeat("b", 128)
	tests := []struct {
		name, image string
		want        ImageName
		wantErr     error // a reference sentinel, or errors.New("") for one without
	}{
		{name: "short", image: "nginx", want: ImageName{Repository: "docker.io/library/nginx", Tag: "latest"}},
		{name: "tag", image: "nginx:1.27", want: ImageName{Repository: "docker.io/library/nginx", Tag: "1.27"}},
		{name: "hub user", image: "team/app", want: ImageName{Repository: "docker.io/team/app", Tag: "latest"}},
		{name: "index.docker.io", image: "index.docker.io/library/nginx", want: ImageName{Repository: "docker.io/library/nginx", Tag: "latest"}},
		{name: "localhost", image: "localhost/app", want: ImageName{Repository: "localhost/app", Tag: "latest"}},
		{name: "registry with port, tag and digest", image: "registry:5000/a/b:tag@" + sha256,
			want: ImageName{Repository: "registry:5000/a/b", Tag: "tag", Digest: sha256}},
		{name: "digest only", image: "registry.example.com/app@" + sha256,
			want: ImageName{Repository: "registry.example.com/app", Digest: sha256}},
		{name: "sha512 digest", image: "app@" + sha512, want: ImageName{Repository: "docker.io/library/app", Digest: sha512}},
		{name: "upper-case host", image: "UPPER/case", want: ImageName{Repository: "UPPER/case", Tag: "latest"}},
		{name: "empty", image: "", wantErr: reference.ErrReferenceInvalidFormat},
		{name: "upper case", image: "FAILED_IMAGE", wantErr: errors.New("")},
		{name: "url", image: "http://url", wantErr: reference.ErrReferenceInvalidFormat},
		{name: "64 hex", image: strings.Repeat("a", 64), wantErr: errors.New("")},
		{name: "too long", image: strings.Repeat("a", 300), wantErr: reference.ErrNameTooLong},
		{name: "bad tag", image: "busybox:bad tag", wantErr: reference.ErrReferenceInvalidFormat},
		{name: "bad digest", image: "app@sha256:abc", wantErr: errors.New("")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseImageName(tt.image)
			repo, rerr := Repository(tt.image)
			if tt.wantErr != nil {
				if !errors.Is(err, ErrInvalidImageName) || !errors.Is(rerr, ErrInvalidImageName) {
					t.Fatalf("ParseImageName(%q) error %v, want ErrInvalidImageName", tt.image, err)
				}
				if tt.wantErr.Error() != "" && !errors.Is(err, tt.wantErr) {
					t.Errorf("ParseImageName(%q) error %v, want it to match %v", tt.image, err, tt.wantErr)
				}
				if want := "couldn't parse image name " + `"` + tt.image[:min(len(tt.image), 20)]; !strings.HasPrefix(err.Error(), want) {
					t.Errorf("error %q, want kubelet's text %q...", err, want)
				}
				return
			}
			if err != nil || rerr != nil || got != tt.want || repo != tt.want.Repository {
				t.Errorf("ParseImageName(%q) = %+v, %v; Repository = %q, %v; want %+v", tt.image, got, err, repo, rerr, tt.want)
			}
		})
	}
}

// FuzzRepository: any input either fails with ErrInvalidImageName or
// gives a repository that is its own repository, carries no tag or
// digest, and keeps its repository when a tag or digest is added.
func FuzzRepository(f *testing.F) {
	for _, s := range []string{"nginx", "nginx:1.27", "registry:5000/a/b:tag@sha256:" + strings.Repeat("a", 64),
		"localhost/app", "UPPER/case", "http://url", "", "[::1]:5000/app"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, image string) {
		n, err := ParseImageName(image)
		repo, rerr := Repository(image)
		if (err == nil) != (rerr == nil) || repo != n.Repository {
			t.Fatalf("ParseImageName(%q) = %+v, %v but Repository = %q, %v", image, n, err, repo, rerr)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidImageName) || !strings.HasPrefix(err.Error(), "couldn't parse image name ") {
				t.Fatalf("ParseImageName(%q) error %v", image, err)
			}
			return
		}
		if n.Tag == "" && n.Digest == "" {
			t.Fatalf("ParseImageName(%q) = %+v: neither tag nor digest", image, n)
		}
		again, err := ParseImageName(repo)
		if err != nil || again != (ImageName{Repository: repo, Tag: DefaultTag}) {
			t.Fatalf("ParseImageName(%q) = %+v, %v; want repository %q and the default tag", repo, again, err, repo)
		}
		tagged, err := Repository(repo + ":v1")
		if err != nil || tagged != repo {
			t.Fatalf("Repository(%q) = %q, %v; want %q", repo+":v1", tagged, err, repo)
		}
	})
}
