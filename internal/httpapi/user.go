package httpapi

import (
	"context"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
)

// ListOrgUsers serves GET /v1/orgs/{orgId}/users.
func (h *handlers) ListOrgUsers(ctx context.Context, req oapi.ListOrgUsersRequestObject) (oapi.ListOrgUsersResponseObject, error) {
	p, _ := decided(ctx)
	r, next, err := fetchPage(h, p.OrgID, "listOrgUsers", req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[tenant.User], error) {
		return h.Orgs.ListOrgUsers(ctx, p, pr)
	})
	if err != nil {
		return nil, err
	}
	return oapi.ListOrgUsers200JSONResponse{Body: oapi.OrgUserList{Items: mapAll(r.Items, toOrgUser), NextCursor: strPtr(next)},
		Headers: oapi.ListOrgUsers200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// AddOrgUser serves POST /v1/orgs/{orgId}/users.
func (h *handlers) AddOrgUser(ctx context.Context, req oapi.AddOrgUserRequestObject) (oapi.AddOrgUserResponseObject, error) {
	p, _ := decided(ctx)
	b := req.Body
	u, err := h.Orgs.AddOrgUser(ctx, p, tenant.NewUser{UserID: b.UserId, Email: b.Email, Name: b.Name, Role: authz.Role(b.Role),
		ResourceID: newResourceID(ctx)})
	if err != nil {
		return nil, err
	}
	return oapi.AddOrgUser201JSONResponse{Body: toOrgUser(u), Headers: oapi.AddOrgUser201ResponseHeaders{ETag: etag(u.Version)}}, nil
}

// GetOrgUser serves GET /v1/orgs/{orgId}/users/{userId}.
func (h *handlers) GetOrgUser(ctx context.Context, req oapi.GetOrgUserRequestObject) (oapi.GetOrgUserResponseObject, error) {
	p, loaded := decided(ctx)
	u, err := h.Orgs.GetOrgUser(ctx, p, req.UserId, loaded.User)
	if err != nil {
		return nil, err
	}
	return oapi.GetOrgUser200JSONResponse{Body: toOrgUser(u), Headers: oapi.GetOrgUser200ResponseHeaders{ETag: etag(u.Version)}}, nil
}

// UpdateOrgUser serves PATCH /v1/orgs/{orgId}/users/{userId}.
func (h *handlers) UpdateOrgUser(ctx context.Context, req oapi.UpdateOrgUserRequestObject) (oapi.UpdateOrgUserResponseObject, error) {
	p, loaded := decided(ctx)
	patch := tenant.UserPatch{Name: req.Body.Name, Email: req.Body.Email, Role: enum[authz.Role](req.Body.Role)}
	u, err := h.Orgs.UpdateOrgUser(ctx, p, req.UserId, loaded.User, patch, ifMatch(req.Params.IfMatch))
	if err != nil {
		return nil, err
	}
	return oapi.UpdateOrgUser200JSONResponse{Body: toOrgUser(u), Headers: oapi.UpdateOrgUser200ResponseHeaders{ETag: etag(u.Version)}}, nil
}

// RemoveOrgUser serves DELETE /v1/orgs/{orgId}/users/{userId}.
func (h *handlers) RemoveOrgUser(ctx context.Context, req oapi.RemoveOrgUserRequestObject) (oapi.RemoveOrgUserResponseObject, error) {
	p, loaded := decided(ctx)
	if err := h.Orgs.RemoveOrgUser(ctx, p, req.UserId, loaded.User, ifMatch(req.Params.IfMatch)); err != nil {
		return nil, err
	}
	return oapi.RemoveOrgUser204Response{}, nil
}

func toOrgUser(u tenant.User) oapi.OrgUser {
	return oapi.OrgUser{UserId: u.UserID, Email: u.Email, Name: u.Name, Role: oapi.Role(u.Role), JoinedAt: u.JoinedAt, Version: u.Version}
}
