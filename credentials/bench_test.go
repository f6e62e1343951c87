package credentials

import (
	"fmt"
	"testing"
)

// benchConfig has n keys, a quarter of each kind the issue names.
func benchConfig(n int) DockerConfig {
	cfg := DockerConfig{}
	for i := 0; len(cfg) < n; i++ {
		switch i % 4 {
		case 0:
			cfg[fmt.Sprintf("registry%d.example.com", i)] = DockerConfigEntry{Username: "a"}
		case 1:
			cfg[fmt.Sprintf("registry%d.example.com:5000", i)] = DockerConfigEntry{Username: "b"}
		case 2:
			cfg[fmt.Sprintf("*.zone%d.example.net", i)] = DockerConfigEntry{Username: "c"}
		case 3:
			cfg[fmt.Sprintf("quay%d.example.org/team%d", i, i)] = DockerConfigEntry{Username: "d"}
		}
	}
	return cfg
}

var benchImages = []string{
	"registry4.example.com/app/web",
	"registry5.example.com:5000/app/web",
	"host.zone6.example.net/app",
	"quay7.example.org/team7/app",
	"nginx",
	"docker.io/library/nginx:latest",
	"unknown.example.io/app",
}

func BenchmarkLookup(b *testing.B) {
	for _, n := range []int{16, 256, 1024} {
		cfg := benchConfig(n)
		var k BasicKeyring
		k.Add(cfg)
		b.Run(fmt.Sprintf("index/keys=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				k.Lookup(benchImages[i%len(benchImages)])
				i++
			}
		})
		var o oracleKeyring
		o.add(cfg)
		b.Run(fmt.Sprintf("kubelet-linear/keys=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				o.lookup(benchImages[i%len(benchImages)])
				i++
			}
		})
	}
}
