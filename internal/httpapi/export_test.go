package httpapi

import (
	"crypto/sha256"
	"time"
)

// CachedUntil says until when the verified-token cache trusts raw (tests).
func (v *Verifier) CachedUntil(raw string) (time.Time, bool) {
	v.cache.mu.Lock()
	defer v.cache.mu.Unlock()
	e, ok := v.cache.m[sha256.Sum256([]byte(raw))]
	return e.until, ok
}
