package main

import (
	"testing"

	"k8s.io/client-go/rest"
)

// The API client is kubelet's: QPS 50, burst 100, protobuf
// (--kube-api-content-type's default), JSON accepted as a fallback.
func TestKubeletClientDefaults(t *testing.T) {
	cfg := &rest.Config{}
	setKubeletRateLimits(cfg)
	if cfg.QPS != 50 || cfg.Burst != 100 {
		t.Errorf("QPS %v, burst %d; want kubelet's 50 and 100", cfg.QPS, cfg.Burst)
	}
	if cfg.ContentType != "application/vnd.kubernetes.protobuf" || cfg.AcceptContentTypes != "application/vnd.kubernetes.protobuf,application/json" {
		t.Errorf("content type %q, accept %q; want kubelet's protobuf, JSON accepted", cfg.ContentType, cfg.AcceptContentTypes)
	}
}
