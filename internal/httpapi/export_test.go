package httpapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"time"

	"github.com/tenantd/tenantd/internal/access"
	"github.com/tenantd/tenantd/internal/authz"
)

// CachedUntil says until when the verified-token cache trusts raw (tests).
func (v *Verifier) CachedUntil(raw string) (time.Time, bool) {
	e, ok := v.cache.Peek(sha256.Sum256([]byte(raw)))
	return e.until, ok
}

// Decided is what a handler does to learn its caller: the principal
// AuthorizeOrg decided (tests and benchmarks).
func Decided(ctx context.Context) (authz.Principal, error) {
	d, ok := access.Decided(ctx)
	if !ok {
		return authz.Principal{}, errors.New("no decision")
	}
	return d.Principal, nil
}

// ForgetTokens empties the verified-token cache (benchmarks of the
// uncached path).
func (v *Verifier) ForgetTokens() {
	v.cache.Purge()
}
