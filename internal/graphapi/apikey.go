package graphapi

import (
	"context"
	"time"

	"github.com/tenantd/tenantd/internal/apikey"
	"github.com/tenantd/tenantd/internal/optional"
	"github.com/tenantd/tenantd/internal/page"
)

// ApiKey is one of the org's API keys, never its secret or hash: the
// schema has no field for them.
type ApiKey struct{ apikey.Key }

// ExpiresAt is expiresAt: null for a key that works until revoked.
func (k ApiKey) ExpiresAt() *time.Time { return optional.Of(k.Key.ExpiresAt) }

// LastUsedAt is lastUsedAt, to the minute: null for a key never used.
func (k ApiKey) LastUsedAt() *time.Time { return optional.Of(k.Key.LastUsedAt.Truncate(time.Minute)) }

// APIKeys resolves Org.apiKeys (GET /v1/orgs/{orgId}/api-keys).
func (r orgResolver) APIKeys(ctx context.Context, obj *Org, first *int, after *string) (*ApiKeyConnection, error) {
	return connection(ctx, obj.p.OrgID, "listApiKeys", first, after,
		func(pr page.Request) (page.Result[apikey.Key], error) {
			return r.s.d.APIKeys.ListApiKeys(ctx, obj.p, pr)
		},
		func(k apikey.Key) *ApiKey { return &ApiKey{Key: k} })
}
