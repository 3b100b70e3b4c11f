package httpapi

import (
	"context"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
)

// ListTeamMembers serves GET /v1/orgs/{orgId}/teams/{teamId}/members (AP1).
func (h *handlers) ListTeamMembers(ctx context.Context, req oapi.ListTeamMembersRequestObject) (oapi.ListTeamMembersResponseObject, error) {
	p, _ := decided(ctx)
	withUsers := req.Params.Expand != nil && *req.Params.Expand == oapi.ListTeamMembersParamsExpandUser
	r, next, err := fetchPage(h, p.OrgID, "listTeamMembers:"+req.TeamId, req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[membership.Membership], error) {
		return h.Teams.ListTeamMembers(ctx, p, req.TeamId, withUsers, pr)
	})
	if err != nil {
		return nil, err
	}
	return oapi.ListTeamMembers200JSONResponse{Body: oapi.MembershipList{Items: mapAll(r.Items, toMembership), NextCursor: strPtr(next)},
		Headers: oapi.ListTeamMembers200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// GetTeamMember serves GET /v1/orgs/{orgId}/teams/{teamId}/members/{userId} (AP3).
func (h *handlers) GetTeamMember(ctx context.Context, req oapi.GetTeamMemberRequestObject) (oapi.GetTeamMemberResponseObject, error) {
	p, loaded := decided(ctx)
	m, err := h.Teams.GetTeamMember(ctx, p, req.TeamId, req.UserId, loaded.Member)
	if err != nil {
		return nil, err
	}
	return oapi.GetTeamMember200JSONResponse{Body: toMembership(m), Headers: oapi.GetTeamMember200ResponseHeaders{ETag: etag(m.Version)}}, nil
}

// PutTeamMember serves PUT /v1/orgs/{orgId}/teams/{teamId}/members/{userId}.
func (h *handlers) PutTeamMember(ctx context.Context, req oapi.PutTeamMemberRequestObject) (oapi.PutTeamMemberResponseObject, error) {
	p, loaded := decided(ctx)
	m, created, err := h.Teams.PutTeamMember(ctx, p, req.TeamId, req.UserId, loaded.Member, authz.Role(req.Body.Role), ifMatch(req.Params.IfMatch))
	if err != nil {
		return nil, err
	}
	if created {
		return oapi.PutTeamMember201JSONResponse{Body: toMembership(m), Headers: oapi.PutTeamMember201ResponseHeaders{ETag: etag(m.Version)}}, nil
	}
	return oapi.PutTeamMember200JSONResponse{Body: toMembership(m), Headers: oapi.PutTeamMember200ResponseHeaders{ETag: etag(m.Version)}}, nil
}

// RemoveTeamMember serves DELETE /v1/orgs/{orgId}/teams/{teamId}/members/{userId} (AP5).
func (h *handlers) RemoveTeamMember(ctx context.Context, req oapi.RemoveTeamMemberRequestObject) (oapi.RemoveTeamMemberResponseObject, error) {
	p, loaded := decided(ctx)
	if err := h.Teams.RemoveTeamMember(ctx, p, req.TeamId, req.UserId, loaded.Member, ifMatch(req.Params.IfMatch)); err != nil {
		return nil, err
	}
	return oapi.RemoveTeamMember204Response{}, nil
}

// ListUserTeams serves GET /v1/orgs/{orgId}/users/{userId}/teams (AP2).
func (h *handlers) ListUserTeams(ctx context.Context, req oapi.ListUserTeamsRequestObject) (oapi.ListUserTeamsResponseObject, error) {
	p, _ := decided(ctx)
	withNames := req.Params.Expand != nil && *req.Params.Expand == oapi.ListUserTeamsParamsExpandTeam
	r, next, err := fetchPage(h, p.OrgID, "listUserTeams:"+req.UserId, req.Params.Limit, req.Params.Cursor,
		func(pr page.Request) (page.Result[membership.Membership], error) {
			return h.Teams.ListUserTeams(ctx, p, req.UserId, withNames, pr)
		})
	if err != nil {
		return nil, err
	}
	return oapi.ListUserTeams200JSONResponse{Body: oapi.MembershipList{Items: mapAll(r.Items, toMembership), NextCursor: strPtr(next)},
		Headers: oapi.ListUserTeams200ResponseHeaders{Link: link(ctx, next)}}, nil
}

func toMembership(m membership.Membership) oapi.Membership {
	return oapi.Membership{TeamId: m.TeamID, UserId: m.UserID, Role: oapi.Role(m.Role), JoinedAt: m.JoinedAt, TeamName: strPtr(m.TeamName),
		User: orgUserPtr(m.User)}
}
