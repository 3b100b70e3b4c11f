package httpapi

import (
	"context"
	"time"

	"github.com/tenantd/tenantd/internal/apikey"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/optional"
	"github.com/tenantd/tenantd/internal/page"
)

// toApiKey is a key's wire form: never its hash.
func toApiKey(k apikey.Key) oapi.ApiKey {
	return oapi.ApiKey{Id: k.ID, Name: k.Name, Role: oapi.ApiKeyRole(k.Role), CreatedAt: k.CreatedAt, CreatedBy: k.CreatedBy,
		ExpiresAt: optional.Of(k.ExpiresAt), LastUsedAt: optional.Of(k.LastUsedAt.Truncate(time.Minute))}
}

// CreateApiKey serves POST /v1/orgs/{orgId}/api-keys: the one answer that
// shows the key's token.
func (h *handlers) CreateApiKey(ctx context.Context, req oapi.CreateApiKeyRequestObject) (oapi.CreateApiKeyResponseObject, error) {
	p, _ := decided(ctx)
	in := apikey.New{Name: req.Body.Name, Role: authz.Role(req.Body.Role)}
	optional.Set(&in.ExpiresAt, req.Body.ExpiresAt)
	k, token, err := h.APIKeys.CreateApiKey(ctx, p, in)
	if err != nil {
		return nil, err
	}
	w := toApiKey(k)
	return oapi.CreateApiKey201JSONResponse{Id: w.Id, Name: w.Name, Role: oapi.ApiKeyCreatedRole(w.Role), CreatedAt: w.CreatedAt,
		CreatedBy: w.CreatedBy, ExpiresAt: w.ExpiresAt, LastUsedAt: w.LastUsedAt, Secret: token}, nil
}

// ListApiKeys serves GET /v1/orgs/{orgId}/api-keys.
func (h *handlers) ListApiKeys(ctx context.Context, req oapi.ListApiKeysRequestObject) (oapi.ListApiKeysResponseObject, error) {
	p, _ := decided(ctx)
	r, next, err := fetchPage(h, p.OrgID, "listApiKeys", req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[apikey.Key], error) {
		return h.APIKeys.ListApiKeys(ctx, p, pr)
	})
	if err != nil {
		return nil, err
	}
	return oapi.ListApiKeys200JSONResponse{Body: oapi.ApiKeyList{Items: mapAll(r.Items, toApiKey), NextCursor: strPtr(next)},
		Headers: oapi.ListApiKeys200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// GetApiKey serves GET /v1/orgs/{orgId}/api-keys/{keyId}.
func (h *handlers) GetApiKey(ctx context.Context, req oapi.GetApiKeyRequestObject) (oapi.GetApiKeyResponseObject, error) {
	p, loaded := decided(ctx)
	k, err := h.APIKeys.GetApiKey(ctx, p, req.KeyId, loaded.APIKey)
	if err != nil {
		return nil, err
	}
	return oapi.GetApiKey200JSONResponse(toApiKey(k)), nil
}

// RevokeApiKey serves DELETE /v1/orgs/{orgId}/api-keys/{keyId}.
func (h *handlers) RevokeApiKey(ctx context.Context, req oapi.RevokeApiKeyRequestObject) (oapi.RevokeApiKeyResponseObject, error) {
	p, loaded := decided(ctx)
	if err := h.APIKeys.RevokeApiKey(ctx, p, req.KeyId, loaded.APIKey); err != nil {
		return nil, err
	}
	return oapi.RevokeApiKey204Response{}, nil
}
