package pullrecords

import (
	"context"
	"fmt"
	"testing"
)

// As kubelet's BenchmarkPullManagerMustAttemptImagePull{True,False} and
// BenchmarkPullManagerWriteImagePullIntent, on a directory and in memory.
func BenchmarkMustAttemptImagePull(b *testing.B) {
	ctx := context.Background()
	for _, where := range []string{"dir", "memory"} {
		for _, hit := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/hit=%v", where, hit), func(b *testing.B) {
				cfg := Config{}
				if where == "dir" {
					cfg.Dir = b.TempDir()
				}
				m, err := New(ctx, cfg, nil)
				if err != nil {
					b.Fatal(err)
				}
				const n = 100
				for i := range n {
					img := fmt.Sprintf("registry.example.com/team/app%d:1", i)
					_ = m.RecordPullIntent(img)
					_ = m.RecordImagePulled(ctx, img, fmt.Sprintf("sha256:%064d", i), &Credentials{KubernetesSecrets: secret("uid", "ns", "s", "hash")})
				}
				pod := secret("uid", "ns", "s", "hash")
				if !hit {
					pod = secret("other", "ns", "other", "other")
				}
				creds := func() ([]Secret, *ServiceAccount, error) { return pod, nil, nil }
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					must, _ := m.MustAttemptImagePull(ctx, fmt.Sprintf("registry.example.com/team/app%d:1", i%n), fmt.Sprintf("sha256:%064d", i%n), creds)
					if must == hit {
						b.Fatalf("must = %v", must)
					}
				}
			})
		}
	}
}

func BenchmarkRecordPullIntent(b *testing.B) {
	ctx := context.Background()
	m, err := New(ctx, Config{Dir: b.TempDir()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = m.RecordPullIntent("registry.example.com/team/app:1")
		m.RecordImagePullFailed(ctx, "registry.example.com/team/app:1")
	}
}
