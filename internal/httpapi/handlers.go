package httpapi

import (
	"bytes"
	"context"
	"time"

	"github.com/tenantd/tenantd"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/clock"
	"github.com/tenantd/tenantd/internal/deletion"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/org"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/team"
	"github.com/tenantd/tenantd/internal/ticket"
)

// handlers implements the generated strict server: decode (done by the
// generated code and the validator), call a service, encode.
type handlers struct {
	Deps
	cursors cursors
}

func (h *handlers) now() time.Time { return clock.Or(h.Now)() }

var _ oapi.StrictServerInterface = (*handlers)(nil)

var errNoPrincipal = errs.E(errs.Internal, "no_principal", "route has no org principal")

func principal(ctx context.Context) (authz.Principal, error) {
	p, ok := PrincipalFrom(ctx)
	if !ok {
		return p, errNoPrincipal
	}
	return p, nil
}

func identity(ctx context.Context) (authz.Identity, error) {
	id, ok := IdentityFrom(ctx)
	if !ok {
		return id, errs.E(errs.Unauthenticated, "invalid_token", "missing bearer token")
	}
	return id, nil
}

// fetchPage runs one page of a listing: it opens the request's cursor
// (bound to scope and listing), fetches the page, and signs the cursor of
// the next one ("" on the last page).
func fetchPage[T any](h *handlers, scope, listing string, limit *int, cursor *string,
	fetch func(page.Request) (page.Result[T], error)) (page.Result[T], string, error) {
	pr, err := h.pageIn(scope, listing, limit, cursor)
	if err != nil {
		return page.Result[T]{}, "", err
	}
	r, err := fetch(pr)
	if err != nil {
		return page.Result[T]{}, "", err
	}
	return r, h.cursors.encode(scope, listing, r.Next), nil
}

// pageIn decodes a list request's cursor for the listing.
func (h *handlers) pageIn(scope, listing string, limit *int, cursor *string) (page.Request, error) {
	p := pageReq(limit, cursor)
	key, err := h.cursors.decode(scope, listing, p.After)
	p.After = key
	return p, err
}

// GetHealth serves GET /healthz: liveness only, no dependencies.
func (h *handlers) GetHealth(ctx context.Context, _ oapi.GetHealthRequestObject) (oapi.GetHealthResponseObject, error) {
	return oapi.GetHealth200JSONResponse{Status: oapi.HealthStatusOk}, nil
}

// GetReady serves GET /readyz: DynamoDB reachable and not shutting down.
func (h *handlers) GetReady(ctx context.Context, _ oapi.GetReadyRequestObject) (oapi.GetReadyResponseObject, error) {
	if h.Ready != nil {
		if err := h.Ready(ctx); err != nil {
			return nil, &errs.Error{Kind: errs.Unavailable, Code: "not_ready", Message: "the service is not ready for traffic", Err: err}
		}
	}
	return oapi.GetReady200JSONResponse{Status: oapi.HealthStatusOk}, nil
}

// GetOpenAPI serves GET /openapi.yaml: the contract the server was built from.
func (h *handlers) GetOpenAPI(ctx context.Context, _ oapi.GetOpenAPIRequestObject) (oapi.GetOpenAPIResponseObject, error) {
	return oapi.GetOpenAPI200ApplicationyamlResponse{Body: bytes.NewReader(tenantd.OpenAPISpec), ContentLength: int64(len(tenantd.OpenAPISpec))}, nil
}

// GetMe serves GET /v1/me.
func (h *handlers) GetMe(ctx context.Context, _ oapi.GetMeRequestObject) (oapi.GetMeResponseObject, error) {
	id, err := identity(ctx)
	if err != nil {
		return nil, err
	}
	r, err := h.Tenants.ListMyOrgs(ctx, id, page.Request{Limit: page.MaxLimit})
	if err != nil {
		return nil, err
	}
	me := oapi.Me{UserId: id.UserID, Orgs: make([]oapi.MeOrg, len(r.Items))}
	for i, m := range r.Items {
		me.Orgs[i] = oapi.MeOrg{OrgId: m.OrgID, Name: m.Name, Role: oapi.Role(m.Role)}
	}
	return oapi.GetMe200JSONResponse(me), nil
}

// ListOrgs serves GET /v1/orgs.
func (h *handlers) ListOrgs(ctx context.Context, req oapi.ListOrgsRequestObject) (oapi.ListOrgsResponseObject, error) {
	id, err := identity(ctx)
	if err != nil {
		return nil, err
	}
	scope := "user:" + id.UserID
	r, next, err := fetchPage(h, scope, "listOrgs", req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[org.Membership], error) {
		return h.Tenants.ListMyOrgs(ctx, id, pr)
	})
	if err != nil {
		return nil, err
	}
	items := make([]oapi.OrgMembership, len(r.Items))
	for i, m := range r.Items {
		items[i] = oapi.OrgMembership{OrgId: m.OrgID, Name: m.Name, Role: oapi.Role(m.Role), JoinedAt: m.JoinedAt}
	}
	return oapi.ListOrgs200JSONResponse{Body: oapi.OrgMembershipList{Items: items, NextCursor: nextPtr(next)},
		Headers: oapi.ListOrgs200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// CreateOrg serves POST /v1/orgs.
func (h *handlers) CreateOrg(ctx context.Context, req oapi.CreateOrgRequestObject) (oapi.CreateOrgResponseObject, error) {
	id, err := identity(ctx)
	if err != nil {
		return nil, err
	}
	org, _, err := h.Tenants.CreateOrg(ctx, id, newResourceID(ctx), req.Body.Name)
	if err != nil {
		return nil, err
	}
	return oapi.CreateOrg201JSONResponse{Body: toOrg(org), Headers: oapi.CreateOrg201ResponseHeaders{ETag: etag(org.Version)}}, nil
}

// GetOrg serves GET /v1/orgs/{orgId}.
func (h *handlers) GetOrg(ctx context.Context, req oapi.GetOrgRequestObject) (oapi.GetOrgResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	withUsers := req.Params.Include != nil && *req.Params.Include == oapi.GetOrgParamsIncludeUsers
	org, users, err := h.Tenants.GetOrg(ctx, p, withUsers)
	if err != nil {
		return nil, err
	}
	out := toOrg(org)
	if withUsers {
		us := toOrgUsers(users)
		out.Users = &us
	}
	return oapi.GetOrg200JSONResponse{Body: out, Headers: oapi.GetOrg200ResponseHeaders{ETag: etag(org.Version)}}, nil
}

// UpdateOrg serves PATCH /v1/orgs/{orgId}.
func (h *handlers) UpdateOrg(ctx context.Context, req oapi.UpdateOrgRequestObject) (oapi.UpdateOrgResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	v, err := ifMatch(req.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	org, err := h.Tenants.RenameOrg(ctx, p, req.Body.Name, v)
	if err != nil {
		return nil, err
	}
	return oapi.UpdateOrg200JSONResponse{Body: toOrg(org), Headers: oapi.UpdateOrg200ResponseHeaders{ETag: etag(org.Version)}}, nil
}

// DeleteOrg serves DELETE /v1/orgs/{orgId}: 204 when the offboarding
// finished within OffboardWait, otherwise 202 with its progress.
func (h *handlers) DeleteOrg(ctx context.Context, req oapi.DeleteOrgRequestObject) (oapi.DeleteOrgResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	v, err := ifMatch(req.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	j, done, err := h.Tenants.DeleteOrg(ctx, p, v, h.OffboardWait)
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
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	j, err := h.Tenants.GetOffboarding(ctx, p)
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

// ListOrgUsers serves GET /v1/orgs/{orgId}/users.
func (h *handlers) ListOrgUsers(ctx context.Context, req oapi.ListOrgUsersRequestObject) (oapi.ListOrgUsersResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	const listing = "listOrgUsers"
	r, next, err := fetchPage(h, p.OrgID, listing, req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[org.User], error) {
		return h.Tenants.ListUsers(ctx, p, pr)
	})
	if err != nil {
		return nil, err
	}
	return oapi.ListOrgUsers200JSONResponse{Body: oapi.OrgUserList{Items: toOrgUsers(r.Items), NextCursor: nextPtr(next)},
		Headers: oapi.ListOrgUsers200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// AddOrgUser serves POST /v1/orgs/{orgId}/users.
func (h *handlers) AddOrgUser(ctx context.Context, req oapi.AddOrgUserRequestObject) (oapi.AddOrgUserResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	u, err := h.Tenants.AddUser(ctx, p, org.NewUser{UserID: b.UserId, Email: b.Email, Name: b.Name, Role: roleOf(b.Role)})
	if err != nil {
		return nil, err
	}
	return oapi.AddOrgUser201JSONResponse{Body: toOrgUser(u), Headers: oapi.AddOrgUser201ResponseHeaders{ETag: etag(u.Version)}}, nil
}

// GetOrgUser serves GET /v1/orgs/{orgId}/users/{userId}.
func (h *handlers) GetOrgUser(ctx context.Context, req oapi.GetOrgUserRequestObject) (oapi.GetOrgUserResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	u, err := h.Tenants.GetUser(ctx, p, req.UserId)
	if err != nil {
		return nil, err
	}
	return oapi.GetOrgUser200JSONResponse{Body: toOrgUser(u), Headers: oapi.GetOrgUser200ResponseHeaders{ETag: etag(u.Version)}}, nil
}

// UpdateOrgUser serves PATCH /v1/orgs/{orgId}/users/{userId}.
func (h *handlers) UpdateOrgUser(ctx context.Context, req oapi.UpdateOrgUserRequestObject) (oapi.UpdateOrgUserResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	v, err := ifMatch(req.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	patch := org.UserPatch{Name: req.Body.Name, Email: req.Body.Email}
	if req.Body.Role != nil {
		r := roleOf(*req.Body.Role)
		patch.Role = &r
	}
	u, err := h.Tenants.UpdateUser(ctx, p, req.UserId, patch, v)
	if err != nil {
		return nil, err
	}
	return oapi.UpdateOrgUser200JSONResponse{Body: toOrgUser(u), Headers: oapi.UpdateOrgUser200ResponseHeaders{ETag: etag(u.Version)}}, nil
}

// RemoveOrgUser serves DELETE /v1/orgs/{orgId}/users/{userId}.
func (h *handlers) RemoveOrgUser(ctx context.Context, req oapi.RemoveOrgUserRequestObject) (oapi.RemoveOrgUserResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	v, err := ifMatch(req.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	if err := h.Tenants.RemoveUser(ctx, p, req.UserId, v); err != nil {
		return nil, err
	}
	return oapi.RemoveOrgUser204Response{}, nil
}

// ListUserTeams serves GET /v1/orgs/{orgId}/users/{userId}/teams (AP2).
func (h *handlers) ListUserTeams(ctx context.Context, req oapi.ListUserTeamsRequestObject) (oapi.ListUserTeamsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	withNames := req.Params.Expand != nil && *req.Params.Expand == oapi.ListUserTeamsParamsExpandTeam
	r, next, err := fetchPage(h, p.OrgID, "listUserTeams:"+req.UserId, req.Params.Limit, req.Params.Cursor,
		func(pr page.Request) (page.Result[team.Member], error) {
			return h.Teams.ListUserTeams(ctx, p, req.UserId, withNames, pr)
		})
	if err != nil {
		return nil, err
	}
	return oapi.ListUserTeams200JSONResponse{Body: oapi.MembershipList{Items: toMemberships(r.Items), NextCursor: nextPtr(next)},
		Headers: oapi.ListUserTeams200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// ListUserTickets serves GET /v1/orgs/{orgId}/users/{userId}/tickets.
func (h *handlers) ListUserTickets(ctx context.Context, req oapi.ListUserTicketsRequestObject) (oapi.ListUserTicketsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	listing := "listUserTickets:" + req.UserId
	pr, err := h.pageIn(p.OrgID, listing, req.Params.Limit, req.Params.Cursor)
	if err != nil {
		return nil, err
	}
	withUser := req.Params.Include != nil && *req.Params.Include == oapi.ListUserTicketsParamsIncludeUser
	r, user, err := h.Tickets.ListRequested(ctx, p, req.UserId, withUser, pr)
	if err != nil {
		return nil, err
	}
	next := h.cursors.encode(p.OrgID, listing, r.Next)
	body, err := h.ticketList(ctx, p, r, next, req.Params.Expand)
	if err != nil {
		return nil, err
	}
	if user != nil {
		u := toOrgUser(*user)
		body.User = &u
	}
	return oapi.ListUserTickets200JSONResponse{Body: body, Headers: oapi.ListUserTickets200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// ListAssignedTickets serves GET /v1/orgs/{orgId}/users/{userId}/assigned-tickets.
func (h *handlers) ListAssignedTickets(ctx context.Context, req oapi.ListAssignedTicketsRequestObject) (oapi.ListAssignedTicketsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	listing := "listAssignedTickets:" + req.UserId
	r, next, err := fetchPage(h, p.OrgID, listing, req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[ticket.Ticket], error) {
		return h.Tickets.ListAssigned(ctx, p, req.UserId, pr)
	})
	if err != nil {
		return nil, err
	}
	body, err := h.ticketList(ctx, p, r, next, req.Params.Expand)
	if err != nil {
		return nil, err
	}
	return oapi.ListAssignedTickets200JSONResponse{Body: body, Headers: oapi.ListAssignedTickets200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// ListTeams serves GET /v1/orgs/{orgId}/teams.
func (h *handlers) ListTeams(ctx context.Context, req oapi.ListTeamsRequestObject) (oapi.ListTeamsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	const listing = "listTeams"
	r, next, err := fetchPage(h, p.OrgID, listing, req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[team.Team], error) {
		return h.Teams.ListTeams(ctx, p, pr)
	})
	if err != nil {
		return nil, err
	}
	items := make([]oapi.Team, len(r.Items))
	for i, t := range r.Items {
		items[i] = toTeam(t)
	}
	return oapi.ListTeams200JSONResponse{Body: oapi.TeamList{Items: items, NextCursor: nextPtr(next)},
		Headers: oapi.ListTeams200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// CreateTeam serves POST /v1/orgs/{orgId}/teams.
func (h *handlers) CreateTeam(ctx context.Context, req oapi.CreateTeamRequestObject) (oapi.CreateTeamResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	desc := ""
	if req.Body.Description != nil {
		desc = *req.Body.Description
	}
	t, err := h.Teams.CreateTeam(ctx, p, newResourceID(ctx), req.Body.Name, desc)
	if err != nil {
		return nil, err
	}
	return oapi.CreateTeam201JSONResponse{Body: toTeam(t), Headers: oapi.CreateTeam201ResponseHeaders{ETag: etag(t.Version)}}, nil
}

// GetTeam serves GET /v1/orgs/{orgId}/teams/{teamId} (AP4 with ?include=members).
func (h *handlers) GetTeam(ctx context.Context, req oapi.GetTeamRequestObject) (oapi.GetTeamResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	withMembers := req.Params.Include != nil && *req.Params.Include == oapi.GetTeamParamsIncludeMembers
	t, members, err := h.Teams.GetTeam(ctx, p, req.TeamId, withMembers)
	if err != nil {
		return nil, err
	}
	out := toTeam(t)
	if withMembers {
		ms := toMemberships(members)
		out.Members = &ms
	}
	return oapi.GetTeam200JSONResponse{Body: out, Headers: oapi.GetTeam200ResponseHeaders{ETag: etag(t.Version)}}, nil
}

// UpdateTeam serves PATCH /v1/orgs/{orgId}/teams/{teamId}.
func (h *handlers) UpdateTeam(ctx context.Context, req oapi.UpdateTeamRequestObject) (oapi.UpdateTeamResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	v, err := ifMatch(req.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	t, err := h.Teams.UpdateTeam(ctx, p, req.TeamId, team.TeamPatch{Name: req.Body.Name, Description: req.Body.Description}, v)
	if err != nil {
		return nil, err
	}
	return oapi.UpdateTeam200JSONResponse{Body: toTeam(t), Headers: oapi.UpdateTeam200ResponseHeaders{ETag: etag(t.Version)}}, nil
}

// DeleteTeam serves DELETE /v1/orgs/{orgId}/teams/{teamId}.
func (h *handlers) DeleteTeam(ctx context.Context, req oapi.DeleteTeamRequestObject) (oapi.DeleteTeamResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	v, err := ifMatch(req.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	if err := h.Teams.DeleteTeam(ctx, p, req.TeamId, v); err != nil {
		return nil, err
	}
	return oapi.DeleteTeam204Response{}, nil
}

// ListTeamMembers serves GET /v1/orgs/{orgId}/teams/{teamId}/members (AP1).
func (h *handlers) ListTeamMembers(ctx context.Context, req oapi.ListTeamMembersRequestObject) (oapi.ListTeamMembersResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	listing := "listTeamMembers:" + req.TeamId
	r, next, err := fetchPage(h, p.OrgID, listing, req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[team.Member], error) {
		return h.Teams.ListMembers(ctx, p, req.TeamId, pr)
	})
	if err != nil {
		return nil, err
	}
	items := toMemberships(r.Items)
	if req.Params.Expand != nil && *req.Params.Expand == oapi.ListTeamMembersParamsExpandUser {
		ids := make([]string, len(r.Items))
		for i, m := range r.Items {
			ids[i] = m.UserID
		}
		users, err := h.Tenants.BatchGetUsers(ctx, p, ids)
		if err != nil {
			return nil, err
		}
		for i := range items {
			if u, ok := users[items[i].UserId]; ok {
				ou := toOrgUser(u)
				items[i].User = &ou
			}
		}
	}
	return oapi.ListTeamMembers200JSONResponse{Body: oapi.MembershipList{Items: items, NextCursor: nextPtr(next)},
		Headers: oapi.ListTeamMembers200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// GetTeamMember serves GET /v1/orgs/{orgId}/teams/{teamId}/members/{userId} (AP3).
func (h *handlers) GetTeamMember(ctx context.Context, req oapi.GetTeamMemberRequestObject) (oapi.GetTeamMemberResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	m, err := h.Teams.GetMember(ctx, p, req.TeamId, req.UserId)
	if err != nil {
		return nil, err
	}
	return oapi.GetTeamMember200JSONResponse{Body: toMembership(m), Headers: oapi.GetTeamMember200ResponseHeaders{ETag: etag(m.Version)}}, nil
}

// PutTeamMember serves PUT /v1/orgs/{orgId}/teams/{teamId}/members/{userId}.
func (h *handlers) PutTeamMember(ctx context.Context, req oapi.PutTeamMemberRequestObject) (oapi.PutTeamMemberResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	v, err := ifMatch(req.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	m, created, err := h.Teams.PutMember(ctx, p, req.TeamId, req.UserId, roleOf(req.Body.Role), v)
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
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	v, err := ifMatch(req.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	if err := h.Teams.RemoveMember(ctx, p, req.TeamId, req.UserId, v); err != nil {
		return nil, err
	}
	return oapi.RemoveTeamMember204Response{}, nil
}

// ListTeamTickets serves GET /v1/orgs/{orgId}/teams/{teamId}/tickets.
func (h *handlers) ListTeamTickets(ctx context.Context, req oapi.ListTeamTicketsRequestObject) (oapi.ListTeamTicketsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	status := statusOf(req.Params.Status)
	listing := "listTeamTickets:" + req.TeamId + ":" + string(status)
	r, next, err := fetchPage(h, p.OrgID, listing, req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[ticket.Ticket], error) {
		return h.Tickets.ListTeam(ctx, p, req.TeamId, status, pr)
	})
	if err != nil {
		return nil, err
	}
	body, err := h.ticketList(ctx, p, r, next, req.Params.Expand)
	if err != nil {
		return nil, err
	}
	return oapi.ListTeamTickets200JSONResponse{Body: body, Headers: oapi.ListTeamTickets200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// ListTickets serves GET /v1/orgs/{orgId}/tickets.
func (h *handlers) ListTickets(ctx context.Context, req oapi.ListTicketsRequestObject) (oapi.ListTicketsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	status := statusOf(req.Params.Status)
	listing := "listTickets:" + string(status)
	r, next, err := fetchPage(h, p.OrgID, listing, req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[ticket.Ticket], error) {
		return h.Tickets.List(ctx, p, status, pr)
	})
	if err != nil {
		return nil, err
	}
	body, err := h.ticketList(ctx, p, r, next, req.Params.Expand)
	if err != nil {
		return nil, err
	}
	return oapi.ListTickets200JSONResponse{Body: body, Headers: oapi.ListTickets200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// CreateTicket serves POST /v1/orgs/{orgId}/tickets.
func (h *handlers) CreateTicket(ctx context.Context, req oapi.CreateTicketRequestObject) (oapi.CreateTicketResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	in := ticket.NewTicket{ID: newResourceID(ctx), Title: b.Title}
	set(&in.Description, b.Description)
	set(&in.TeamID, b.TeamId)
	set(&in.AssigneeID, b.AssigneeId)
	if b.Priority != nil {
		in.Priority = ticket.Priority(*b.Priority)
	}
	if b.Tags != nil {
		in.Tags = *b.Tags
	}
	t, err := h.Tickets.Create(ctx, p, in)
	if err != nil {
		return nil, err
	}
	return oapi.CreateTicket201JSONResponse{Body: toTicket(t), Headers: oapi.CreateTicket201ResponseHeaders{ETag: etag(t.Version)}}, nil
}

// GetTicket serves GET /v1/orgs/{orgId}/tickets/{ticketId}.
func (h *handlers) GetTicket(ctx context.Context, req oapi.GetTicketRequestObject) (oapi.GetTicketResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	withComments := req.Params.Include != nil && *req.Params.Include == oapi.GetTicketParamsIncludeComments
	t, comments, err := h.Tickets.Get(ctx, p, req.TicketId, withComments)
	if err != nil {
		return nil, err
	}
	out := []oapi.Ticket{toTicket(t)}
	if err := h.expand(ctx, p, out, []ticket.Ticket{t}, req.Params.Expand); err != nil {
		return nil, err
	}
	if withComments {
		cs := toComments(comments)
		out[0].Comments = &cs
	}
	return oapi.GetTicket200JSONResponse{Body: out[0], Headers: oapi.GetTicket200ResponseHeaders{ETag: etag(t.Version)}}, nil
}

// UpdateTicket serves PATCH /v1/orgs/{orgId}/tickets/{ticketId}.
func (h *handlers) UpdateTicket(ctx context.Context, req oapi.UpdateTicketRequestObject) (oapi.UpdateTicketResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	v, err := ifMatch(req.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	b := req.Body
	patch := ticket.Patch{Title: b.Title, Description: b.Description, Tags: b.Tags}
	if b.Status != nil {
		s := ticket.Status(*b.Status)
		patch.Status = &s
	}
	if b.Priority != nil {
		pr := ticket.Priority(*b.Priority)
		patch.Priority = &pr
	}
	patch.AssigneeID = nullableString(b.AssigneeId.IsSpecified(), b.AssigneeId.IsNull(), b.AssigneeId.MustGet)
	patch.TeamID = nullableString(b.TeamId.IsSpecified(), b.TeamId.IsNull(), b.TeamId.MustGet)
	t, err := h.Tickets.Update(ctx, p, req.TicketId, patch, v)
	if err != nil {
		return nil, err
	}
	return oapi.UpdateTicket200JSONResponse{Body: toTicket(t), Headers: oapi.UpdateTicket200ResponseHeaders{ETag: etag(t.Version)}}, nil
}

// nullableString maps a JSON field that may be absent, null or a string to
// nil (leave alone), "" (clear) or the value.
func nullableString(specified, null bool, get func() string) *string {
	switch {
	case !specified:
		return nil
	case null:
		empty := ""
		return &empty
	}
	v := get()
	return &v
}

// DeleteTicket serves DELETE /v1/orgs/{orgId}/tickets/{ticketId}.
func (h *handlers) DeleteTicket(ctx context.Context, req oapi.DeleteTicketRequestObject) (oapi.DeleteTicketResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	v, err := ifMatch(req.Params.IfMatch)
	if err != nil {
		return nil, err
	}
	if err := h.Tickets.Delete(ctx, p, req.TicketId, v); err != nil {
		return nil, err
	}
	return oapi.DeleteTicket204Response{}, nil
}

// ListComments serves GET /v1/orgs/{orgId}/tickets/{ticketId}/comments.
func (h *handlers) ListComments(ctx context.Context, req oapi.ListCommentsRequestObject) (oapi.ListCommentsResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	listing := "listComments:" + req.TicketId
	r, next, err := fetchPage(h, p.OrgID, listing, req.Params.Limit, req.Params.Cursor, func(pr page.Request) (page.Result[ticket.Comment], error) {
		return h.Tickets.ListComments(ctx, p, req.TicketId, pr)
	})
	if err != nil {
		return nil, err
	}
	return oapi.ListComments200JSONResponse{Body: oapi.CommentList{Items: toComments(r.Items), NextCursor: nextPtr(next)},
		Headers: oapi.ListComments200ResponseHeaders{Link: link(ctx, next)}}, nil
}

// CreateComment serves POST /v1/orgs/{orgId}/tickets/{ticketId}/comments.
func (h *handlers) CreateComment(ctx context.Context, req oapi.CreateCommentRequestObject) (oapi.CreateCommentResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	c, err := h.Tickets.AddComment(ctx, p, req.TicketId, newResourceID(ctx), req.Body.Body)
	if err != nil {
		return nil, err
	}
	return oapi.CreateComment201JSONResponse(toComment(c)), nil
}

// ticketList encodes a page of tickets with the requested expansions.
func (h *handlers) ticketList(ctx context.Context, p authz.Principal, r page.Result[ticket.Ticket], next string, expand *oapi.TicketExpand) (oapi.TicketList, error) {
	items := make([]oapi.Ticket, len(r.Items))
	for i, t := range r.Items {
		items[i] = toTicket(t)
	}
	if err := h.expand(ctx, p, items, r.Items, expand); err != nil {
		return oapi.TicketList{}, err
	}
	return oapi.TicketList{Items: items, NextCursor: nextPtr(next)}, nil
}

// expand embeds requesters and assignees, read with one BatchGetItem per
// 100 distinct users (seed 002), never a GetItem per row.
func (h *handlers) expand(ctx context.Context, p authz.Principal, out []oapi.Ticket, ts []ticket.Ticket, expand *oapi.TicketExpand) error {
	if expand == nil || len(ts) == 0 {
		return nil
	}
	var requester, assignee bool
	for _, e := range *expand {
		requester = requester || e == oapi.TicketExpansionRequester
		assignee = assignee || e == oapi.TicketExpansionAssignee
	}
	var ids []string
	for _, t := range ts {
		if requester {
			ids = append(ids, t.RequesterID)
		}
		if assignee && t.AssigneeID != "" {
			ids = append(ids, t.AssigneeID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	users, err := h.Tenants.BatchGetUsers(ctx, p, ids)
	if err != nil {
		return err
	}
	for i, t := range ts {
		if u, ok := users[t.RequesterID]; ok && requester {
			ou := toOrgUser(u)
			out[i].Requester = &ou
		}
		if u, ok := users[t.AssigneeID]; ok && assignee && t.AssigneeID != "" {
			ou := toOrgUser(u)
			out[i].Assignee = &ou
		}
	}
	return nil
}

func statusOf(s *oapi.StatusFilter) ticket.Status {
	if s == nil {
		return ""
	}
	return ticket.Status(*s)
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}
