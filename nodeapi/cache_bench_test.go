package nodeapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkTokenCacheMiss: a miss (a new token's answer put) on a full
// cache, the case that scanned all maxCached entries under the lock.
func BenchmarkTokenCacheMiss(b *testing.B) {
	var c ttlCache[tokenAnswer]
	now := time.Unix(0, 0)
	keys := make([]string, maxCached+1<<16)
	for i := range keys {
		keys[i] = fmt.Sprintf("%064x", i)
	}
	for i := range maxCached {
		c.put(keys[i], tokenAnswer{}, now, now.Add(DefaultWebhookCacheTTL))
	}
	b.ReportAllocs()
	i := maxCached
	for b.Loop() {
		if _, hit := c.get(keys[i%len(keys)], now); !hit {
			c.put(keys[i%len(keys)], tokenAnswer{}, now, now.Add(DefaultWebhookCacheTTL))
		}
		i++
	}
}

// BenchmarkTokensDistinct: Authenticate with ever new tokens once the
// cache is full (the 20,000 distinct tokens).
func BenchmarkTokensDistinct(b *testing.B) {
	rv := &reviewer{tokens: map[string]string{}}
	tok := NewTokens(rv, 0)
	reqs := make([]*http.Request, 20000)
	for i := range reqs {
		reqs[i] = httptest.NewRequest(http.MethodGet, "/pods", nil)
		reqs[i].Header.Set("Authorization", fmt.Sprintf("Bearer token-%d", i))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, _, err := tok.Authenticate(reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
