package httpapi

import (
	"context"
	"time"

	"github.com/oapi-codegen/nullable"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/org"
	"github.com/tenantd/tenantd/internal/page"
)

func toInvitation(inv org.Invitation) oapi.Invitation {
	teams := inv.TeamIDs
	if teams == nil {
		teams = []string{}
	}
	return oapi.Invitation{Id: inv.ID, Email: inv.Email, Role: oapi.Role(inv.Role), TeamIds: teams, InvitedBy: inv.InvitedBy,
		CreatedAt: inv.CreatedAt, ExpiresAt: inv.ExpiresAt}
}

// CreateInvitation serves POST /v1/orgs/{orgId}/invitations.
func (h *handlers) CreateInvitation(ctx context.Context, req oapi.CreateInvitationRequestObject) (oapi.CreateInvitationResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	in := org.NewInvitation{Email: req.Body.Email, Role: authz.Role(req.Body.Role)}
	if req.Body.TeamIds != nil {
		in.TeamIDs = *req.Body.TeamIds
	}
	if req.Body.ExpiresInDays != nil {
		in.ExpiresInDays = *req.Body.ExpiresInDays
	}
	inv, token, err := h.Tenants.CreateInvitation(ctx, p, in)
	if err != nil {
		return nil, err
	}
	v := toInvitation(inv)
	return oapi.CreateInvitation201JSONResponse{Id: v.Id, Email: v.Email, Role: v.Role, TeamIds: v.TeamIds,
		InvitedBy: v.InvitedBy, CreatedAt: v.CreatedAt, ExpiresAt: v.ExpiresAt, Token: token}, nil
}

// ListInvitations serves GET /v1/orgs/{orgId}/invitations.
func (h *handlers) ListInvitations(ctx context.Context, req oapi.ListInvitationsRequestObject) (oapi.ListInvitationsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	const listing = "listInvitations"
	r, next, err := fetchPage(h, p.OrgID, listing, req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[org.Invitation], error) {
		return h.Tenants.ListInvitations(ctx, p, pr)
	})
	if err != nil {
		return nil, err
	}
	items := make([]oapi.Invitation, len(r.Items))
	for i, inv := range r.Items {
		items[i] = toInvitation(inv)
	}
	return oapi.ListInvitations200JSONResponse{Body: oapi.InvitationList{Items: items, NextCursor: nextPtr(next)},
		Headers: oapi.ListInvitations200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// RevokeInvitation serves DELETE /v1/orgs/{orgId}/invitations/{invitationId}.
func (h *handlers) RevokeInvitation(ctx context.Context, req oapi.RevokeInvitationRequestObject) (oapi.RevokeInvitationResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := h.Tenants.RevokeInvitation(ctx, p, req.InvitationId); err != nil {
		return nil, err
	}
	return oapi.RevokeInvitation204Response{}, nil
}

// AcceptInvitation serves POST /v1/invitations/{token}/accept.
func (h *handlers) AcceptInvitation(ctx context.Context, req oapi.AcceptInvitationRequestObject) (oapi.AcceptInvitationResponseObject, error) {
	id, err := identity(ctx)
	if err != nil {
		return nil, err
	}
	u, teams, err := h.Tenants.AcceptInvitation(ctx, id, req.Token)
	if err != nil {
		return nil, err
	}
	return oapi.AcceptInvitation201JSONResponse{OrgId: u.OrgID, User: toOrgUser(u), TeamIds: teams}, nil
}

// ListAuditEvents serves GET /v1/orgs/{orgId}/audit-log.
func (h *handlers) ListAuditEvents(ctx context.Context, req oapi.ListAuditEventsRequestObject) (oapi.ListAuditEventsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	var since, until time.Time
	if req.Params.Since != nil {
		since = *req.Params.Since
	}
	if req.Params.Until != nil {
		until = *req.Params.Until
	} else {
		until = h.now()
	}
	// The cursor is bound to the time range, so a page never continues
	// another range's listing.
	listing := "listAuditEvents:" + since.UTC().Format(time.RFC3339Nano) + ":" + until.UTC().Format(time.RFC3339Nano)
	if req.Params.Until == nil {
		listing = "listAuditEvents:" + since.UTC().Format(time.RFC3339Nano) + ":now"
	}
	r, next, err := fetchPage(h, p.OrgID, listing, req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[audit.Event], error) {
		return h.Tenants.ListAuditEvents(ctx, p, since, until, pr)
	})
	if err != nil {
		return nil, err
	}
	items := make([]oapi.AuditEvent, len(r.Items))
	for i, ev := range r.Items {
		items[i] = toAuditEvent(ev)
	}
	return oapi.ListAuditEvents200JSONResponse{Body: oapi.AuditEventList{Items: items, NextCursor: nextPtr(next)},
		Headers: oapi.ListAuditEvents200ResponseHeaders{Link: link(ctx, next)}}, nil
}

func toAuditEvent(ev audit.Event) oapi.AuditEvent {
	out := oapi.AuditEvent{Id: ev.ID, ActorId: ev.ActorID, Action: ev.Action, TargetType: ev.TargetType, TargetId: ev.TargetID,
		RequestId: ev.RequestID, At: ev.At, Changes: make([]oapi.AuditChange, len(ev.Changes))}
	for i, c := range ev.Changes {
		ch := oapi.AuditChange{Field: c.Field}
		if c.Before != nil {
			ch.Before = nullable.NewNullableWithValue[any](c.Before)
		}
		if c.After != nil {
			ch.After = nullable.NewNullableWithValue[any](c.After)
		}
		out.Changes[i] = ch
	}
	if ev.ClientRequestID != "" {
		out.ClientRequestId = &ev.ClientRequestID
	}
	return out
}
