package httpapi

import (
	"context"
	"crypto/sha256"
	"time"

	"github.com/tenantd/tenantd/internal/authz"
)

// CachedUntil says until when the verified-token cache trusts raw (tests).
func (v *Verifier) CachedUntil(raw string) (time.Time, bool) {
	v.cache.mu.Lock()
	defer v.cache.mu.Unlock()
	e, ok := v.cache.m[sha256.Sum256([]byte(raw))]
	return e.until, ok
}

// AwaitPrincipal is what a handler does to learn its caller: the principal
// AuthorizeOrg decided, waiting for it when it is pending (tests and
// benchmarks).
func AwaitPrincipal(ctx context.Context) (authz.Principal, error) { return principal(ctx) }

// RecentMembers is AuthorizeOrg's set of callers let in lately (tests).
type RecentMembers = recentMembers

// NewRecentMembers, Saw, Forget, Recent and Len expose it (tests).
func NewRecentMembers(max int, ttl time.Duration) *RecentMembers { return newRecentMembers(max, ttl) }
func (m *recentMembers) Saw(org, user string)                    { m.saw(org, user) }
func (m *recentMembers) Forget(org, user string)                 { m.forget(org, user) }
func (m *recentMembers) Recent(org, user string) bool            { return m.recent(org, user) }
func (m *recentMembers) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.cur) + len(m.prev)
}
