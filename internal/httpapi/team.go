package httpapi

import (
	"context"

	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/optional"
	"github.com/tenantd/tenantd/internal/page"
)

// ListTeams serves GET /v1/orgs/{orgId}/teams.
func (h *handlers) ListTeams(ctx context.Context, req oapi.ListTeamsRequestObject) (oapi.ListTeamsResponseObject, error) {
	p, _ := decided(ctx)
	r, next, err := fetchPage(h, p.OrgID, "listTeams", req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[membership.Team], error) {
		return h.Teams.ListTeams(ctx, p, pr)
	})
	if err != nil {
		return nil, err
	}
	return oapi.ListTeams200JSONResponse{Body: oapi.TeamList{Items: mapAll(r.Items, toTeam), NextCursor: strPtr(next)},
		Headers: oapi.ListTeams200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// CreateTeam serves POST /v1/orgs/{orgId}/teams.
func (h *handlers) CreateTeam(ctx context.Context, req oapi.CreateTeamRequestObject) (oapi.CreateTeamResponseObject, error) {
	p, _ := decided(ctx)
	var desc string
	optional.Set(&desc, req.Body.Description)
	t, err := h.Teams.CreateTeam(ctx, p, newResourceID(ctx), req.Body.Name, desc)
	if err != nil {
		return nil, err
	}
	return oapi.CreateTeam201JSONResponse{Body: toTeam(t), Headers: oapi.CreateTeam201ResponseHeaders{ETag: etag(t.Version)}}, nil
}

// GetTeam serves GET /v1/orgs/{orgId}/teams/{teamId} (AP4 with ?include=members).
func (h *handlers) GetTeam(ctx context.Context, req oapi.GetTeamRequestObject) (oapi.GetTeamResponseObject, error) {
	p, loaded := decided(ctx)
	withMembers := req.Params.Include != nil && *req.Params.Include == oapi.GetTeamParamsIncludeMembers
	t, members, err := h.Teams.GetTeam(ctx, p, req.TeamId, loaded.Team, withMembers)
	if err != nil {
		return nil, err
	}
	out := toTeam(t)
	if withMembers {
		out.Members = ptrTo(mapAll(members, toMembership))
	}
	return oapi.GetTeam200JSONResponse{Body: out, Headers: oapi.GetTeam200ResponseHeaders{ETag: etag(t.Version)}}, nil
}

// UpdateTeam serves PATCH /v1/orgs/{orgId}/teams/{teamId}.
func (h *handlers) UpdateTeam(ctx context.Context, req oapi.UpdateTeamRequestObject) (oapi.UpdateTeamResponseObject, error) {
	p, loaded := decided(ctx)
	patch := membership.Patch{Name: req.Body.Name, Description: req.Body.Description}
	t, err := h.Teams.UpdateTeam(ctx, p, req.TeamId, loaded.Team, patch, ifMatch(req.Params.IfMatch))
	if err != nil {
		return nil, err
	}
	return oapi.UpdateTeam200JSONResponse{Body: toTeam(t), Headers: oapi.UpdateTeam200ResponseHeaders{ETag: etag(t.Version)}}, nil
}

// DeleteTeam serves DELETE /v1/orgs/{orgId}/teams/{teamId}.
func (h *handlers) DeleteTeam(ctx context.Context, req oapi.DeleteTeamRequestObject) (oapi.DeleteTeamResponseObject, error) {
	p, loaded := decided(ctx)
	if err := h.Teams.DeleteTeam(ctx, p, req.TeamId, loaded.Team, ifMatch(req.Params.IfMatch)); err != nil {
		return nil, err
	}
	return oapi.DeleteTeam204Response{}, nil
}

func toTeam(t membership.Team) oapi.Team {
	return oapi.Team{Id: t.ID, Name: t.Name, Description: t.Description, MemberCount: t.MemberCount,
		Version: t.Version, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}
