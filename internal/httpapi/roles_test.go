package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/oapi-codegen/nullable"

	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/authz"
)

// principal is what the policy knows of r: their org role.
func principal(r role) authz.Principal {
	switch r {
	case orgOwner:
		return authz.Principal{OrgRole: authz.Owner}
	case orgAdmin:
		return authz.Principal{OrgRole: authz.Admin}
	}
	return authz.Principal{OrgRole: authz.Member}
}

// facts are what the services find out about r and the row's target: the
// team role on the world's team (or a copy with the same roles), and the
// relation to the world's ticket (routed to that team).
func facts(a authz.Action, r role) authz.Facts {
	var f authz.Facts
	switch a {
	case authz.TeamUpdate, authz.TeamDelete, authz.MemberWrite:
		f.TeamRole = map[role]authz.Role{orgOwner: authz.Owner, teamOwner: authz.Owner, teamAdmin: authz.Admin, teamMember: authz.Member}[r]
	case authz.TicketUpdate, authz.TicketDelete:
		f.Requester = r == requester
		f.Assignee = r == assignee
		f.TeamMember = r == orgOwner || r == teamOwner || r == teamAdmin || r == teamMember
	}
	return f
}

// roleOp is a mutating operation as the role matrix exercises it: prepare
// makes the row's target (as the org owner), call performs the operation
// as c and returns the status, gone/unchanged checks the outcome.
type roleOp struct {
	action authz.Action // "" for createOrg and acceptInvitation, which no org role governs
	ok     int          // the status of success
	// freshWorld: the operation destroys the world (deleteOrg).
	freshWorld bool
	run        func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int
}

var roleOps = map[string]roleOp{
	"createOrg": {"", http.StatusCreated, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		r, err := c.CreateOrgWithResponse(bg, nil, client.OrgCreate{Name: ts.UniqueID("org")})
		return status(t, r, err)
	}},
	"updateOrg": {authz.OrgUpdate, http.StatusOK, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		r, err := c.UpdateOrgWithResponse(bg, w.Org.Id, nil, client.OrgUpdate{Name: ts.UniqueID("renamed")})
		return status(t, r, err)
	}},
	"deleteOrg": {authz.OrgDelete, http.StatusNoContent, true, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		r, err := c.DeleteOrgWithResponse(bg, w.Org.Id, nil)
		st := status(t, r, err)
		g, err := w.Owner.C.GetOrgWithResponse(bg, w.Org.Id, nil)
		if gone := status(t, g, err) == http.StatusNotFound; gone != (st == http.StatusNoContent) {
			t.Errorf("delete answered %d but the org is gone: %v", st, gone)
		}
		return st
	}},
	"addOrgUser": {authz.UserAdd, http.StatusCreated, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		a := ts.Actor(t, "added")
		r, err := c.AddOrgUserWithResponse(bg, w.Org.Id, nil, client.OrgUserCreate{UserId: a.ID, Email: a.Email, Name: a.Name, Role: client.RoleMember})
		return status(t, r, err)
	}},
	"updateOrgUser": {authz.UserUpdate, http.StatusOK, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		target := MustUser(t, w.Owner.C, w.Org.Id, ts.Actor(t, "target"), client.RoleMember)
		r, err := c.UpdateOrgUserWithResponse(bg, w.Org.Id, target.UserId, nil, client.OrgUserUpdate{Name: ptr("Renamed")})
		st := status(t, r, err)
		g, err := w.Owner.C.GetOrgUserWithResponse(bg, w.Org.Id, target.UserId, nil)
		if changed := status(t, g, err) == http.StatusOK && g.JSON200.Version == 2; changed != (st == http.StatusOK) {
			t.Errorf("update answered %d but the user changed: %v", st, changed)
		}
		return st
	}},
	"removeOrgUser": {authz.UserRemove, http.StatusNoContent, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		target := MustUser(t, w.Owner.C, w.Org.Id, ts.Actor(t, "target"), client.RoleMember)
		r, err := c.RemoveOrgUserWithResponse(bg, w.Org.Id, target.UserId, nil)
		st := status(t, r, err)
		g, err := w.Owner.C.GetOrgUserWithResponse(bg, w.Org.Id, target.UserId, nil)
		if gone := status(t, g, err) == http.StatusNotFound; gone != (st == http.StatusNoContent) {
			t.Errorf("remove answered %d but the user is gone: %v", st, gone)
		}
		return st
	}},
	"createTeam": {authz.TeamCreate, http.StatusCreated, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		r, err := c.CreateTeamWithResponse(bg, w.Org.Id, nil, client.TeamCreate{Name: ts.UniqueID("team")})
		return status(t, r, err)
	}},
	"updateTeam": {authz.TeamUpdate, http.StatusOK, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		r, err := c.UpdateTeamWithResponse(bg, w.Org.Id, w.Team.Id, nil, client.TeamUpdate{Description: ptr(ts.UniqueID("desc"))})
		return status(t, r, err)
	}},
	"deleteTeam": {authz.TeamDelete, http.StatusNoContent, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		// A copy of the world's team, with the same team roles.
		tm := MustTeam(t, w.Owner.C, w.Org.Id, ts.UniqueID("doomed"))
		MustMember(t, w.Owner.C, w.Org.Id, tm.Id, w.TeamOwner.ID, client.RoleOwner)
		MustMember(t, w.Owner.C, w.Org.Id, tm.Id, w.TeamAdmin.ID, client.RoleAdmin)
		MustMember(t, w.Owner.C, w.Org.Id, tm.Id, w.TeamMember.ID, client.RoleMember)
		r, err := c.DeleteTeamWithResponse(bg, w.Org.Id, tm.Id, nil)
		st := status(t, r, err)
		g, err := w.Owner.C.GetTeamWithResponse(bg, w.Org.Id, tm.Id, nil)
		if gone := status(t, g, err) == http.StatusNotFound; gone != (st == http.StatusNoContent) {
			t.Errorf("delete answered %d but the team is gone: %v", st, gone)
		}
		return st
	}},
	"putTeamMember": {authz.MemberWrite, http.StatusCreated, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		target := MustUser(t, w.Owner.C, w.Org.Id, ts.Actor(t, "target"), client.RoleMember)
		r, err := c.PutTeamMemberWithResponse(bg, w.Org.Id, w.Team.Id, target.UserId, nil, client.TeamMemberPut{Role: client.RoleMember})
		st := status(t, r, err)
		g, err := w.Owner.C.GetTeamMemberWithResponse(bg, w.Org.Id, w.Team.Id, target.UserId, nil)
		if in := status(t, g, err) == http.StatusOK; in != (st == http.StatusCreated) {
			t.Errorf("put answered %d but the user is in the team: %v", st, in)
		}
		return st
	}},
	"removeTeamMember": {authz.MemberWrite, http.StatusNoContent, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		target := MustUser(t, w.Owner.C, w.Org.Id, ts.Actor(t, "target"), client.RoleMember)
		MustMember(t, w.Owner.C, w.Org.Id, w.Team.Id, target.UserId, client.RoleMember)
		r, err := c.RemoveTeamMemberWithResponse(bg, w.Org.Id, w.Team.Id, target.UserId, nil)
		st := status(t, r, err)
		g, err := w.Owner.C.GetTeamMemberWithResponse(bg, w.Org.Id, w.Team.Id, target.UserId, nil)
		if gone := status(t, g, err) == http.StatusNotFound; gone != (st == http.StatusNoContent) {
			t.Errorf("remove answered %d but the member is gone: %v", st, gone)
		}
		return st
	}},
	"createTicket": {authz.TicketCreate, http.StatusCreated, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		r, err := c.CreateTicketWithResponse(bg, w.Org.Id, nil, client.TicketCreate{Title: ts.UniqueID("ticket"), TeamId: &w.Team.Id})
		return status(t, r, err)
	}},
	"updateTicket": {authz.TicketUpdate, http.StatusOK, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		r, err := c.UpdateTicketWithResponse(bg, w.Org.Id, w.Ticket.Id, nil, client.UpdateTicketJSONRequestBody{Description: ptr(ts.UniqueID("desc"))})
		return status(t, r, err)
	}},
	"deleteTicket": {authz.TicketDelete, http.StatusNoContent, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		// A copy of the world's ticket: same requester, assignee and team.
		tk := MustTicket(t, w.Requester.C, w.Org.Id, client.TicketCreate{Title: ts.UniqueID("doomed"), TeamId: &w.Team.Id, AssigneeId: &w.Assignee.ID})
		r, err := c.DeleteTicketWithResponse(bg, w.Org.Id, tk.Id, nil)
		st := status(t, r, err)
		g, err := w.Owner.C.GetTicketWithResponse(bg, w.Org.Id, tk.Id, nil)
		if gone := status(t, g, err) == http.StatusNotFound; gone != (st == http.StatusNoContent) {
			t.Errorf("delete answered %d but the ticket is gone: %v", st, gone)
		}
		return st
	}},
	"createComment": {authz.CommentCreate, http.StatusCreated, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		r, err := c.CreateCommentWithResponse(bg, w.Org.Id, w.Ticket.Id, nil, client.CommentCreate{Body: "+1"})
		return status(t, r, err)
	}},
	// POST /v1/graphql: any caller may send one (200, errors inside); the
	// role matrix of its mutations is TestGraphQLRoleMatrix's, in
	// internal/graphapi.
	"graphql": {"", http.StatusOK, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		r, err := c.GraphqlWithResponse(bg, client.GraphQLRequest{Query: ptr(`mutation($org: ID!) { addComment(orgId: $org, ticketId: "` + w.Ticket.Id + `", body: "+1") { id } }`),
			Variables: nullable.NewNullableWithValue(json.RawMessage(`{"org":"` + w.Org.Id + `"}`))})
		if st := status(t, r, err); st != http.StatusOK || r.JSON200.Errors != nil {
			t.Errorf("addComment through GraphQL: %d %s", st, r.Body)
		}
		return status(t, r, err)
	}},
	"createInvitation": {authz.InvitationManage, http.StatusCreated, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		r, err := c.CreateInvitationWithResponse(bg, w.Org.Id, nil, client.InvitationCreate{Email: ts.UniqueID("invitee") + "@example.com", Role: client.RoleMember})
		return status(t, r, err)
	}},
	"createApiKey": {authz.APIKeyManage, http.StatusCreated, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		r, err := c.CreateApiKeyWithResponse(bg, w.Org.Id, client.ApiKeyCreate{Name: ts.UniqueID("key"), Role: client.ApiKeyCreateRoleMember})
		return status(t, r, err)
	}},
	"revokeApiKey": {authz.APIKeyManage, http.StatusNoContent, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		k := mustAPIKey(t, w, client.ApiKeyCreateRoleMember)
		r, err := c.RevokeApiKeyWithResponse(bg, w.Org.Id, k.Id)
		st := status(t, r, err)
		g, err := w.Owner.C.GetApiKeyWithResponse(bg, w.Org.Id, k.Id)
		if gone := status(t, g, err) == http.StatusNotFound; gone != (st == http.StatusNoContent) {
			t.Errorf("revoke answered %d but the key is gone: %v", st, gone)
		}
		return st
	}},
	"createWebhook": {authz.WebhookManage, http.StatusCreated, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		r, err := c.CreateWebhookWithResponse(bg, w.Org.Id, nil, client.WebhookCreate{Url: "https://hooks.example.com/" + ts.UniqueID("h"), Events: []string{"*"}})
		return status(t, r, err)
	}},
	"updateWebhook": {authz.WebhookManage, http.StatusOK, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		hook := sharedWebhook(t, ts, w)
		r, err := c.UpdateWebhookWithResponse(bg, w.Org.Id, hook, nil, client.WebhookUpdate{Description: ptr(ts.UniqueID("desc"))})
		return status(t, r, err)
	}},
	"deleteWebhook": {authz.WebhookManage, http.StatusNoContent, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		hook, _ := mustWebhook(t, ts, w, "https://hooks.example.com/"+ts.UniqueID("doomed"))
		r, err := c.DeleteWebhookWithResponse(bg, w.Org.Id, hook.Id, nil)
		st := status(t, r, err)
		g, err := w.Owner.C.GetWebhookWithResponse(bg, w.Org.Id, hook.Id)
		if gone := status(t, g, err) == http.StatusNotFound; gone != (st == http.StatusNoContent) {
			t.Errorf("delete answered %d but the webhook is gone: %v", st, gone)
		}
		return st
	}},
	"rotateWebhookSecret": {authz.WebhookManage, http.StatusOK, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		r, err := c.RotateWebhookSecretWithResponse(bg, w.Org.Id, sharedWebhook(t, ts, w))
		return status(t, r, err)
	}},
	"redeliverWebhook": {authz.WebhookManage, http.StatusAccepted, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		hook := sharedWebhook(t, ts, w)
		r, err := c.RedeliverWebhookWithResponse(bg, w.Org.Id, hook, enqueueDelivery(t, ts, w.Org.Id, hook))
		return status(t, r, err)
	}},
	"revokeInvitation": {authz.InvitationManage, http.StatusNoContent, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		inv := MustInvitation(t, w.Owner.C, w.Org.Id, ts.UniqueID("revoked")+"@example.com", client.RoleMember)
		r, err := c.RevokeInvitationWithResponse(bg, w.Org.Id, inv.Id)
		st := status(t, r, err)
		l, err := w.Owner.C.ListInvitationsWithResponse(bg, w.Org.Id, &client.ListInvitationsParams{Limit: ptr(100)})
		mustStatus(t, l, err, http.StatusOK)
		pending := false
		for _, it := range l.JSON200.Items {
			pending = pending || it.Id == inv.Id
		}
		if pending == (st == http.StatusNoContent) {
			t.Errorf("revoke answered %d but the invitation is pending: %v", st, pending)
		}
		return st
	}},
	// Accepting is governed by the token and its email, not by a role:
	// whoever holds one sent to their email joins (here: another org, which
	// none of the roles is in yet).
	"acceptInvitation": {"", http.StatusCreated, false, func(t *testing.T, ts *testServer, w *world, c *client.ClientWithResponses) int {
		inviter := ts.Actor(t, "inviter")
		o := MustOrg(t, inviter.C, ts.UniqueID("inviting"))
		inv := MustInvitation(t, inviter.C, o.Id, w.ActorOf(c).Email, client.RoleMember)
		r, err := c.AcceptInvitationWithResponse(bg, inv.Token, nil)
		return status(t, r, err)
	}},
}

func status(t *testing.T, r statusCoder, err error) int {
	t.Helper()
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	return r.StatusCode()
}

// roleRows is the role matrix of internal/authz/policy.go as HTTP
// statuses: one row per (mutating operation, role).
var roleRows = []struct {
	op   string
	role role
	want int
}{
	{"createOrg", orgOwner, 201}, {"createOrg", orgAdmin, 201}, {"createOrg", orgMember, 201}, {"createOrg", teamOwner, 201},
	{"createOrg", teamAdmin, 201}, {"createOrg", teamMember, 201}, {"createOrg", requester, 201}, {"createOrg", assignee, 201},

	{"graphql", orgOwner, 200}, {"graphql", orgAdmin, 200}, {"graphql", orgMember, 200}, {"graphql", teamOwner, 200},
	{"graphql", teamAdmin, 200}, {"graphql", teamMember, 200}, {"graphql", requester, 200}, {"graphql", assignee, 200},

	{"updateOrg", orgOwner, 200}, {"updateOrg", orgAdmin, 200}, {"updateOrg", orgMember, 403}, {"updateOrg", teamOwner, 403},
	{"updateOrg", teamAdmin, 403}, {"updateOrg", teamMember, 403}, {"updateOrg", requester, 403}, {"updateOrg", assignee, 403},

	{"deleteOrg", orgOwner, 204}, {"deleteOrg", orgAdmin, 403}, {"deleteOrg", orgMember, 403}, {"deleteOrg", teamOwner, 403},
	{"deleteOrg", teamAdmin, 403}, {"deleteOrg", teamMember, 403}, {"deleteOrg", requester, 403}, {"deleteOrg", assignee, 403},

	{"addOrgUser", orgOwner, 201}, {"addOrgUser", orgAdmin, 201}, {"addOrgUser", orgMember, 403}, {"addOrgUser", teamOwner, 403},
	{"addOrgUser", teamAdmin, 403}, {"addOrgUser", teamMember, 403}, {"addOrgUser", requester, 403}, {"addOrgUser", assignee, 403},

	{"updateOrgUser", orgOwner, 200}, {"updateOrgUser", orgAdmin, 200}, {"updateOrgUser", orgMember, 403}, {"updateOrgUser", teamOwner, 403},
	{"updateOrgUser", teamAdmin, 403}, {"updateOrgUser", teamMember, 403}, {"updateOrgUser", requester, 403}, {"updateOrgUser", assignee, 403},

	{"removeOrgUser", orgOwner, 204}, {"removeOrgUser", orgAdmin, 204}, {"removeOrgUser", orgMember, 403}, {"removeOrgUser", teamOwner, 403},
	{"removeOrgUser", teamAdmin, 403}, {"removeOrgUser", teamMember, 403}, {"removeOrgUser", requester, 403}, {"removeOrgUser", assignee, 403},

	{"createTeam", orgOwner, 201}, {"createTeam", orgAdmin, 201}, {"createTeam", orgMember, 403}, {"createTeam", teamOwner, 403},
	{"createTeam", teamAdmin, 403}, {"createTeam", teamMember, 403}, {"createTeam", requester, 403}, {"createTeam", assignee, 403},

	{"updateTeam", orgOwner, 200}, {"updateTeam", orgAdmin, 200}, {"updateTeam", orgMember, 403}, {"updateTeam", teamOwner, 200},
	{"updateTeam", teamAdmin, 200}, {"updateTeam", teamMember, 403}, {"updateTeam", requester, 403}, {"updateTeam", assignee, 403},

	{"deleteTeam", orgOwner, 204}, {"deleteTeam", orgAdmin, 204}, {"deleteTeam", orgMember, 403}, {"deleteTeam", teamOwner, 204},
	{"deleteTeam", teamAdmin, 204}, {"deleteTeam", teamMember, 403}, {"deleteTeam", requester, 403}, {"deleteTeam", assignee, 403},

	{"putTeamMember", orgOwner, 201}, {"putTeamMember", orgAdmin, 201}, {"putTeamMember", orgMember, 403}, {"putTeamMember", teamOwner, 201},
	{"putTeamMember", teamAdmin, 201}, {"putTeamMember", teamMember, 403}, {"putTeamMember", requester, 403}, {"putTeamMember", assignee, 403},

	{"removeTeamMember", orgOwner, 204}, {"removeTeamMember", orgAdmin, 204}, {"removeTeamMember", orgMember, 403}, {"removeTeamMember", teamOwner, 204},
	{"removeTeamMember", teamAdmin, 204}, {"removeTeamMember", teamMember, 403}, {"removeTeamMember", requester, 403}, {"removeTeamMember", assignee, 403},

	{"createTicket", orgOwner, 201}, {"createTicket", orgAdmin, 201}, {"createTicket", orgMember, 201}, {"createTicket", teamOwner, 201},
	{"createTicket", teamAdmin, 201}, {"createTicket", teamMember, 201}, {"createTicket", requester, 201}, {"createTicket", assignee, 201},

	{"updateTicket", orgOwner, 200}, {"updateTicket", orgAdmin, 200}, {"updateTicket", orgMember, 403}, {"updateTicket", teamOwner, 200},
	{"updateTicket", teamAdmin, 200}, {"updateTicket", teamMember, 200}, {"updateTicket", requester, 200}, {"updateTicket", assignee, 200},

	{"deleteTicket", orgOwner, 204}, {"deleteTicket", orgAdmin, 204}, {"deleteTicket", orgMember, 403}, {"deleteTicket", teamOwner, 403},
	{"deleteTicket", teamAdmin, 403}, {"deleteTicket", teamMember, 403}, {"deleteTicket", requester, 204}, {"deleteTicket", assignee, 403},

	{"createComment", orgOwner, 201}, {"createComment", orgAdmin, 201}, {"createComment", orgMember, 201}, {"createComment", teamOwner, 201},
	{"createComment", teamAdmin, 201}, {"createComment", teamMember, 201}, {"createComment", requester, 201}, {"createComment", assignee, 201},

	{"createInvitation", orgOwner, 201}, {"createInvitation", orgAdmin, 201}, {"createInvitation", orgMember, 403}, {"createInvitation", teamOwner, 403},
	{"createInvitation", teamAdmin, 403}, {"createInvitation", teamMember, 403}, {"createInvitation", requester, 403}, {"createInvitation", assignee, 403},

	{"createApiKey", orgOwner, 201}, {"createApiKey", orgAdmin, 201}, {"createApiKey", orgMember, 403}, {"createApiKey", teamOwner, 403},
	{"createApiKey", teamAdmin, 403}, {"createApiKey", teamMember, 403}, {"createApiKey", requester, 403}, {"createApiKey", assignee, 403},

	{"revokeApiKey", orgOwner, 204}, {"revokeApiKey", orgAdmin, 204}, {"revokeApiKey", orgMember, 403}, {"revokeApiKey", teamOwner, 403},
	{"revokeApiKey", teamAdmin, 403}, {"revokeApiKey", teamMember, 403}, {"revokeApiKey", requester, 403}, {"revokeApiKey", assignee, 403},

	{"createWebhook", orgOwner, 201}, {"createWebhook", orgAdmin, 201}, {"createWebhook", orgMember, 403}, {"createWebhook", teamOwner, 403},
	{"createWebhook", teamAdmin, 403}, {"createWebhook", teamMember, 403}, {"createWebhook", requester, 403}, {"createWebhook", assignee, 403},

	{"updateWebhook", orgOwner, 200}, {"updateWebhook", orgAdmin, 200}, {"updateWebhook", orgMember, 403}, {"updateWebhook", teamOwner, 403},
	{"updateWebhook", teamAdmin, 403}, {"updateWebhook", teamMember, 403}, {"updateWebhook", requester, 403}, {"updateWebhook", assignee, 403},

	{"deleteWebhook", orgOwner, 204}, {"deleteWebhook", orgAdmin, 204}, {"deleteWebhook", orgMember, 403}, {"deleteWebhook", teamOwner, 403},
	{"deleteWebhook", teamAdmin, 403}, {"deleteWebhook", teamMember, 403}, {"deleteWebhook", requester, 403}, {"deleteWebhook", assignee, 403},

	{"rotateWebhookSecret", orgOwner, 200}, {"rotateWebhookSecret", orgAdmin, 200}, {"rotateWebhookSecret", orgMember, 403}, {"rotateWebhookSecret", teamOwner, 403},
	{"rotateWebhookSecret", teamAdmin, 403}, {"rotateWebhookSecret", teamMember, 403}, {"rotateWebhookSecret", requester, 403}, {"rotateWebhookSecret", assignee, 403},

	{"redeliverWebhook", orgOwner, 202}, {"redeliverWebhook", orgAdmin, 202}, {"redeliverWebhook", orgMember, 403}, {"redeliverWebhook", teamOwner, 403},
	{"redeliverWebhook", teamAdmin, 403}, {"redeliverWebhook", teamMember, 403}, {"redeliverWebhook", requester, 403}, {"redeliverWebhook", assignee, 403},

	{"revokeInvitation", orgOwner, 204}, {"revokeInvitation", orgAdmin, 204}, {"revokeInvitation", orgMember, 403}, {"revokeInvitation", teamOwner, 403},
	{"revokeInvitation", teamAdmin, 403}, {"revokeInvitation", teamMember, 403}, {"revokeInvitation", requester, 403}, {"revokeInvitation", assignee, 403},

	{"acceptInvitation", orgOwner, 201}, {"acceptInvitation", orgAdmin, 201}, {"acceptInvitation", orgMember, 201}, {"acceptInvitation", teamOwner, 201},
	{"acceptInvitation", teamAdmin, 201}, {"acceptInvitation", teamMember, 201}, {"acceptInvitation", requester, 201}, {"acceptInvitation", assignee, 201},
}

// TestRoleMatrix performs every mutating operation as every role and
// expects the exact status the policy promises. Each row's expectation is
// also checked against authz.Authorize itself, so the table cannot drift
// from internal/authz/policy.go.
func TestRoleMatrix(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Roles")

	// The table is complete: every mutating operation of the spec, every
	// role, once.
	doc, _ := loadSpec(t)
	seen := map[string]int{}
	for _, r := range roleRows {
		seen[r.op+"/"+string(r.role)]++
	}
	for _, op := range specOperations(doc) {
		if op.Method == http.MethodGet {
			continue
		}
		if _, ok := roleOps[op.ID]; !ok {
			t.Errorf("mutating operation %s has no entry in roleOps", op.ID)
			continue
		}
		for _, r := range roles {
			if n := seen[op.ID+"/"+string(r)]; n != 1 {
				t.Errorf("%s as %s: %d rows, want 1", op.ID, r, n)
			}
		}
	}

	for _, row := range roleRows {
		op, ok := roleOps[row.op]
		if !ok {
			t.Errorf("row for unknown operation %s", row.op)
			continue
		}
		spec(t, fmt.Sprintf("%d/%s/%s", row.want, row.op, row.role), func(t *testing.T) {
			if op.action != "" {
				allowed := authz.Authorize(principal(row.role), op.action, facts(op.action, row.role)) == nil
				if got := row.want == op.ok; got != allowed {
					t.Fatalf("the table says %d but authz.Matrix[%s] allows %s: %v", row.want, op.action, row.role, allowed)
				}
			}
			world := w
			if op.freshWorld {
				world = MustWorld(t, ts, ts.UniqueID("Doomed"))
			}
			if got, want := op.run(t, ts, world, world.Actor(row.role).C), row.want; got != want {
				t.Errorf("status: got %d, want %d", got, want)
			}
		})
	}
}
