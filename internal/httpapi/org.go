package httpapi

import (
	"context"

	"github.com/tenantd/tenantd/internal/deletion"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
)

// GetMe serves GET /v1/me.
func (h *handlers) GetMe(ctx context.Context, req oapi.GetMeRequestObject) (oapi.GetMeResponseObject, error) {
	id := caller(ctx)
	limit := req.Params.Limit
	if limit == nil {
		limit = ptrTo(page.MaxLimit) // the spec's default here: a page as large as any
	}
	r, next, err := fetchPage(h, "user:"+id.UserID, "getMe", limit, req.Params.Cursor, func(pr page.Request) (page.Result[tenant.OrgMembership], error) {
		return h.Orgs.ListOrgs(ctx, id, pr)
	})
	if err != nil {
		return nil, err
	}
	orgs := mapAll(r.Items, func(m tenant.OrgMembership) oapi.MeOrg {
		return oapi.MeOrg{OrgId: m.OrgID, Name: m.Name, Role: oapi.Role(m.Role), UserName: m.UserName}
	})
	return oapi.GetMe200JSONResponse{Body: oapi.Me{UserId: id.UserID, Orgs: orgs, NextCursor: strPtr(next)},
		Headers: oapi.GetMe200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// ListOrgs serves GET /v1/orgs.
func (h *handlers) ListOrgs(ctx context.Context, req oapi.ListOrgsRequestObject) (oapi.ListOrgsResponseObject, error) {
	id := caller(ctx)
	r, next, err := fetchPage(h, "user:"+id.UserID, "listOrgs", req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[tenant.OrgMembership], error) {
		return h.Orgs.ListOrgs(ctx, id, pr)
	})
	if err != nil {
		return nil, err
	}
	items := mapAll(r.Items, func(m tenant.OrgMembership) oapi.OrgMembership {
		return oapi.OrgMembership{OrgId: m.OrgID, Name: m.Name, Role: oapi.Role(m.Role), JoinedAt: m.JoinedAt}
	})
	return oapi.ListOrgs200JSONResponse{Body: oapi.OrgMembershipList{Items: items, NextCursor: strPtr(next)},
		Headers: oapi.ListOrgs200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// CreateOrg serves POST /v1/orgs.
func (h *handlers) CreateOrg(ctx context.Context, req oapi.CreateOrgRequestObject) (oapi.CreateOrgResponseObject, error) {
	id := caller(ctx)
	org, _, err := h.Orgs.CreateOrg(ctx, id, newResourceID(ctx), req.Body.Name)
	if err != nil {
		return nil, err
	}
	return oapi.CreateOrg201JSONResponse{Body: toOrg(org), Headers: oapi.CreateOrg201ResponseHeaders{ETag: etag(org.Version)}}, nil
}

// GetOrg serves GET /v1/orgs/{orgId}.
func (h *handlers) GetOrg(ctx context.Context, req oapi.GetOrgRequestObject) (oapi.GetOrgResponseObject, error) {
	p, loaded := decided(ctx)
	withUsers := req.Params.Include != nil && *req.Params.Include == oapi.GetOrgParamsIncludeUsers
	org, users, err := h.Orgs.GetOrg(ctx, p, loaded.Org, withUsers)
	if err != nil {
		return nil, err
	}
	out := toOrg(org)
	if withUsers {
		out.Users = ptrTo(mapAll(users, toOrgUser))
	}
	return oapi.GetOrg200JSONResponse{Body: out, Headers: oapi.GetOrg200ResponseHeaders{ETag: etag(org.Version)}}, nil
}

// UpdateOrg serves PATCH /v1/orgs/{orgId}.
func (h *handlers) UpdateOrg(ctx context.Context, req oapi.UpdateOrgRequestObject) (oapi.UpdateOrgResponseObject, error) {
	p, loaded := decided(ctx)
	org, err := h.Orgs.UpdateOrg(ctx, p, loaded.Org, req.Body.Name, ifMatch(req.Params.IfMatch))
	if err != nil {
		return nil, err
	}
	return oapi.UpdateOrg200JSONResponse{Body: toOrg(org), Headers: oapi.UpdateOrg200ResponseHeaders{ETag: etag(org.Version)}}, nil
}

// DeleteOrg serves DELETE /v1/orgs/{orgId}: 204 when the offboarding
// finished within OffboardWait, otherwise 202 with its progress.
func (h *handlers) DeleteOrg(ctx context.Context, req oapi.DeleteOrgRequestObject) (oapi.DeleteOrgResponseObject, error) {
	p, _ := decided(ctx)
	j, done, err := h.Orgs.DeleteOrg(ctx, p, ifMatch(req.Params.IfMatch), h.OffboardWait)
	if err != nil {
		return nil, err
	}
	if done {
		return oapi.DeleteOrg204Response{}, nil
	}
	loc := "/v1/orgs/" + p.OrgID + "/offboarding"
	return oapi.DeleteOrg202JSONResponse{Body: toOffboarding(j), Headers: oapi.DeleteOrg202ResponseHeaders{Location: &loc}}, nil
}

// GetOffboarding serves GET /v1/orgs/{orgId}/offboarding.
func (h *handlers) GetOffboarding(ctx context.Context, _ oapi.GetOffboardingRequestObject) (oapi.GetOffboardingResponseObject, error) {
	p, _ := decided(ctx)
	j, err := h.Orgs.GetOffboarding(ctx, p)
	if err != nil {
		return nil, err
	}
	return oapi.GetOffboarding200JSONResponse(toOffboarding(j)), nil
}

func toOffboarding(j deletion.Job) oapi.Offboarding {
	phase := j.Phase
	if phase == "" {
		phase = "cutoff"
	}
	return oapi.Offboarding{OrgId: j.OrgID, State: oapi.OffboardingStateRunning, Phase: oapi.OffboardingPhase(phase), StartedAt: j.Since, StartedBy: j.By}
}

func toOrg(o tenant.Org) oapi.Org {
	return oapi.Org{Id: o.ID, Name: o.Name, Version: o.Version, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt}
}
