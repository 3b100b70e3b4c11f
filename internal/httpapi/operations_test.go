package httpapi_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/apikey"
	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/export"
	"github.com/tenantd/tenantd/internal/invitation"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
	"github.com/tenantd/tenantd/internal/webhook"
)

// TestOperations pins the DynamoDB calls behind the access patterns whose
// cost the design promises: the authorization read is one consistent
// BatchGetItem of the caller's edge and the org item (and of the route's
// target, when it names one), made before anything else; each pattern adds
// a constant number of calls whatever the size of the data.
func TestOperations(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Ops")
	org, c := w.Org.Id, w.Member.C
	// A team bigger than one small page.
	for range 5 {
		a := ts.Actor(t, "extra")
		MustUser(t, w.Owner.C, org, a, client.RoleMember)
		MustMember(t, w.Owner.C, org, w.Team.Id, a.ID, client.RoleMember)
	}
	missing := "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	cases := []struct {
		name  string
		want  string
		items int // keys of the last BatchGetItem, when it matters
		do    func() (statusCoder, error)
	}{
		{"getTicket", authzRead, 3, func() (statusCoder, error) {
			return c.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
		}},
		{"getTeamMember (AP3)", authzRead, 3, func() (statusCoder, error) {
			return c.GetTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamAdmin.ID, nil)
		}},
		{"getOrgUser", authzRead, 3, func() (statusCoder, error) { return c.GetOrgUserWithResponse(bg, org, w.Admin.ID, nil) }},
		{"getOrgUser (the caller)", authzRead, 2, func() (statusCoder, error) {
			return c.GetOrgUserWithResponse(bg, org, w.Member.ID, nil)
		}},
		{"getTeam", authzRead, 3, func() (statusCoder, error) { return c.GetTeamWithResponse(bg, org, w.Team.Id, nil) }},
		{"getOrg", authzRead, 2, func() (statusCoder, error) { return c.GetOrgWithResponse(bg, org, nil) }},
		// A listing under a named parent loads the parent in the one read,
		// so it needs no read of it, empty page or not.
		{"listTeamTickets status=new (an empty page)", authzRead + ", Query(GSI5)+desc", 0, func() (statusCoder, error) {
			return c.ListTeamTicketsWithResponse(bg, org, w.Team.Id, &client.ListTeamTicketsParams{Status: ptr(client.TicketStatusNew)})
		}},
		{"listTeamTickets", authzRead + ", Query(GSI5)+desc", 0, func() (statusCoder, error) {
			return c.ListTeamTicketsWithResponse(bg, org, w.Team.Id, nil)
		}},
		{"listComments", authzRead + ", Query", 0, func() (statusCoder, error) { return c.ListCommentsWithResponse(bg, org, w.Ticket.Id, nil) }},
		{"listAssignedTickets", authzRead + ", Query(GSI4)+desc", 0, func() (statusCoder, error) {
			return c.ListAssignedTicketsWithResponse(bg, org, w.Assignee.ID, nil)
		}},
		{"listUserTickets include=user", authzRead + ", Query(GSI2)+desc", 0, func() (statusCoder, error) {
			return c.ListUserTicketsWithResponse(bg, org, w.Requester.ID, &client.ListUserTicketsParams{Include: ptr(client.ListUserTicketsParamsIncludeUser)})
		}},
		// ?include= reads the item collection, the item and its children in
		// one Query: nothing is loaded with the decision for it.
		{"getOrg include=users", authzRead + ", Query", 0, func() (statusCoder, error) {
			return c.GetOrgWithResponse(bg, org, &client.GetOrgParams{Include: ptr(client.GetOrgParamsIncludeUsers)})
		}},
		{"getTeam include=members (AP4)", authzRead + ", Query", 0, func() (statusCoder, error) {
			return c.GetTeamWithResponse(bg, org, w.Team.Id, &client.GetTeamParams{Include: ptr(client.GetTeamParamsIncludeMembers)})
		}},
		{"getTicket include=comments", authzRead + ", Query", 0, func() (statusCoder, error) {
			return c.GetTicketWithResponse(bg, org, w.Ticket.Id, &client.GetTicketParams{Include: ptr(client.GetTicketParamsIncludeComments)})
		}},
		{"listUserTeams (AP2)", authzRead + ", Query(GSI1)", 0, func() (statusCoder, error) {
			return c.ListUserTeamsWithResponse(bg, org, w.TeamOwner.ID, nil)
		}},
		{"listUserTeams (AP2) expand=team", authzRead + ", Query(GSI1), BatchGetItem", 0, func() (statusCoder, error) {
			expand := client.ListUserTeamsParamsExpandTeam
			return c.ListUserTeamsWithResponse(bg, org, w.TeamOwner.ID, &client.ListUserTeamsParams{Expand: &expand})
		}},
		{"listTeamMembers (AP1)", authzRead + ", Query", 0, func() (statusCoder, error) {
			return c.ListTeamMembersWithResponse(bg, org, w.Team.Id, nil)
		}},
		{"listTeamMembers expand=user limit=2", authzRead + ", Query, BatchGetItem", 2, func() (statusCoder, error) {
			return c.ListTeamMembersWithResponse(bg, org, w.Team.Id, &client.ListTeamMembersParams{Limit: ptr(2), Expand: ptr(client.ListTeamMembersParamsExpandUser)})
		}},
		{"listTeamMembers expand=user limit=5", authzRead + ", Query, BatchGetItem", 5, func() (statusCoder, error) {
			return c.ListTeamMembersWithResponse(bg, org, w.Team.Id, &client.ListTeamMembersParams{Limit: ptr(5), Expand: ptr(client.ListTeamMembersParamsExpandUser)})
		}},
		{"listTeamMembers expand=user limit=100", authzRead + ", Query, BatchGetItem", 9, func() (statusCoder, error) {
			return c.ListTeamMembersWithResponse(bg, org, w.Team.Id, &client.ListTeamMembersParams{Limit: ptr(100), Expand: ptr(client.ListTeamMembersParamsExpandUser)})
		}},
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			if got, want := tripsOf(t, ts, http.StatusOK, cs.do), cs.want; got != want {
				t.Errorf("DynamoDB round trips:\ngot  %s\nwant %s", got, want)
			}
			if cs.items > 0 {
				ops := ts.Rec.Ops()
				if got, want := ops[len(ops)-1].Items, cs.items; got != want {
					t.Errorf("BatchGetItem keys: got %d, want %d", got, want)
				}
			}
		})
	}

	// A missing target (or a listing's missing parent) is a 404 from the
	// one read: nothing else is read.
	misses := []struct {
		name string
		do   func() (statusCoder, error)
	}{
		{"getTicket (missing)", func() (statusCoder, error) { return c.GetTicketWithResponse(bg, org, missing, nil) }},
		{"getTeam (missing)", func() (statusCoder, error) { return c.GetTeamWithResponse(bg, org, missing, nil) }},
		{"getOrgUser (missing)", func() (statusCoder, error) { return c.GetOrgUserWithResponse(bg, org, "u_missing", nil) }},
		{"listTeamMembers (missing team)", func() (statusCoder, error) { return c.ListTeamMembersWithResponse(bg, org, missing, nil) }},
	}
	for _, m := range misses {
		t.Run("404 in one read/"+m.name, func(t *testing.T) {
			if got := tripsOf(t, ts, http.StatusNotFound, m.do); got != authzRead {
				t.Errorf("DynamoDB round trips: got %s, want the authorization read alone", got)
			}
		})
	}

	// Every other org-scoped read makes the authorization read first, then
	// at most two calls more (the listing, and its users expanded).
	reads := []struct {
		name string
		do   func() (statusCoder, error)
	}{
		{"listOrgUsers", func() (statusCoder, error) { return c.ListOrgUsersWithResponse(bg, org, nil) }},
		{"listTeams", func() (statusCoder, error) { return c.ListTeamsWithResponse(bg, org, nil) }},
		{"listTickets expand=requester,assignee", func() (statusCoder, error) {
			return c.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Expand: &client.TicketExpand{client.TicketExpansionRequester, client.TicketExpansionAssignee}})
		}},
	}
	for _, rd := range reads {
		t.Run("authz read first/"+rd.name, func(t *testing.T) {
			trips := tripsOf(t, ts, http.StatusOK, rd.do)
			if n := ts.Rec.Count(); n > 3 {
				t.Errorf("DynamoDB calls %q: more than 3 for one read", trips)
			}
			for _, op := range ts.Rec.Ops() {
				if op.Name == "Scan" {
					t.Errorf("a Scan: %s", trips)
				}
			}
		})
	}
}

// TestOperationsOfWrites pins the calls of creates, updates and deletes:
// the authorization read first, which loads the target of an update or a
// delete, then the write's transaction. A delete reads once more in
// between, in the store: the children it deletes with its parent (a team's
// edges, a ticket's comments; a user's team set), consistently, at the
// time of the write, which no earlier read can stand in for. The caller is
// an org admin or owner, whose decision needs no team role (a member acting
// on a team by their team role reads their edge after the decision: one
// call more).
func TestOperationsOfWrites(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Write ops")
	org, admin, owner := w.Org.Id, w.Admin.C, w.Owner.C
	extra := ts.Actor(t, "extra")
	MustUser(t, owner, org, extra, client.RoleMember)
	MustMember(t, owner, org, w.Team.Id, extra.ID, client.RoleMember)
	leaving := ts.Actor(t, "leaving")
	MustUser(t, owner, org, leaving, client.RoleMember)
	joining := ts.Actor(t, "joining")
	MustUser(t, owner, org, joining, client.RoleMember)
	doomedTeam := MustTeam(t, admin, org, "Doomed team")
	doomedTicket := MustTicket(t, admin, org, client.TicketCreate{Title: "Doomed ticket"})
	writes := []struct {
		name  string
		want  int
		calls int
		do    func() (statusCoder, error)
	}{
		{"createTicket", http.StatusCreated, 2, func() (statusCoder, error) {
			return w.Member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "Two calls"})
		}},
		{"createComment", http.StatusCreated, 2, func() (statusCoder, error) {
			return w.Member.C.CreateCommentWithResponse(bg, org, w.Ticket.Id, nil, client.CommentCreate{Body: "two calls"})
		}},
		{"updateTicket", http.StatusOK, 2, func() (statusCoder, error) {
			return admin.UpdateTicketWithResponse(bg, org, w.Ticket.Id, nil, client.TicketUpdate{Title: ptr("Renamed")})
		}},
		{"putTeamMember (role change)", http.StatusOK, 2, func() (statusCoder, error) {
			return admin.PutTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, nil, client.TeamMemberPut{Role: client.RoleAdmin})
		}},
		{"putTeamMember (added)", http.StatusCreated, 2, func() (statusCoder, error) {
			return admin.PutTeamMemberWithResponse(bg, org, w.Team.Id, joining.ID, nil, client.TeamMemberPut{Role: client.RoleMember})
		}},
		{"putTeamMember (by a team admin who is an org member)", http.StatusOK, 2, func() (statusCoder, error) {
			return w.TeamAdmin.C.PutTeamMemberWithResponse(bg, org, w.Team.Id, joining.ID, nil, client.TeamMemberPut{Role: client.RoleAdmin})
		}},
		{"updateTeam (by a team admin who is an org member)", http.StatusOK, 2, func() (statusCoder, error) {
			return w.TeamAdmin.C.UpdateTeamWithResponse(bg, org, w.Team.Id, nil, client.TeamUpdate{Description: ptr("by its admin")})
		}},
		{"updateTeam", http.StatusOK, 2, func() (statusCoder, error) {
			return admin.UpdateTeamWithResponse(bg, org, w.Team.Id, nil, client.TeamUpdate{Name: ptr("Renamed team")})
		}},
		{"updateOrg", http.StatusOK, 2, func() (statusCoder, error) {
			return owner.UpdateOrgWithResponse(bg, org, nil, client.OrgUpdate{Name: "Renamed org"})
		}},
		{"updateOrgUser", http.StatusOK, 2, func() (statusCoder, error) {
			return admin.UpdateOrgUserWithResponse(bg, org, w.Member.ID, nil, client.OrgUserUpdate{Name: ptr("Renamed member")})
		}},
		{"removeTeamMember", http.StatusNoContent, 2, func() (statusCoder, error) {
			return admin.RemoveTeamMemberWithResponse(bg, org, w.Team.Id, extra.ID, nil)
		}},
		{"deleteTicket", http.StatusNoContent, 3, func() (statusCoder, error) {
			return admin.DeleteTicketWithResponse(bg, org, doomedTicket.Id, nil)
		}},
		{"deleteTeam", http.StatusNoContent, 3, func() (statusCoder, error) {
			return admin.DeleteTeamWithResponse(bg, org, doomedTeam.Id, nil)
		}},
		{"removeOrgUser", http.StatusNoContent, 3, func() (statusCoder, error) {
			return admin.RemoveOrgUserWithResponse(bg, org, leaving.ID, nil)
		}},
	}
	for _, wr := range writes {
		t.Run(wr.name, func(t *testing.T) {
			trips := tripsOf(t, ts, wr.want, wr.do)
			if n := ts.Rec.Count(); n != wr.calls {
				t.Errorf("DynamoDB calls %q: %d, want %d", trips, n, wr.calls)
			}
		})
	}
}

// authzRead is how the recorder names the authorization read.
const authzRead = "BatchGetItem+consistent"

// tripsOf runs do, which must answer want, and returns the request's
// DynamoDB round trips; it fails t unless the authorization read went out
// first, alone: the decision is made before anything else is read.
func tripsOf(t *testing.T, ts *testServer, want int, do func() (statusCoder, error)) string {
	t.Helper()
	ts.Rec.Reset()
	r, err := do()
	mustStatus(t, r, err, want)
	trips := ts.Rec.Trips()
	if first, _, _ := strings.Cut(trips, ", "); first != authzRead {
		t.Errorf("DynamoDB round trips %q: want the authorization read %q alone first", trips, authzRead)
	}
	return trips
}

// TestNoScan runs every operation of the spec once (the tour of
// TestCrossTenant's request builders, as the org's owner, deletes last) and
// asserts no call was a Scan. MustServer's cleanup asserts the same for
// every server of every test in the package.
func TestNoScan(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Tour")
	MustComment(t, w.Member.C, w.Org.Id, w.Ticket.Id, "hello")
	doc, _ := loadSpec(t)
	ids := idsOf(w)
	ids.InvitationID = MustInvitation(t, w.Owner.C, w.Org.Id, "tour-revoked@example.com", client.RoleMember).Id
	hook, delivery := mustWebhook(t, ts, w, "https://hooks.example.com/tour")
	ids.WebhookID, ids.DeliveryID = hook.Id, delivery
	ids.KeyID = mustAPIKey(t, w, client.ApiKeyCreateRoleMember).Id
	ids.Token = MustInvitation(t, w.Owner.C, w.Org.Id, "tour-accepted@example.com", client.RoleMember, w.Team.Id).Token
	invitee := ts.Invitee(t, "invitee", "tour-accepted@example.com")
	ts.Rec.Reset()
	for _, op := range tourOrder(specOperations(doc)) {
		build, ok := requests[op.ID]
		if !ok {
			t.Errorf("%s: no request builder in matrix_test.go", op.ID)
			continue
		}
		t.Run(op.ID, func(t *testing.T) {
			hc := w.Owner.HTTP
			if op.ID == "acceptInvitation" {
				hc = invitee.HTTP
			}
			resp, body := do(t, hc, ts.URL, op, ids, build(ids))
			// No offboarding runs before the tour's deleteOrg (and that one
			// finishes within the request): getOffboarding has nothing.
			if op.ID == "getOffboarding" && resp.StatusCode == http.StatusNotFound {
				return
			}
			if resp.StatusCode >= 300 {
				t.Errorf("%s %s: status %d: %s", op.Method, op.Path, resp.StatusCode, body)
			}
		})
	}
	var scans []string
	for _, op := range ts.Rec.Ops() {
		if op.Name == "Scan" {
			scans = append(scans, op.String())
		}
	}
	if len(scans) > 0 || ts.Scans() > 0 {
		t.Errorf("Scan calls: %s", strings.Join(scans, ", "))
	}
	t.Logf("%d DynamoDB calls for %d operations", ts.Rec.Count(), len(specOperations(doc)))
}

// TestOperationNamesMatchServices: one name in every layer. Each operation
// of openapi.yaml is served by the handler of its operationId (the
// generated strict interface enforces that), which calls the service
// method of the same name; the store method, where there is one, has it
// too (docs/data-model.md's chart names it). The operational endpoints
// and getMe (which answers from ListOrgs) have no service of their own.
func TestOperationNamesMatchServices(t *testing.T) {
	doc, _ := loadSpec(t)
	methods := map[string]string{}
	for _, svc := range []any{&tenant.Service{}, &membership.Service{}, &ticket.Service{}, &invitation.Service{}, &audit.Service{},
		&webhook.Service{}, &webhook.Deliveries{}, &export.Service{}, &apikey.Service{}} {
		typ := reflect.TypeOf(svc)
		for i := range typ.NumMethod() {
			methods[typ.Method(i).Name] = typ.Elem().PkgPath()
		}
	}
	// graphql is served by graphapi.Server, whose resolvers call the
	// services (TestGraphQLOperationsPerLevel, in internal/graphapi, names
	// them per level).
	noService := map[string]bool{"getHealth": true, "getReady": true, "getOpenAPI": true, "getMe": true, "graphql": true, "graphqlGet": true}
	for _, op := range specOperations(doc) {
		name := strings.ToUpper(op.ID[:1]) + op.ID[1:]
		if noService[op.ID] {
			continue
		}
		if _, ok := methods[name]; !ok {
			t.Errorf("%s (%s %s): no service has a method %s", op.ID, op.Method, op.Path, name)
		}
	}
}
