package httpapi

import (
	"context"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/invitation"
	"github.com/tenantd/tenantd/internal/optional"
	"github.com/tenantd/tenantd/internal/page"
)

func toInvitation(inv invitation.Invitation) oapi.Invitation {
	return oapi.Invitation{Id: inv.ID, Email: inv.Email, Role: oapi.Role(inv.Role), TeamIds: teamIDs(inv.TeamIDs), InvitedBy: inv.InvitedBy,
		CreatedAt: inv.CreatedAt, ExpiresAt: inv.ExpiresAt}
}

// teamIDs is a list of team IDs as the contract has it: an array, never
// null (none stored is none joined).
func teamIDs(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}

// CreateInvitation serves POST /v1/orgs/{orgId}/invitations.
func (h *handlers) CreateInvitation(ctx context.Context, req oapi.CreateInvitationRequestObject) (oapi.CreateInvitationResponseObject, error) {
	p, _ := decided(ctx)
	in := invitation.New{Email: req.Body.Email, Role: authz.Role(req.Body.Role)}
	optional.Set(&in.TeamIDs, req.Body.TeamIds)
	optional.Set(&in.ExpiresInDays, req.Body.ExpiresInDays)
	inv, token, replaced, err := h.Invitations.CreateInvitation(ctx, p, in)
	if err != nil {
		return nil, err
	}
	v := toInvitation(inv)
	return oapi.CreateInvitation201JSONResponse{Id: v.Id, Email: v.Email, Role: v.Role, TeamIds: v.TeamIds,
		InvitedBy: v.InvitedBy, CreatedAt: v.CreatedAt, ExpiresAt: v.ExpiresAt, Token: token, ReplacedInvitationId: strPtr(replaced)}, nil
}

// ListInvitations serves GET /v1/orgs/{orgId}/invitations.
func (h *handlers) ListInvitations(ctx context.Context, req oapi.ListInvitationsRequestObject) (oapi.ListInvitationsResponseObject, error) {
	p, _ := decided(ctx)
	r, next, err := fetchPage(h, p.OrgID, "listInvitations", req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[invitation.Invitation], error) {
		return h.Invitations.ListInvitations(ctx, p, pr)
	})
	if err != nil {
		return nil, err
	}
	return oapi.ListInvitations200JSONResponse{Body: oapi.InvitationList{Items: mapAll(r.Items, toInvitation), NextCursor: strPtr(next)},
		Headers: oapi.ListInvitations200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// RevokeInvitation serves DELETE /v1/orgs/{orgId}/invitations/{invitationId}.
func (h *handlers) RevokeInvitation(ctx context.Context, req oapi.RevokeInvitationRequestObject) (oapi.RevokeInvitationResponseObject, error) {
	p, _ := decided(ctx)
	if err := h.Invitations.RevokeInvitation(ctx, p, req.InvitationId); err != nil {
		return nil, err
	}
	return oapi.RevokeInvitation204Response{}, nil
}

// AcceptInvitation serves POST /v1/invitations/{token}/accept.
func (h *handlers) AcceptInvitation(ctx context.Context, req oapi.AcceptInvitationRequestObject) (oapi.AcceptInvitationResponseObject, error) {
	id := caller(ctx)
	u, teams, again, err := h.Invitations.AcceptInvitation(ctx, id, req.Token)
	if err != nil {
		return nil, err
	}
	if again {
		return oapi.AcceptInvitation200JSONResponse{OrgId: u.OrgID, User: toOrgUser(u), TeamIds: teamIDs(teams)}, nil
	}
	return oapi.AcceptInvitation201JSONResponse{OrgId: u.OrgID, User: toOrgUser(u), TeamIds: teamIDs(teams)}, nil
}
