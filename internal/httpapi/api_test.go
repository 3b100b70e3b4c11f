package httpapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oapi-codegen/nullable"

	"github.com/tenantd/tenantd"
	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/httpapi"
)

var bg = context.Background()

// wantETag asserts the ETag header is the quoted version.
func wantETag(tb testing.TB, h http.Header, version int64) {
	tb.Helper()
	if got, want := h.Get("ETag"), etagOf(version); got != want {
		tb.Errorf("ETag: got %q, want %q", got, want)
	}
}

func TestStatus200(t *testing.T) {
	// An offboarding waits a second before its last sweep, so that one is
	// still under way when getOffboarding reads it.
	ts := MustServer(t, hWithOffboarding(time.Second, time.Millisecond))
	w := MustWorld(t, ts, "Acme")
	org, owner := w.Org.Id, w.Owner.C

	t.Run("getHealth", func(t *testing.T) {
		r, err := ts.Client(t, "").GetHealthWithResponse(bg)
		mustStatus(t, r, err, http.StatusOK)
		if got, want := r.JSON200.Status, client.HealthStatusOk; got != want {
			t.Errorf("status: got %q, want %q", got, want)
		}
	})
	t.Run("getReady", func(t *testing.T) {
		r, err := ts.Client(t, "").GetReadyWithResponse(bg)
		mustStatus(t, r, err, http.StatusOK)
		if got, want := r.JSON200.Status, client.HealthStatusOk; got != want {
			t.Errorf("status: got %q, want %q", got, want)
		}
	})
	t.Run("metrics", func(t *testing.T) {
		// Not an operation of the API (cmd/api serves them on their own
		// listener): the registry behind them has the request metrics.
		text := hMetricsText(t, ts.Registry)
		for _, name := range []string{"tenantd_request_dynamodb_calls", "tenantd_requests_total"} {
			if !strings.Contains(text, name) {
				t.Errorf("metrics lack %s:\n%s", name, truncate([]byte(text)))
			}
		}
	})
	t.Run("getOffboarding", func(t *testing.T) {
		doomed := MustWorld(t, ts, "Doomed while read")
		d, err := doomed.Owner.C.DeleteOrgWithResponse(bg, doomed.Org.Id, nil)
		mustStatus(t, d, err, http.StatusAccepted)
		r, err := doomed.Owner.C.GetOffboardingWithResponse(bg, doomed.Org.Id)
		mustStatus(t, r, err, http.StatusOK)
		if got := r.JSON200; got.OrgId != doomed.Org.Id || got.StartedBy != doomed.Owner.ID || got.State != client.OffboardingStateRunning {
			t.Errorf("offboarding: got %+v", got)
		}
	})
	t.Run("getOpenAPI", func(t *testing.T) {
		r, err := ts.Client(t, "").GetOpenAPIWithResponse(bg)
		if err != nil {
			t.Errorf("the generated client cannot read GET /openapi.yaml: %v", err)
		} else {
			mustStatus(t, r, err, http.StatusOK)
		}
		resp, err := ts.HTTPClient(t, "").Get(ts.URL + "/openapi.yaml")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || !bytes.Equal(b, tenantd.OpenAPISpec) {
			t.Errorf("GET /openapi.yaml: %d, %d bytes; want 200 and openapi.yaml (%d bytes)", resp.StatusCode, len(b), len(tenantd.OpenAPISpec))
		}
	})
	t.Run("getMe", func(t *testing.T) {
		r, err := owner.GetMeWithResponse(bg)
		mustStatus(t, r, err, http.StatusOK)
		if got, want := r.JSON200.UserId, w.Owner.ID; got != want {
			t.Errorf("userId: got %q, want %q", got, want)
		}
		if got, want := r.JSON200.Orgs, []client.MeOrg{{OrgId: org, Name: w.Org.Name, Role: client.RoleOwner}}; !slices.Equal(got, want) {
			t.Errorf("orgs: got %+v, want %+v", got, want)
		}
	})
	t.Run("listOrgs", func(t *testing.T) {
		r, err := w.Member.C.ListOrgsWithResponse(bg, nil)
		mustStatus(t, r, err, http.StatusOK)
		if got, want := len(r.JSON200.Items), 1; got != want {
			t.Fatalf("items: got %d, want %d", got, want)
		}
		m := r.JSON200.Items[0]
		if m.OrgId != org || m.Name != w.Org.Name || m.Role != client.RoleMember {
			t.Errorf("item: got %+v, want org %s %q as member", m, org, w.Org.Name)
		}
		if r.JSON200.NextCursor != nil || r.HTTPResponse.Header.Get("Link") != "" {
			t.Errorf("one page: want no nextCursor and no Link, got %v %q", r.JSON200.NextCursor, r.HTTPResponse.Header.Get("Link"))
		}
	})
	t.Run("getOrg", func(t *testing.T) {
		r, err := w.Member.C.GetOrgWithResponse(bg, org, nil)
		mustStatus(t, r, err, http.StatusOK)
		if got, want := r.JSON200.Name, w.Org.Name; got != want {
			t.Errorf("name: got %q, want %q", got, want)
		}
		if r.JSON200.Users != nil {
			t.Errorf("users present without include=users")
		}
		wantETag(t, r.HTTPResponse.Header, r.JSON200.Version)
	})
	t.Run("getOrg/include=users", func(t *testing.T) {
		r, err := w.Member.C.GetOrgWithResponse(bg, org, &client.GetOrgParams{Include: ptr(client.GetOrgParamsIncludeUsers)})
		mustStatus(t, r, err, http.StatusOK)
		if r.JSON200.Users == nil {
			t.Fatal("users missing with include=users")
		}
		var ids []string
		for _, u := range *r.JSON200.Users {
			ids = append(ids, u.UserId)
		}
		slices.Sort(ids)
		if got, want := ids, w.userIDs(); !slices.Equal(got, want) {
			t.Errorf("users: got %v, want %v", got, want)
		}
		wantETag(t, r.HTTPResponse.Header, r.JSON200.Version)
	})
	t.Run("updateOrg", func(t *testing.T) {
		g, err := w.Admin.C.GetOrgWithResponse(bg, org, nil)
		mustStatus(t, g, err, http.StatusOK)
		r, err := w.Admin.C.UpdateOrgWithResponse(bg, org, &client.UpdateOrgParams{IfMatch: ptr(g.HTTPResponse.Header.Get("ETag"))},
			client.OrgUpdate{Name: w.Org.Name + " Renamed"})
		mustStatus(t, r, err, http.StatusOK)
		if got, want := r.JSON200.Name, w.Org.Name+" Renamed"; got != want {
			t.Errorf("name: got %q, want %q", got, want)
		}
		if got, want := r.JSON200.Version, g.JSON200.Version+1; got != want {
			t.Errorf("version: got %d, want %d", got, want)
		}
		wantETag(t, r.HTTPResponse.Header, r.JSON200.Version)
		w.Org.Name += " Renamed"
	})
	t.Run("listOrgUsers", func(t *testing.T) {
		r, err := w.Member.C.ListOrgUsersWithResponse(bg, org, nil)
		mustStatus(t, r, err, http.StatusOK)
		var ids []string
		for _, u := range r.JSON200.Items {
			ids = append(ids, u.UserId)
		}
		if got, want := ids, w.userIDs(); !slices.Equal(got, want) {
			t.Errorf("users (ordered by id): got %v, want %v", got, want)
		}
	})
	t.Run("getOrgUser", func(t *testing.T) {
		r, err := w.Member.C.GetOrgUserWithResponse(bg, org, w.Admin.ID)
		mustStatus(t, r, err, http.StatusOK)
		u := r.JSON200
		if u.UserId != w.Admin.ID || u.Email != w.Admin.Email || u.Name != w.Admin.Name || u.Role != client.RoleAdmin {
			t.Errorf("user: got %+v", u)
		}
		wantETag(t, r.HTTPResponse.Header, u.Version)
	})
	t.Run("updateOrgUser", func(t *testing.T) {
		r, err := w.Admin.C.UpdateOrgUserWithResponse(bg, org, w.Member.ID, &client.UpdateOrgUserParams{IfMatch: ptr(etagOf(1))},
			client.OrgUserUpdate{Name: ptr("Renamed Member"), Email: ptr("renamed-" + w.Member.Email)})
		mustStatus(t, r, err, http.StatusOK)
		if got, want := r.JSON200.Name, "Renamed Member"; got != want {
			t.Errorf("name: got %q, want %q", got, want)
		}
		if got, want := r.JSON200.Email, "renamed-"+w.Member.Email; got != want {
			t.Errorf("email: got %q, want %q", got, want)
		}
		if got, want := r.JSON200.Version, int64(2); got != want {
			t.Errorf("version: got %d, want %d", got, want)
		}
		wantETag(t, r.HTTPResponse.Header, 2)
		// The old email is free again, the new one is taken.
		other := ts.Actor(t, "reuse")
		other.Email = w.Member.Email
		MustUser(t, owner, org, other, client.RoleMember)
		rr, err := owner.RemoveOrgUserWithResponse(bg, org, other.ID, nil)
		mustStatus(t, rr, err, http.StatusNoContent)
	})
	t.Run("listUserTeams", func(t *testing.T) {
		plain, err := w.Member.C.ListUserTeamsWithResponse(bg, org, w.TeamAdmin.ID, nil)
		mustStatus(t, plain, err, http.StatusOK)
		if got := plain.JSON200.Items; len(got) != 1 || got[0].TeamName != nil {
			t.Errorf("without expand: got %+v, want one membership without teamName", got)
		}
		expand := client.ListUserTeamsParamsExpandTeam
		r, err := w.Member.C.ListUserTeamsWithResponse(bg, org, w.TeamAdmin.ID, &client.ListUserTeamsParams{Expand: &expand})
		mustStatus(t, r, err, http.StatusOK)
		if got, want := len(r.JSON200.Items), 1; got != want {
			t.Fatalf("items: got %d, want %d", got, want)
		}
		m := r.JSON200.Items[0]
		if m.TeamId != w.Team.Id || m.UserId != w.TeamAdmin.ID || m.Role != client.RoleAdmin || m.TeamName == nil || *m.TeamName != w.Team.Name {
			t.Errorf("membership: got %+v (teamName %v), want team %s %q as admin", m, m.TeamName, w.Team.Id, w.Team.Name)
		}
	})
	t.Run("listUserTickets/include=user&expand=requester,assignee", func(t *testing.T) {
		r, err := w.Member.C.ListUserTicketsWithResponse(bg, org, w.Requester.ID, &client.ListUserTicketsParams{
			Include: ptr(client.ListUserTicketsParamsIncludeUser),
			Expand:  &client.TicketExpand{client.TicketExpansionRequester, client.TicketExpansionAssignee}})
		mustStatus(t, r, err, http.StatusOK)
		if r.JSON200.User == nil || r.JSON200.User.UserId != w.Requester.ID || r.JSON200.User.Email != w.Requester.Email {
			t.Errorf("user: got %+v, want %s", r.JSON200.User, w.Requester.ID)
		}
		if got, want := ticketIDs(r.JSON200.Items), []string{w.Ticket.Id}; !slices.Equal(got, want) {
			t.Fatalf("tickets: got %v, want %v", got, want)
		}
		tk := r.JSON200.Items[0]
		if tk.Requester == nil || tk.Requester.UserId != w.Requester.ID {
			t.Errorf("requester not expanded: %+v", tk.Requester)
		}
		if tk.Assignee == nil || tk.Assignee.UserId != w.Assignee.ID {
			t.Errorf("assignee not expanded: %+v", tk.Assignee)
		}
	})
	t.Run("listUserTickets/plain", func(t *testing.T) {
		r, err := w.Member.C.ListUserTicketsWithResponse(bg, org, w.Requester.ID, nil)
		mustStatus(t, r, err, http.StatusOK)
		if r.JSON200.User != nil {
			t.Errorf("user present without include=user")
		}
		if got, want := ticketIDs(r.JSON200.Items), []string{w.Ticket.Id}; !slices.Equal(got, want) {
			t.Errorf("tickets: got %v, want %v", got, want)
		}
		if tk := r.JSON200.Items[0]; tk.Requester != nil || tk.Assignee != nil {
			t.Errorf("users expanded without expand")
		}
	})
	t.Run("listAssignedTickets", func(t *testing.T) {
		r, err := w.Member.C.ListAssignedTicketsWithResponse(bg, org, w.Assignee.ID, &client.ListAssignedTicketsParams{
			Expand: &client.TicketExpand{client.TicketExpansionAssignee}})
		mustStatus(t, r, err, http.StatusOK)
		if got, want := ticketIDs(r.JSON200.Items), []string{w.Ticket.Id}; !slices.Equal(got, want) {
			t.Fatalf("tickets: got %v, want %v", got, want)
		}
		if tk := r.JSON200.Items[0]; tk.Assignee == nil || tk.Assignee.UserId != w.Assignee.ID || tk.Requester != nil {
			t.Errorf("expand=assignee: requester %+v assignee %+v", tk.Requester, tk.Assignee)
		}
		r, err = w.Member.C.ListAssignedTicketsWithResponse(bg, org, w.Requester.ID, nil)
		mustStatus(t, r, err, http.StatusOK)
		if got := len(r.JSON200.Items); got != 0 {
			t.Errorf("requester has %d assigned tickets, want 0", got)
		}
	})
	t.Run("listTeams", func(t *testing.T) {
		r, err := w.Member.C.ListTeamsWithResponse(bg, org, nil)
		mustStatus(t, r, err, http.StatusOK)
		if got, want := len(r.JSON200.Items), 1; got != want {
			t.Fatalf("items: got %d, want %d", got, want)
		}
		tm := r.JSON200.Items[0]
		if tm.Id != w.Team.Id || tm.Name != w.Team.Name || tm.MemberCount != 4 {
			t.Errorf("team: got %+v, want %s %q with 4 members", tm, w.Team.Id, w.Team.Name)
		}
	})
	t.Run("getTeam", func(t *testing.T) {
		r, err := w.Member.C.GetTeamWithResponse(bg, org, w.Team.Id, nil)
		mustStatus(t, r, err, http.StatusOK)
		if r.JSON200.Id != w.Team.Id || r.JSON200.MemberCount != 4 || r.JSON200.Members != nil {
			t.Errorf("team: got %+v", r.JSON200)
		}
		wantETag(t, r.HTTPResponse.Header, r.JSON200.Version)
	})
	t.Run("getTeam/include=members", func(t *testing.T) {
		r, err := w.Member.C.GetTeamWithResponse(bg, org, w.Team.Id, &client.GetTeamParams{Include: ptr(client.GetTeamParamsIncludeMembers)})
		mustStatus(t, r, err, http.StatusOK)
		if r.JSON200.Members == nil {
			t.Fatal("members missing with include=members")
		}
		got := map[string]client.Role{}
		for _, m := range *r.JSON200.Members {
			got[m.UserId] = m.Role
		}
		want := map[string]client.Role{w.Owner.ID: client.RoleOwner, w.TeamOwner.ID: client.RoleOwner,
			w.TeamAdmin.ID: client.RoleAdmin, w.TeamMember.ID: client.RoleMember}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("members: got %v, want %v", got, want)
		}
		wantETag(t, r.HTTPResponse.Header, r.JSON200.Version)
	})
	t.Run("updateTeam/by team admin who is an org member", func(t *testing.T) {
		r, err := w.TeamAdmin.C.UpdateTeamWithResponse(bg, org, w.Team.Id, &client.UpdateTeamParams{IfMatch: ptr(etagOf(w.Team.Version))},
			client.TeamUpdate{Description: ptr("the front line")})
		mustStatus(t, r, err, http.StatusOK)
		if r.JSON200.Description != "the front line" || r.JSON200.Name != w.Team.Name || r.JSON200.Version != w.Team.Version+1 {
			t.Errorf("team: got %+v", r.JSON200)
		}
		wantETag(t, r.HTTPResponse.Header, r.JSON200.Version)
		w.Team = *r.JSON200
	})
	t.Run("listTeamMembers", func(t *testing.T) {
		r, err := w.Member.C.ListTeamMembersWithResponse(bg, org, w.Team.Id, nil)
		mustStatus(t, r, err, http.StatusOK)
		if got, want := len(r.JSON200.Items), 4; got != want {
			t.Errorf("items: got %d, want %d", got, want)
		}
		for _, m := range r.JSON200.Items {
			if m.User != nil || m.TeamId != w.Team.Id {
				t.Errorf("member: got %+v", m)
			}
		}
	})
	t.Run("listTeamMembers/expand=user", func(t *testing.T) {
		r, err := w.Member.C.ListTeamMembersWithResponse(bg, org, w.Team.Id, &client.ListTeamMembersParams{Expand: ptr(client.ListTeamMembersParamsExpandUser)})
		mustStatus(t, r, err, http.StatusOK)
		if got, want := len(r.JSON200.Items), 4; got != want {
			t.Errorf("items: got %d, want %d", got, want)
		}
		for _, m := range r.JSON200.Items {
			if m.User == nil || m.User.UserId != m.UserId || m.User.Email == "" {
				t.Errorf("member %s: user not expanded: %+v", m.UserId, m.User)
			}
		}
	})
	t.Run("getTeamMember", func(t *testing.T) {
		r, err := w.Member.C.GetTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID)
		mustStatus(t, r, err, http.StatusOK)
		if m := r.JSON200; m.UserId != w.TeamMember.ID || m.TeamId != w.Team.Id || m.Role != client.RoleMember {
			t.Errorf("membership: got %+v", m)
		}
		wantETag(t, r.HTTPResponse.Header, 1)
	})
	t.Run("putTeamMember/role change", func(t *testing.T) {
		r, err := w.TeamOwner.C.PutTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID,
			&client.PutTeamMemberParams{IfMatch: ptr(etagOf(1))}, client.TeamMemberPut{Role: client.RoleAdmin})
		mustStatus(t, r, err, http.StatusOK)
		if r.JSON200.Role != client.RoleAdmin {
			t.Errorf("role: got %q, want admin", r.JSON200.Role)
		}
		wantETag(t, r.HTTPResponse.Header, 2)
		// Setting the same role again is still 200, and changes nothing.
		r, err = w.TeamOwner.C.PutTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, nil, client.TeamMemberPut{Role: client.RoleAdmin})
		mustStatus(t, r, err, http.StatusOK)
		wantETag(t, r.HTTPResponse.Header, 2)
		r, err = w.TeamOwner.C.PutTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, nil, client.TeamMemberPut{Role: client.RoleMember})
		mustStatus(t, r, err, http.StatusOK)
		wantETag(t, r.HTTPResponse.Header, 3)
	})
	t.Run("getTicket", func(t *testing.T) {
		r, err := w.Member.C.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
		mustStatus(t, r, err, http.StatusOK)
		tk := r.JSON200
		if tk.Id != w.Ticket.Id || tk.Title != w.Ticket.Title || tk.RequesterId != w.Requester.ID || tk.Status != client.TicketStatusNew ||
			tk.Priority != client.TicketPriorityNormal || !slices.Equal(tk.Tags, []string{"hardware"}) ||
			tk.AssigneeId == nil || *tk.AssigneeId != w.Assignee.ID || tk.TeamId == nil || *tk.TeamId != w.Team.Id {
			t.Errorf("ticket: got %+v", tk)
		}
		if tk.Comments != nil || tk.Requester != nil || tk.Assignee != nil {
			t.Errorf("embedded data without include/expand")
		}
		wantETag(t, r.HTTPResponse.Header, tk.Version)
	})
	t.Run("createComment then getTicket/include=comments&expand=requester,assignee", func(t *testing.T) {
		c1 := MustComment(t, w.Member.C, org, w.Ticket.Id, "is it plugged in?")
		c2 := MustComment(t, w.Requester.C, org, w.Ticket.Id, "yes")
		r, err := w.Member.C.GetTicketWithResponse(bg, org, w.Ticket.Id, &client.GetTicketParams{
			Include: ptr(client.GetTicketParamsIncludeComments),
			Expand:  &client.TicketExpand{client.TicketExpansionRequester, client.TicketExpansionAssignee}})
		mustStatus(t, r, err, http.StatusOK)
		tk := r.JSON200
		if tk.Comments == nil {
			t.Fatal("comments missing with include=comments")
		}
		var ids []string
		for _, c := range *tk.Comments {
			ids = append(ids, c.Id)
		}
		if got, want := ids, []string{c1.Id, c2.Id}; !slices.Equal(got, want) {
			t.Errorf("comments (oldest first): got %v, want %v", got, want)
		}
		if got, want := tk.CommentCount, 2; got != want {
			t.Errorf("commentCount: got %d, want %d", got, want)
		}
		if tk.Requester == nil || tk.Requester.UserId != w.Requester.ID || tk.Assignee == nil || tk.Assignee.UserId != w.Assignee.ID {
			t.Errorf("expand: requester %+v assignee %+v", tk.Requester, tk.Assignee)
		}
		wantETag(t, r.HTTPResponse.Header, tk.Version)
		w.Ticket = *tk
	})
	t.Run("listComments", func(t *testing.T) {
		r, err := w.Member.C.ListCommentsWithResponse(bg, org, w.Ticket.Id, nil)
		mustStatus(t, r, err, http.StatusOK)
		if got, want := len(r.JSON200.Items), 2; got != want {
			t.Fatalf("items: got %d, want %d", got, want)
		}
		if c := r.JSON200.Items[0]; c.Body != "is it plugged in?" || c.AuthorId != w.Member.ID || c.TicketId != w.Ticket.Id {
			t.Errorf("comment: got %+v", c)
		}
	})
	t.Run("updateTicket by assignee", func(t *testing.T) {
		r, err := w.Assignee.C.UpdateTicketWithResponse(bg, org, w.Ticket.Id, &client.UpdateTicketParams{IfMatch: ptr(etagOf(w.Ticket.Version))},
			client.UpdateTicketJSONRequestBody{Status: ptr(client.TicketStatusOpen), Priority: ptr(client.TicketPriorityHigh),
				Tags: &[]string{"hardware", "printer"}})
		mustStatus(t, r, err, http.StatusOK)
		tk := r.JSON200
		if tk.Status != client.TicketStatusOpen || tk.Priority != client.TicketPriorityHigh || !slices.Equal(tk.Tags, []string{"hardware", "printer"}) ||
			tk.Version != w.Ticket.Version+1 || tk.CommentCount != 2 || tk.Title != w.Ticket.Title {
			t.Errorf("ticket: got %+v", tk)
		}
		wantETag(t, r.HTTPResponse.Header, tk.Version)
		w.Ticket = *tk
	})
	t.Run("listTickets/status filter", func(t *testing.T) {
		second := MustTicket(t, w.Member.C, org, client.TicketCreate{Title: "second"})
		r, err := w.Member.C.ListTicketsWithResponse(bg, org, nil)
		mustStatus(t, r, err, http.StatusOK)
		if got, want := ticketIDs(r.JSON200.Items), []string{second.Id, w.Ticket.Id}; !slices.Equal(got, want) {
			t.Errorf("all tickets (newest first): got %v, want %v", got, want)
		}
		for status, want := range map[client.TicketStatus][]string{
			client.TicketStatusOpen: {w.Ticket.Id}, client.TicketStatusNew: {second.Id}, client.TicketStatusClosed: nil} {
			r, err := w.Member.C.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Status: ptr(status)})
			mustStatus(t, r, err, http.StatusOK)
			if got := ticketIDs(r.JSON200.Items); !slices.Equal(got, want) {
				t.Errorf("status=%s: got %v, want %v", status, got, want)
			}
		}
		r, err = w.Member.C.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{
			Expand: &client.TicketExpand{client.TicketExpansionRequester, client.TicketExpansionAssignee}})
		mustStatus(t, r, err, http.StatusOK)
		for _, tk := range r.JSON200.Items {
			if tk.Requester == nil || tk.Requester.UserId != tk.RequesterId {
				t.Errorf("ticket %s: requester not expanded", tk.Id)
			}
			if (tk.AssigneeId != nil) != (tk.Assignee != nil) {
				t.Errorf("ticket %s: assignee expanded %v for assigneeId %v", tk.Id, tk.Assignee != nil, tk.AssigneeId)
			}
		}
	})
	t.Run("listTeamTickets/status filter", func(t *testing.T) {
		r, err := w.Member.C.ListTeamTicketsWithResponse(bg, org, w.Team.Id, nil)
		mustStatus(t, r, err, http.StatusOK)
		if got, want := ticketIDs(r.JSON200.Items), []string{w.Ticket.Id}; !slices.Equal(got, want) {
			t.Errorf("team tickets: got %v, want %v", got, want)
		}
		r, err = w.Member.C.ListTeamTicketsWithResponse(bg, org, w.Team.Id, &client.ListTeamTicketsParams{Status: ptr(client.TicketStatusOpen),
			Expand: &client.TicketExpand{client.TicketExpansionRequester}})
		mustStatus(t, r, err, http.StatusOK)
		if got, want := ticketIDs(r.JSON200.Items), []string{w.Ticket.Id}; !slices.Equal(got, want) {
			t.Fatalf("status=open: got %v, want %v", got, want)
		}
		if tk := r.JSON200.Items[0]; tk.Requester == nil || tk.Assignee != nil {
			t.Errorf("expand=requester: requester %+v assignee %+v", tk.Requester, tk.Assignee)
		}
		r, err = w.Member.C.ListTeamTicketsWithResponse(bg, org, w.Team.Id, &client.ListTeamTicketsParams{Status: ptr(client.TicketStatusNew)})
		mustStatus(t, r, err, http.StatusOK)
		if got := ticketIDs(r.JSON200.Items); len(got) != 0 {
			t.Errorf("status=new: got %v, want none", got)
		}
	})
	t.Run("updateTicket/null unassigns and unroutes", func(t *testing.T) {
		body := client.UpdateTicketJSONRequestBody{AssigneeId: nullable.NewNullNullable[string](), TeamId: nullable.NewNullNullable[string]()}
		r, err := w.Requester.C.UpdateTicketWithResponse(bg, org, w.Ticket.Id, nil, body)
		mustStatus(t, r, err, http.StatusOK)
		if r.JSON200.AssigneeId != nil || r.JSON200.TeamId != nil {
			t.Errorf("ticket still assigned/routed: %+v", r.JSON200)
		}
		la, err := w.Member.C.ListAssignedTicketsWithResponse(bg, org, w.Assignee.ID, nil)
		mustStatus(t, la, err, http.StatusOK)
		if got := ticketIDs(la.JSON200.Items); len(got) != 0 {
			t.Errorf("assigned tickets after unassign: %v", got)
		}
		lt, err := w.Member.C.ListTeamTicketsWithResponse(bg, org, w.Team.Id, nil)
		mustStatus(t, lt, err, http.StatusOK)
		if got := ticketIDs(lt.JSON200.Items); len(got) != 0 {
			t.Errorf("team tickets after unrouting: %v", got)
		}
		// And back: assign and route again.
		body = client.UpdateTicketJSONRequestBody{AssigneeId: nullable.NewNullableWithValue(w.Assignee.ID), TeamId: nullable.NewNullableWithValue(w.Team.Id)}
		r, err = w.Requester.C.UpdateTicketWithResponse(bg, org, w.Ticket.Id, nil, body)
		mustStatus(t, r, err, http.StatusOK)
		if r.JSON200.AssigneeId == nil || *r.JSON200.AssigneeId != w.Assignee.ID || r.JSON200.TeamId == nil || *r.JSON200.TeamId != w.Team.Id {
			t.Errorf("ticket not reassigned: %+v", r.JSON200)
		}
	})
	t.Run("listInvitations", func(t *testing.T) {
		inv := MustInvitation(t, owner, org, "listed@example.com", client.RoleAdmin, w.Team.Id)
		r, err := w.Admin.C.ListInvitationsWithResponse(bg, org, nil)
		mustStatus(t, r, err, http.StatusOK)
		if got := len(r.JSON200.Items); got != 1 {
			t.Fatalf("items: got %d, want 1", got)
		}
		it := r.JSON200.Items[0]
		if it.Id != inv.Id || it.Email != "listed@example.com" || it.Role != client.RoleAdmin || !slices.Equal(it.TeamIds, []string{w.Team.Id}) || it.InvitedBy != w.Owner.ID {
			t.Errorf("invitation: got %+v", it)
		}
		if bytes.Contains(r.Body, []byte(inv.Token)) || bytes.Contains(r.Body, []byte(`"token"`)) {
			t.Errorf("the listing shows the one-time token: %s", r.Body)
		}
		rv, err := owner.RevokeInvitationWithResponse(bg, org, inv.Id)
		mustStatus(t, rv, err, http.StatusNoContent)
	})
	t.Run("listAuditEvents", func(t *testing.T) {
		u, err := w.Requester.C.UpdateTicketWithResponse(bg, org, w.Ticket.Id, nil, client.UpdateTicketJSONRequestBody{Priority: ptr(client.TicketPriorityUrgent)})
		mustStatus(t, u, err, http.StatusOK)
		requestID := u.HTTPResponse.Header.Get("X-Request-Id")
		var evs []client.AuditEvent
		var cursor *string
		for range 20 {
			r, err := w.Admin.C.ListAuditEventsWithResponse(bg, org, &client.ListAuditEventsParams{Limit: ptr(100), Cursor: cursor})
			mustStatus(t, r, err, http.StatusOK)
			evs = append(evs, r.JSON200.Items...)
			if cursor = r.JSON200.NextCursor; cursor == nil {
				break
			}
		}
		if len(evs) == 0 {
			t.Fatal("no audit events")
		}
		for i := 1; i < len(evs); i++ {
			if evs[i].At.After(evs[i-1].At) {
				t.Errorf("events not newest first: %s at %s after %s at %s", evs[i].Action, evs[i].At, evs[i-1].Action, evs[i-1].At)
			}
		}
		ev := evs[0]
		if ev.Action != "ticket.update" || ev.TargetId != w.Ticket.Id || ev.ActorId != w.Requester.ID || ev.RequestId != requestID {
			t.Errorf("newest event: got %+v, want ticket.update of %s by %s in request %s", ev, w.Ticket.Id, w.Requester.ID, requestID)
		}
		found := false
		for _, ch := range ev.Changes {
			if ch.Field == "priority" {
				found = true
				if got, _ := ch.After.Get(); got != "urgent" {
					t.Errorf("priority after: got %v, want urgent", got)
				}
			}
		}
		if !found {
			t.Errorf("changes lack priority: %+v", ev.Changes)
		}
		actions := map[string]bool{}
		for _, ev := range evs {
			actions[ev.Action] = true
		}
		for _, a := range []string{"org.create", "org.update", "user.add", "user.update", "team.create", "team.update", "member.add", "member.update",
			"ticket.create", "ticket.update", "comment.create", "invitation.create", "invitation.revoke"} {
			if !actions[a] {
				t.Errorf("no %s event in the audit log", a)
			}
		}
	})
	t.Run("user ids with special characters", func(t *testing.T) {
		for _, id := range []string{"auth0|5f7c8ec7c33c6c004bbafe82", "google-oauth2|1234567890", "a.b_c~d:e@f+g=h-i"} {
			t.Run(id, func(t *testing.T) {
				a := ts.ActorWithID(t, id)
				MustUser(t, owner, org, a, client.RoleMember)
				g, err := a.C.GetOrgUserWithResponse(bg, org, id)
				mustStatus(t, g, err, http.StatusOK)
				if got := g.JSON200.UserId; got != id {
					t.Errorf("userId: got %q, want %q", got, id)
				}
				me, err := a.C.GetMeWithResponse(bg)
				mustStatus(t, me, err, http.StatusOK)
				if got := me.JSON200.UserId; got != id || len(me.JSON200.Orgs) != 1 {
					t.Errorf("me: got %+v", me.JSON200)
				}
				MustMember(t, owner, org, w.Team.Id, id, client.RoleMember)
				m, err := a.C.GetTeamMemberWithResponse(bg, org, w.Team.Id, id)
				mustStatus(t, m, err, http.StatusOK)
				ut, err := a.C.ListUserTeamsWithResponse(bg, org, id, nil)
				mustStatus(t, ut, err, http.StatusOK)
				if got := len(ut.JSON200.Items); got != 1 {
					t.Errorf("teams: got %d, want 1", got)
				}
				var mine, theirs []string
				for i := range 3 {
					mine = append([]string{MustTicket(t, a.C, org, client.TicketCreate{Title: fmt.Sprintf("%s %d", id, i)}).Id}, mine...)
					theirs = append([]string{MustTicket(t, owner, org, client.TicketCreate{Title: fmt.Sprintf("for %s %d", id, i), AssigneeId: &a.ID}).Id}, theirs...)
				}
				got := followLinks(t, a.HTTP, ts.URL, fmt.Sprintf("/v1/orgs/%s/users/%s/tickets?limit=2&include=user", org, url.PathEscape(id)), nil)
				if !slices.Equal(got, mine) {
					t.Errorf("requested tickets through Link: got %v, want %v", got, mine)
				}
				got = followLinks(t, a.HTTP, ts.URL, fmt.Sprintf("/v1/orgs/%s/users/%s/assigned-tickets?limit=2", org, url.PathEscape(id)), nil)
				if !slices.Equal(got, theirs) {
					t.Errorf("assigned tickets through Link: got %v, want %v", got, theirs)
				}
				u, err := owner.UpdateOrgUserWithResponse(bg, org, id, nil, client.OrgUserUpdate{Name: ptr("Special")})
				mustStatus(t, u, err, http.StatusOK)
				rm, err := owner.RemoveTeamMemberWithResponse(bg, org, w.Team.Id, id, nil)
				mustStatus(t, rm, err, http.StatusNoContent)
				ro, err := a.C.RemoveOrgUserWithResponse(bg, org, id, nil)
				mustStatus(t, ro, err, http.StatusNoContent)
			})
		}
	})
	t.Run("pagination", func(t *testing.T) { testPagination(t, ts, w) })
	ts.requireCovered(t, http.StatusOK)
}

// followLinks GETs path and then every page its Link headers lead to, and
// returns the ids of the items; check, if set, sees each page.
func followLinks(t *testing.T, hc *http.Client, base, path string, check func(t *testing.T, page int, items []map[string]any)) []string {
	t.Helper()
	baseURL, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	next := base + path
	var ids []string
	for pages := 0; next != ""; pages++ {
		if pages > 20 {
			t.Fatal("more than 20 pages")
		}
		resp, err := hc.Get(next)
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Items []map[string]any `json:"items"`
		}
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v", next, resp.StatusCode, err)
		}
		if check != nil {
			check(t, pages, list.Items)
		}
		for _, it := range list.Items {
			ids = append(ids, fmt.Sprint(it["id"]))
		}
		next = ""
		if m := linkRE.FindStringSubmatch(resp.Header.Get("Link")); m != nil {
			ref, err := baseURL.Parse(m[1])
			if err != nil {
				t.Fatalf("Link %q: %v", m[1], err)
			}
			next = ref.String()
		}
	}
	return ids
}

// userIDs are the world's users, sorted.
func (w *world) userIDs() []string {
	ids := []string{w.Owner.ID, w.Admin.ID, w.Member.ID, w.TeamOwner.ID, w.TeamAdmin.ID, w.TeamMember.ID, w.Requester.ID, w.Assignee.ID}
	slices.Sort(ids)
	return ids
}

func ticketIDs(ts []client.Ticket) []string {
	var ids []string
	for _, t := range ts {
		ids = append(ids, t.Id)
	}
	return ids
}

// pageFn fetches one page of up to limit items after cursor (nil = the
// first page) and returns the ids on it, the nextCursor and the headers.
type pageFn func(t *testing.T, limit int, cursor *string) ([]string, *string, http.Header)

var linkRE = regexp.MustCompile(`^<([^>]+)>; rel="next"$`)

// walkN follows nextCursor through every page of limit items and returns
// the ids in order and the number of pages. sparse listings may return
// empty pages with a nextCursor (the spec allows it for them).
func walkN(t *testing.T, fetch pageFn, limit int, sparse bool) ([]string, int) {
	t.Helper()
	var all []string
	seen := map[string]bool{}
	var cursor *string
	for pages := 1; ; pages++ {
		if pages > 50 {
			t.Fatal("more than 50 pages: the cursor does not advance")
		}
		ids, next, h := fetch(t, limit, cursor)
		if len(ids) > limit {
			t.Errorf("page %d: %d items, limit is %d", pages, len(ids), limit)
		}
		for _, id := range ids {
			if seen[id] {
				t.Errorf("page %d: item %s repeats", pages, id)
			}
			seen[id] = true
		}
		all = append(all, ids...)
		link := h.Get("Link")
		if next == nil {
			if link != "" {
				t.Errorf("last page %d has a Link header %q", pages, link)
			}
			return all, pages
		}
		if len(ids) == 0 && !sparse {
			t.Errorf("page %d is empty but has a nextCursor", pages)
		}
		m := linkRE.FindStringSubmatch(link)
		if m == nil {
			t.Fatalf("page %d: Link header %q, want <url>; rel=\"next\"", pages, link)
		}
		u, err := url.Parse(m[1])
		if err != nil {
			t.Fatalf("page %d: Link URL: %v", pages, err)
		}
		if got, want := u.Query().Get("cursor"), *next; got != want {
			t.Errorf("page %d: Link cursor %q, want nextCursor %q", pages, got, want)
		}
		if got, want := u.Query().Get("limit"), fmt.Sprint(limit); got != want {
			t.Errorf("page %d: Link limit %q, want %q", pages, got, want)
		}
		cursor = next
	}
}

func testPagination(t *testing.T, ts *testServer, w *world) {
	org, owner := w.Org.Id, w.Owner.C
	// More of everything: 4 more tickets requested by Requester, assigned
	// to Assignee and routed to Team (3 of them open); a ticket with 5
	// comments; 5 teams with TeamOwner in 3; 5 team members; 5 orgs.
	var mine []string
	for i := range 4 {
		tk := MustTicket(t, w.Requester.C, org, client.TicketCreate{Title: fmt.Sprintf("ticket %d", i), TeamId: &w.Team.Id, AssigneeId: &w.Assignee.ID})
		mine = append(mine, tk.Id)
	}
	for _, id := range mine[:3] {
		r, err := w.Assignee.C.UpdateTicketWithResponse(bg, org, id, nil, client.UpdateTicketJSONRequestBody{Status: ptr(client.TicketStatusPending)})
		mustStatus(t, r, err, http.StatusOK)
	}
	fresh := MustTicket(t, w.Requester.C, org, client.TicketCreate{Title: "for comments"})
	for i := range 5 {
		MustComment(t, w.Member.C, org, fresh.Id, fmt.Sprintf("comment %d", i))
	}
	for i := range 4 {
		tm := MustTeam(t, owner, org, fmt.Sprintf("Team %d", i))
		if i < 2 {
			MustMember(t, owner, org, tm.Id, w.TeamOwner.ID, client.RoleMember)
		}
	}
	MustMember(t, owner, org, w.Team.Id, w.Requester.ID, client.RoleMember)
	for i := range 4 {
		MustOrg(t, owner, fmt.Sprintf("Owner's org %d", i))
	}

	for i := range 3 {
		MustInvitation(t, owner, org, fmt.Sprintf("pending-%d@example.com", i), client.RoleMember)
	}
	cases := []struct {
		name   string
		min    int // at least this many items in all
		fetch  pageFn
		sparse bool // pages may be short, even empty
	}{
		{"listOrgs", 5, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := owner.ListOrgsWithResponse(bg, &client.ListOrgsParams{Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			var ids []string
			for _, m := range r.JSON200.Items {
				ids = append(ids, m.OrgId)
			}
			return ids, r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
		{"listOrgUsers", 8, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListOrgUsersWithResponse(bg, org, &client.ListOrgUsersParams{Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			var ids []string
			for _, u := range r.JSON200.Items {
				ids = append(ids, u.UserId)
			}
			return ids, r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
		{"listUserTeams", 3, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			expand := client.ListUserTeamsParamsExpandTeam
			r, err := w.Member.C.ListUserTeamsWithResponse(bg, org, w.TeamOwner.ID, &client.ListUserTeamsParams{Expand: &expand, Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			var ids []string
			for _, m := range r.JSON200.Items {
				ids = append(ids, m.TeamId)
				if m.TeamName == nil || *m.TeamName == "" {
					t.Errorf("membership of team %s lacks teamName", m.TeamId)
				}
			}
			return ids, r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
		{"listUserTickets", 6, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListUserTicketsWithResponse(bg, org, w.Requester.ID, &client.ListUserTicketsParams{Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			return ticketIDs(r.JSON200.Items), r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
		{"listUserTickets/include=user", 6, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListUserTicketsWithResponse(bg, org, w.Requester.ID,
				&client.ListUserTicketsParams{Limit: &n, Cursor: c, Include: ptr(client.ListUserTicketsParamsIncludeUser)})
			mustStatus(t, r, err, http.StatusOK)
			ids, next, h := ticketIDs(r.JSON200.Items), r.JSON200.NextCursor, r.HTTPResponse.Header
			if c == nil && (r.JSON200.User == nil || r.JSON200.User.UserId != w.Requester.ID) {
				t.Errorf("first page lacks the user: %+v", r.JSON200.User)
			}
			return ids, next, h
		}, false},
		{"listAssignedTickets", 5, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListAssignedTicketsWithResponse(bg, org, w.Assignee.ID, &client.ListAssignedTicketsParams{Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			return ticketIDs(r.JSON200.Items), r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
		{"listTeams", 5, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			var ids []string
			for _, tm := range r.JSON200.Items {
				ids = append(ids, tm.Id)
			}
			return ids, r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
		{"listTeamMembers/expand=user", 5, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListTeamMembersWithResponse(bg, org, w.Team.Id,
				&client.ListTeamMembersParams{Limit: &n, Cursor: c, Expand: ptr(client.ListTeamMembersParamsExpandUser)})
			mustStatus(t, r, err, http.StatusOK)
			var ids []string
			for _, m := range r.JSON200.Items {
				ids = append(ids, m.UserId)
				if m.User == nil {
					t.Errorf("member %s: user not expanded", m.UserId)
				}
			}
			return ids, r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
		{"listTeamTickets", 5, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListTeamTicketsWithResponse(bg, org, w.Team.Id, &client.ListTeamTicketsParams{Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			return ticketIDs(r.JSON200.Items), r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
		{"listTeamTickets/status=pending", 3, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListTeamTicketsWithResponse(bg, org, w.Team.Id, &client.ListTeamTicketsParams{Limit: &n, Cursor: c, Status: ptr(client.TicketStatusPending)})
			mustStatus(t, r, err, http.StatusOK)
			return ticketIDs(r.JSON200.Items), r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
		{"listTickets", 7, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			return ticketIDs(r.JSON200.Items), r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
		{"listTickets/status=pending&expand=requester", 3, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Limit: &n, Cursor: c,
				Status: ptr(client.TicketStatusPending), Expand: &client.TicketExpand{client.TicketExpansionRequester}})
			mustStatus(t, r, err, http.StatusOK)
			ids, next, h := ticketIDs(r.JSON200.Items), r.JSON200.NextCursor, r.HTTPResponse.Header
			for _, tk := range r.JSON200.Items {
				if tk.Requester == nil || tk.Status != client.TicketStatusPending {
					t.Errorf("ticket %s: status %s, requester expanded %v", tk.Id, tk.Status, tk.Requester != nil)
				}
			}
			return ids, next, h
		}, false},
		{"listInvitations", 3, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Admin.C.ListInvitationsWithResponse(bg, org, &client.ListInvitationsParams{Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			var ids []string
			for _, inv := range r.JSON200.Items {
				ids = append(ids, inv.Id)
			}
			return ids, r.JSON200.NextCursor, r.HTTPResponse.Header
		}, true},
		{"listAuditEvents", 20, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := owner.ListAuditEventsWithResponse(bg, org, &client.ListAuditEventsParams{Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			var ids []string
			for _, ev := range r.JSON200.Items {
				ids = append(ids, ev.Id)
			}
			return ids, r.JSON200.NextCursor, r.HTTPResponse.Header
		}, true},
		{"listComments", 5, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListCommentsWithResponse(bg, org, fresh.Id, &client.ListCommentsParams{Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			var ids []string
			for _, cm := range r.JSON200.Items {
				ids = append(ids, cm.Id)
			}
			return ids, r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // reads only
			want, pages := walkN(t, c.fetch, 100, c.sparse)
			if pages != 1 && !c.sparse {
				t.Errorf("limit=100: %d pages for %d items", pages, len(want))
			}
			if len(want) < c.min {
				t.Fatalf("limit=100: %d items, want at least %d", len(want), c.min)
			}
			if got, _ := walkN(t, c.fetch, 2, c.sparse); !slices.Equal(got, want) {
				t.Errorf("items over all pages of 2:\ngot  %v\nwant %v (pages of 100)", got, want)
			}
		})
	}

	// The Link URL itself fetches the next page, keeping limit, status and
	// expand.
	t.Run("follow Link", func(t *testing.T) {
		var want []string
		for _, c := range cases {
			if c.name == "listTickets/status=pending&expand=requester" {
				want, _, _ = c.fetch(t, 100, nil)
			}
		}
		if len(want) < 3 {
			t.Fatalf("pending tickets: %v", want)
		}
		got := followLinks(t, w.Member.HTTP, ts.URL, fmt.Sprintf("/v1/orgs/%s/tickets?status=pending&expand=requester,assignee&limit=2", org),
			func(t *testing.T, page int, items []map[string]any) {
				for _, tk := range items {
					if tk["requester"] == nil || tk["assignee"] == nil || tk["status"] != "pending" {
						t.Errorf("page %d: ticket %v: status %v, requester %v, assignee %v: the Link lost a parameter",
							page, tk["id"], tk["status"], tk["requester"] != nil, tk["assignee"] != nil)
					}
				}
			})
		if !slices.Equal(got, want) {
			t.Errorf("tickets: got %v, want %v", got, want)
		}
	})
}

func TestStatus201(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Initech")
	org := w.Org.Id

	t.Run("createOrg", func(t *testing.T) {
		a := ts.Actor(t, "founder")
		r, err := a.C.CreateOrgWithResponse(bg, nil, client.OrgCreate{Name: "Founded"})
		mustStatus(t, r, err, http.StatusCreated)
		o := r.JSON201
		if o.Name != "Founded" || o.Version != 1 || len(o.Id) != 26 || !o.CreatedAt.Equal(o.UpdatedAt) {
			t.Errorf("org: got %+v", o)
		}
		wantETag(t, r.HTTPResponse.Header, 1)
		u, err := a.C.GetOrgUserWithResponse(bg, o.Id, a.ID)
		mustStatus(t, u, err, http.StatusOK)
		if got := u.JSON200; got.Role != client.RoleOwner || got.Email != a.Email || got.Name != a.Name {
			t.Errorf("creator: got %+v, want an owner with the token's email and name", got)
		}
	})
	t.Run("addOrgUser", func(t *testing.T) {
		a := ts.Actor(t, "hire")
		r, err := w.Admin.C.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: a.ID, Email: a.Email, Name: a.Name, Role: client.RoleAdmin})
		mustStatus(t, r, err, http.StatusCreated)
		if u := r.JSON201; u.UserId != a.ID || u.Email != a.Email || u.Name != a.Name || u.Role != client.RoleAdmin || u.Version != 1 {
			t.Errorf("user: got %+v", u)
		}
		wantETag(t, r.HTTPResponse.Header, 1)
		me, err := a.C.GetMeWithResponse(bg)
		mustStatus(t, me, err, http.StatusOK)
		if got, want := me.JSON200.Orgs, []client.MeOrg{{OrgId: org, Name: w.Org.Name, Role: client.RoleAdmin}}; !slices.Equal(got, want) {
			t.Errorf("the new user's orgs: got %+v, want %+v", got, want)
		}
	})
	t.Run("addOrgUser/owner by owner", func(t *testing.T) {
		a := ts.Actor(t, "coowner")
		r, err := w.Owner.C.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: a.ID, Email: a.Email, Name: a.Name, Role: client.RoleOwner})
		mustStatus(t, r, err, http.StatusCreated)
	})
	t.Run("createTeam", func(t *testing.T) {
		r, err := w.Admin.C.CreateTeamWithResponse(bg, org, nil, client.TeamCreate{Name: "Billing"})
		mustStatus(t, r, err, http.StatusCreated)
		tm := r.JSON201
		if tm.Name != "Billing" || tm.Description != "" || tm.MemberCount != 1 || tm.Version != 1 {
			t.Errorf("team: got %+v", tm)
		}
		wantETag(t, r.HTTPResponse.Header, 1)
		m, err := w.Admin.C.GetTeamMemberWithResponse(bg, org, tm.Id, w.Admin.ID)
		mustStatus(t, m, err, http.StatusOK)
		if m.JSON200.Role != client.RoleOwner {
			t.Errorf("creator's team role: got %q, want owner", m.JSON200.Role)
		}
	})
	t.Run("putTeamMember 201 then 200", func(t *testing.T) {
		r, err := w.TeamAdmin.C.PutTeamMemberWithResponse(bg, org, w.Team.Id, w.Member.ID, nil, client.TeamMemberPut{Role: client.RoleMember})
		mustStatus(t, r, err, http.StatusCreated)
		if m := r.JSON201; m.UserId != w.Member.ID || m.TeamId != w.Team.Id || m.Role != client.RoleMember {
			t.Errorf("membership: got %+v", m)
		}
		wantETag(t, r.HTTPResponse.Header, 1)
		tm, err := w.Member.C.GetTeamWithResponse(bg, org, w.Team.Id, nil)
		mustStatus(t, tm, err, http.StatusOK)
		if got, want := tm.JSON200.MemberCount, 5; got != want {
			t.Errorf("memberCount: got %d, want %d", got, want)
		}

		r, err = w.TeamAdmin.C.PutTeamMemberWithResponse(bg, org, w.Team.Id, w.Member.ID, &client.PutTeamMemberParams{IfMatch: ptr(etagOf(1))},
			client.TeamMemberPut{Role: client.RoleAdmin})
		mustStatus(t, r, err, http.StatusOK)
		if m := r.JSON200; m.Role != client.RoleAdmin {
			t.Errorf("role: got %q, want admin", m.Role)
		}
		wantETag(t, r.HTTPResponse.Header, 2)
		tm, err = w.Member.C.GetTeamWithResponse(bg, org, w.Team.Id, nil)
		mustStatus(t, tm, err, http.StatusOK)
		if got, want := tm.JSON200.MemberCount, 5; got != want {
			t.Errorf("memberCount after a role change: got %d, want %d", got, want)
		}
	})
	t.Run("createTicket", func(t *testing.T) {
		r, err := w.Member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "VPN down", Description: ptr("since 9am"),
			Priority: ptr(client.TicketPriorityUrgent), TeamId: &w.Team.Id, AssigneeId: &w.Assignee.ID, Tags: &[]string{"net", "vpn"}})
		mustStatus(t, r, err, http.StatusCreated)
		tk := r.JSON201
		if tk.Title != "VPN down" || tk.Description != "since 9am" || tk.Priority != client.TicketPriorityUrgent || tk.Status != client.TicketStatusNew ||
			tk.RequesterId != w.Member.ID || tk.AssigneeId == nil || *tk.AssigneeId != w.Assignee.ID || tk.TeamId == nil || *tk.TeamId != w.Team.Id ||
			!slices.Equal(tk.Tags, []string{"net", "vpn"}) || tk.CommentCount != 0 || tk.Version != 1 {
			t.Errorf("ticket: got %+v", tk)
		}
		wantETag(t, r.HTTPResponse.Header, 1)
	})
	t.Run("createTicket/assigned to oneself", func(t *testing.T) {
		r, err := w.Member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "I'll fix it myself", AssigneeId: &w.Member.ID})
		mustStatus(t, r, err, http.StatusCreated)
		if tk := r.JSON201; tk.RequesterId != w.Member.ID || tk.AssigneeId == nil || *tk.AssigneeId != w.Member.ID {
			t.Errorf("ticket: got %+v", tk)
		}
	})
	t.Run("createTicket/defaults", func(t *testing.T) {
		r, err := w.Member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "minimal"})
		mustStatus(t, r, err, http.StatusCreated)
		tk := r.JSON201
		if tk.Priority != client.TicketPriorityNormal || tk.Description != "" || tk.Tags == nil || len(tk.Tags) != 0 || tk.AssigneeId != nil || tk.TeamId != nil {
			t.Errorf("ticket: got %+v", tk)
		}
	})
	t.Run("createInvitation then acceptInvitation", func(t *testing.T) {
		r, err := w.Admin.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "newbie@example.com", Role: client.RoleAdmin,
			TeamIds: &[]string{w.Team.Id}, ExpiresInDays: ptr(3)})
		mustStatus(t, r, err, http.StatusCreated)
		inv := r.JSON201
		if inv.Email != "newbie@example.com" || inv.Role != client.RoleAdmin || !slices.Equal(inv.TeamIds, []string{w.Team.Id}) ||
			inv.InvitedBy != w.Admin.ID || len(inv.Token) < 20 || !inv.ExpiresAt.Equal(inv.CreatedAt.Add(3*24*time.Hour)) {
			t.Errorf("invitation: got %+v", inv)
		}
		newbie := ts.Invitee(t, "newbie", "newbie@example.com")
		a, err := newbie.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		mustStatus(t, a, err, http.StatusCreated)
		if got := a.JSON201; got.OrgId != org || got.User.UserId != newbie.ID || got.User.Email != "newbie@example.com" ||
			got.User.Role != client.RoleAdmin || !slices.Equal(got.TeamIds, []string{w.Team.Id}) {
			t.Errorf("accepted: got %+v", got)
		}
		m, err := newbie.C.GetTeamMemberWithResponse(bg, org, w.Team.Id, newbie.ID)
		mustStatus(t, m, err, http.StatusOK)
		if m.JSON200.Role != client.RoleMember {
			t.Errorf("team role: got %q, want member", m.JSON200.Role)
		}
		tm, err := newbie.C.GetTeamWithResponse(bg, org, w.Team.Id, nil)
		mustStatus(t, tm, err, http.StatusOK)
		if got, want := tm.JSON200.MemberCount, 6; got != want {
			t.Errorf("memberCount: got %d, want %d", got, want)
		}
		again, err := ts.Invitee(t, "late", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		wantProblem(t, again, err, http.StatusNotFound, "")
	})
	t.Run("acceptInvitation/a team deleted meanwhile", func(t *testing.T) {
		gone := MustTeam(t, w.Owner.C, org, "Short-lived team")
		inv := MustInvitation(t, w.Owner.C, org, "two-teams@example.com", client.RoleMember, w.Team.Id, gone.Id)
		d, err := w.Owner.C.DeleteTeamWithResponse(bg, org, gone.Id, nil)
		mustStatus(t, d, err, http.StatusNoContent)
		a, err := ts.Invitee(t, "two-teams", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		mustStatus(t, a, err, http.StatusCreated)
		if got, want := a.JSON201.TeamIds, []string{w.Team.Id}; !slices.Equal(got, want) {
			t.Errorf("teams joined: got %v, want %v", got, want)
		}
	})
	t.Run("acceptInvitation/as owner", func(t *testing.T) {
		boss := ts.Actor(t, "boss")
		o := MustOrg(t, boss.C, "Two owners")
		inv := MustInvitation(t, boss.C, o.Id, "co-owner@example.com", client.RoleOwner)
		co := ts.Invitee(t, "co-owner", "co-owner@example.com")
		a, err := co.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		mustStatus(t, a, err, http.StatusCreated)
		// Two owners now: either may step down, but not both.
		r, err := co.C.UpdateOrgUserWithResponse(bg, o.Id, boss.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleAdmin)})
		mustStatus(t, r, err, http.StatusOK)
		r, err = co.C.UpdateOrgUserWithResponse(bg, o.Id, co.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleAdmin)})
		wantProblem(t, r, err, http.StatusConflict, "last_owner")
	})
	t.Run("createOrg/Idempotency-Key replays", func(t *testing.T) {
		a := ts.Actor(t, "retrier")
		key := &client.CreateOrgParams{IdempotencyKey: ptr("create-once-" + a.ID)}
		r1, err := a.C.CreateOrgWithResponse(bg, key, client.OrgCreate{Name: "Once"})
		mustStatus(t, r1, err, http.StatusCreated)
		r2, err := a.C.CreateOrgWithResponse(bg, key, client.OrgCreate{Name: "Once"})
		mustStatus(t, r2, err, http.StatusCreated)
		if r2.JSON201.Id != r1.JSON201.Id || r2.HTTPResponse.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay: got org %s (replayed %q), want %s replayed", r2.JSON201.Id, r2.HTTPResponse.Header.Get("Idempotent-Replayed"), r1.JSON201.Id)
		}
		l, err := a.C.ListOrgsWithResponse(bg, nil)
		mustStatus(t, l, err, http.StatusOK)
		if got := len(l.JSON200.Items); got != 1 {
			t.Errorf("orgs after a retried create: %d, want 1", got)
		}
	})
	t.Run("createComment", func(t *testing.T) {
		r, err := w.Member.C.CreateCommentWithResponse(bg, org, w.Ticket.Id, nil, client.CommentCreate{Body: "me too"})
		mustStatus(t, r, err, http.StatusCreated)
		if c := r.JSON201; c.Body != "me too" || c.AuthorId != w.Member.ID || c.TicketId != w.Ticket.Id || len(c.Id) != 26 {
			t.Errorf("comment: got %+v", c)
		}
		g, err := w.Member.C.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
		mustStatus(t, g, err, http.StatusOK)
		if got, want := g.JSON200.CommentCount, 1; got != want {
			t.Errorf("commentCount: got %d, want %d", got, want)
		}
	})
	ts.requireCovered(t, http.StatusCreated)
}

func TestStatus204(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Umbrella")
	org := w.Org.Id

	t.Run("removeTeamMember", func(t *testing.T) {
		r, err := w.TeamAdmin.C.RemoveTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, &client.RemoveTeamMemberParams{IfMatch: ptr(etagOf(1))})
		mustStatus(t, r, err, http.StatusNoContent)
		if len(r.Body) != 0 {
			t.Errorf("204 with a body: %q", r.Body)
		}
		g, err := w.Member.C.GetTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID)
		wantProblem(t, g, err, http.StatusNotFound, "")
		tm, err := w.Member.C.GetTeamWithResponse(bg, org, w.Team.Id, nil)
		mustStatus(t, tm, err, http.StatusOK)
		if got, want := tm.JSON200.MemberCount, 3; got != want {
			t.Errorf("memberCount: got %d, want %d", got, want)
		}
	})
	t.Run("removeOrgUser/by admin, with their teams", func(t *testing.T) {
		r, err := w.Admin.C.RemoveOrgUserWithResponse(bg, org, w.TeamAdmin.ID, &client.RemoveOrgUserParams{IfMatch: ptr(etagOf(1))})
		mustStatus(t, r, err, http.StatusNoContent)
		g, err := w.Member.C.GetOrgUserWithResponse(bg, org, w.TeamAdmin.ID)
		wantProblem(t, g, err, http.StatusNotFound, "")
		m, err := w.Member.C.GetTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamAdmin.ID)
		wantProblem(t, m, err, http.StatusNotFound, "")
		tm, err := w.Member.C.GetTeamWithResponse(bg, org, w.Team.Id, nil)
		mustStatus(t, tm, err, http.StatusOK)
		if got, want := tm.JSON200.MemberCount, 2; got != want {
			t.Errorf("memberCount: got %d, want %d", got, want)
		}
		// The removed user is out at once: the next request is a 404.
		o, err := w.TeamAdmin.C.GetOrgWithResponse(bg, org, nil)
		wantProblem(t, o, err, http.StatusNotFound, "")
		// Their email is free again.
		again := w.TeamAdmin
		again.ID = ts.UniqueID("again")
		MustUser(t, w.Owner.C, org, again, client.RoleMember)
	})
	t.Run("removeOrgUser/member removes themself", func(t *testing.T) {
		r, err := w.Member.C.RemoveOrgUserWithResponse(bg, org, w.Member.ID, nil)
		mustStatus(t, r, err, http.StatusNoContent)
		me, err := w.Member.C.GetMeWithResponse(bg)
		mustStatus(t, me, err, http.StatusOK)
		if len(me.JSON200.Orgs) != 0 {
			t.Errorf("orgs after leaving: %+v", me.JSON200.Orgs)
		}
	})
	t.Run("revokeInvitation", func(t *testing.T) {
		inv := MustInvitation(t, w.Admin.C, org, "revoked@example.com", client.RoleMember)
		r, err := w.Admin.C.RevokeInvitationWithResponse(bg, org, inv.Id)
		mustStatus(t, r, err, http.StatusNoContent)
		a, err := ts.Invitee(t, "too-late", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		wantProblem(t, a, err, http.StatusNotFound, "")
		l, err := w.Admin.C.ListInvitationsWithResponse(bg, org, nil)
		mustStatus(t, l, err, http.StatusOK)
		if len(l.JSON200.Items) != 0 {
			t.Errorf("invitations after revoke: %+v", l.JSON200.Items)
		}
	})
	t.Run("deleteTicket by requester", func(t *testing.T) {
		MustComment(t, w.Requester.C, org, w.Ticket.Id, "never mind")
		r, err := w.Requester.C.DeleteTicketWithResponse(bg, org, w.Ticket.Id, &client.DeleteTicketParams{IfMatch: ptr(etagOf(w.Ticket.Version))})
		mustStatus(t, r, err, http.StatusNoContent)
		g, err := w.Owner.C.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
		wantProblem(t, g, err, http.StatusNotFound, "")
		l, err := w.Owner.C.ListCommentsWithResponse(bg, org, w.Ticket.Id, nil)
		if err == nil && l.StatusCode() == http.StatusOK && len(l.JSON200.Items) != 0 {
			t.Errorf("comments of a deleted ticket are still listed: %+v", l.JSON200.Items)
		}
		lt, err := w.Owner.C.ListTicketsWithResponse(bg, org, nil)
		mustStatus(t, lt, err, http.StatusOK)
		if len(lt.JSON200.Items) != 0 {
			t.Errorf("tickets after delete: %v", ticketIDs(lt.JSON200.Items))
		}
	})
	t.Run("deleteTeam by team owner", func(t *testing.T) {
		r, err := w.TeamOwner.C.DeleteTeamWithResponse(bg, org, w.Team.Id, &client.DeleteTeamParams{IfMatch: ptr(etagOf(w.Team.Version))})
		mustStatus(t, r, err, http.StatusNoContent)
		g, err := w.Owner.C.GetTeamWithResponse(bg, org, w.Team.Id, nil)
		wantProblem(t, g, err, http.StatusNotFound, "")
		ut, err := w.Owner.C.ListUserTeamsWithResponse(bg, org, w.TeamOwner.ID, nil)
		mustStatus(t, ut, err, http.StatusOK)
		if len(ut.JSON200.Items) != 0 {
			t.Errorf("team owner's teams after delete: %+v", ut.JSON200.Items)
		}
	})
	t.Run("deleteOrg", func(t *testing.T) {
		other := MustOrg(t, w.Owner.C, "Other of owner")
		r, err := w.Owner.C.DeleteOrgWithResponse(bg, org, &client.DeleteOrgParams{IfMatch: ptr(etagOf(w.Org.Version))})
		mustStatus(t, r, err, http.StatusNoContent)
		for _, a := range []actor{w.Owner, w.Admin, w.Requester} {
			g, err := a.C.GetOrgWithResponse(bg, org, nil)
			wantProblem(t, g, err, http.StatusNotFound, "")
		}
		me, err := w.Owner.C.GetMeWithResponse(bg)
		mustStatus(t, me, err, http.StatusOK)
		if got, want := me.JSON200.Orgs, []client.MeOrg{{OrgId: other.Id, Name: other.Name, Role: client.RoleOwner}}; !slices.Equal(got, want) {
			t.Errorf("owner's orgs after delete: got %+v, want %+v", got, want)
		}
		l, err := w.Admin.C.ListOrgsWithResponse(bg, nil)
		mustStatus(t, l, err, http.StatusOK)
		if len(l.JSON200.Items) != 0 {
			t.Errorf("admin's orgs after delete: %+v", l.JSON200.Items)
		}
	})
	ts.requireCovered(t, http.StatusNoContent)
}

func TestStatus400(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Globex")
	org := w.Org.Id
	owner := w.Owner.C

	// Unknown and read-only properties are refused, and nothing changes.
	type bodyCase struct {
		name string
		do   func(body io.Reader) (statusCoder, error)
		body string
	}
	json := "application/json"
	bodies := []bodyCase{
		{"createOrg/id", func(b io.Reader) (statusCoder, error) { return owner.CreateOrgWithBodyWithResponse(bg, nil, json, b) },
			`{"name":"x","id":"01ARZ3NDEKTSV4RRFFQ69G5FAV"}`},
		{"updateOrg/orgId", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateOrgWithBodyWithResponse(bg, org, nil, json, b)
		}, `{"name":"Hacked","orgId":"01ARZ3NDEKTSV4RRFFQ69G5FAV"}`},
		{"updateOrg/version", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateOrgWithBodyWithResponse(bg, org, nil, json, b)
		}, `{"name":"Hacked","version":99}`},
		{"addOrgUser/version", func(b io.Reader) (statusCoder, error) {
			return owner.AddOrgUserWithBodyWithResponse(bg, org, nil, json, b)
		},
			`{"userId":"sneaky","email":"s@example.com","name":"S","role":"member","version":7}`},
		{"updateOrgUser/userId", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateOrgUserWithBodyWithResponse(bg, org, w.Member.ID, nil, json, b)
		}, `{"name":"Hacked","userId":"someone-else"}`},
		{"createTeam/memberCount", func(b io.Reader) (statusCoder, error) {
			return owner.CreateTeamWithBodyWithResponse(bg, org, nil, json, b)
		},
			`{"name":"Sneaky","memberCount":1000}`},
		{"updateTeam/memberCount", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateTeamWithBodyWithResponse(bg, org, w.Team.Id, nil, json, b)
		}, `{"name":"Hacked","memberCount":1000}`},
		{"updateTeam/id", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateTeamWithBodyWithResponse(bg, org, w.Team.Id, nil, json, b)
		}, `{"name":"Hacked","id":"01ARZ3NDEKTSV4RRFFQ69G5FAV"}`},
		{"putTeamMember/userId", func(b io.Reader) (statusCoder, error) {
			return owner.PutTeamMemberWithBodyWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, nil, json, b)
		}, `{"role":"owner","userId":"someone-else"}`},
		{"createTicket/requesterId", func(b io.Reader) (statusCoder, error) {
			return w.Member.C.CreateTicketWithBodyWithResponse(bg, org, nil, json, b)
		},
			`{"title":"Sneaky","requesterId":"` + w.Owner.ID + `"}`},
		{"createTicket/status", func(b io.Reader) (statusCoder, error) {
			return w.Member.C.CreateTicketWithBodyWithResponse(bg, org, nil, json, b)
		},
			`{"title":"Sneaky","status":"closed"}`},
		{"updateTicket/requesterId", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateTicketWithBodyWithResponse(bg, org, w.Ticket.Id, nil, json, b)
		}, `{"title":"Hacked","requesterId":"` + w.Owner.ID + `"}`},
		{"updateTicket/version", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateTicketWithBodyWithResponse(bg, org, w.Ticket.Id, nil, json, b)
		}, `{"title":"Hacked","version":42}`},
		{"updateTicket/commentCount", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateTicketWithBodyWithResponse(bg, org, w.Ticket.Id, nil, json, b)
		}, `{"title":"Hacked","commentCount":42}`},
		{"createComment/authorId", func(b io.Reader) (statusCoder, error) {
			return w.Member.C.CreateCommentWithBodyWithResponse(bg, org, w.Ticket.Id, nil, json, b)
		}, `{"body":"hi","authorId":"` + w.Owner.ID + `"}`},
		{"createInvitation/orgId", func(b io.Reader) (statusCoder, error) {
			return owner.CreateInvitationWithBodyWithResponse(bg, org, nil, json, b)
		}, `{"email":"x@example.com","role":"member","orgId":"01ARZ3NDEKTSV4RRFFQ69G5FAV"}`},
		{"createInvitation/token", func(b io.Reader) (statusCoder, error) {
			return owner.CreateInvitationWithBodyWithResponse(bg, org, nil, json, b)
		}, `{"email":"x@example.com","role":"member","token":"chosen-by-the-client-0123456789"}`},
		{"createInvitation/expiresInDays=31", func(b io.Reader) (statusCoder, error) {
			return owner.CreateInvitationWithBodyWithResponse(bg, org, nil, json, b)
		}, `{"email":"x@example.com","role":"member","expiresInDays":31}`},
		// Not unknown, but invalid all the same.
		{"updateOrg/empty name", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateOrgWithBodyWithResponse(bg, org, nil, json, b)
		},
			`{"name":""}`},
		{"updateTeam/empty patch", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateTeamWithBodyWithResponse(bg, org, w.Team.Id, nil, json, b)
		}, `{}`},
		{"updateTicket/empty patch", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateTicketWithBodyWithResponse(bg, org, w.Ticket.Id, nil, json, b)
		}, `{}`},
		{"updateTicket/bad status", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateTicketWithBodyWithResponse(bg, org, w.Ticket.Id, nil, json, b)
		}, `{"status":"lost"}`},
		{"updateTicket/duplicate tags", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateTicketWithBodyWithResponse(bg, org, w.Ticket.Id, nil, json, b)
		}, `{"tags":["a","a"]}`},
		{"updateOrgUser/bad email", func(b io.Reader) (statusCoder, error) {
			return owner.UpdateOrgUserWithBodyWithResponse(bg, org, w.Member.ID, nil, json, b)
		}, `{"email":"not an email"}`},
		{"addOrgUser/bad role", func(b io.Reader) (statusCoder, error) {
			return owner.AddOrgUserWithBodyWithResponse(bg, org, nil, json, b)
		},
			`{"userId":"x","email":"x@example.com","name":"X","role":"root"}`},
		{"createTicket/not JSON", func(b io.Reader) (statusCoder, error) {
			return w.Member.C.CreateTicketWithBodyWithResponse(bg, org, nil, json, b)
		},
			`{"title":`},
		{"createTicket/array", func(b io.Reader) (statusCoder, error) {
			return w.Member.C.CreateTicketWithBodyWithResponse(bg, org, nil, json, b)
		},
			`[{"title":"x"}]`},
	}
	snapshot := func(t *testing.T) string {
		t.Helper()
		var b strings.Builder
		g, err := owner.GetOrgWithResponse(bg, org, &client.GetOrgParams{Include: ptr(client.GetOrgParamsIncludeUsers)})
		mustStatus(t, g, err, http.StatusOK)
		b.Write(g.Body)
		tm, err := owner.GetTeamWithResponse(bg, org, w.Team.Id, &client.GetTeamParams{Include: ptr(client.GetTeamParamsIncludeMembers)})
		mustStatus(t, tm, err, http.StatusOK)
		b.Write(tm.Body)
		lt, err := owner.ListTeamsWithResponse(bg, org, nil)
		mustStatus(t, lt, err, http.StatusOK)
		b.Write(lt.Body)
		tk, err := owner.ListTicketsWithResponse(bg, org, nil)
		mustStatus(t, tk, err, http.StatusOK)
		b.Write(tk.Body)
		c, err := owner.GetTicketWithResponse(bg, org, w.Ticket.Id, &client.GetTicketParams{Include: ptr(client.GetTicketParamsIncludeComments)})
		mustStatus(t, c, err, http.StatusOK)
		b.Write(c.Body)
		o, err := owner.ListOrgsWithResponse(bg, nil)
		mustStatus(t, o, err, http.StatusOK)
		b.Write(o.Body)
		inv, err := owner.ListInvitationsWithResponse(bg, org, nil)
		mustStatus(t, inv, err, http.StatusOK)
		b.Write(inv.Body)
		return b.String()
	}
	for _, c := range bodies {
		t.Run("body/"+c.name, func(t *testing.T) {
			before := snapshot(t)
			r, err := c.do(strings.NewReader(c.body))
			wantProblem(t, r, err, http.StatusBadRequest, "")
			if after := snapshot(t); after != before {
				t.Errorf("a refused request changed data:\nbefore %s\nafter  %s", before, after)
			}
		})
	}

	// Invalid IDs never reach DynamoDB.
	overflow := "8" + strings.Repeat("0", 25) // 26 Crockford characters, beyond 128 bits
	ids := []struct {
		name string
		do   func() (statusCoder, error)
	}{
		{"orgId a#b", func() (statusCoder, error) { return owner.GetOrgWithResponse(bg, "a#b", nil) }},
		{"orgId lowercase ULID", func() (statusCoder, error) { return owner.GetOrgWithResponse(bg, strings.ToLower(org), nil) }},
		{"orgId too short", func() (statusCoder, error) { return owner.ListTeamsWithResponse(bg, org[:25], nil) }},
		{"orgId with I", func() (statusCoder, error) { return owner.ListTeamsWithResponse(bg, "I"+org[1:], nil) }},
		{"orgId overflowing ULID", func() (statusCoder, error) { return owner.GetOrgWithResponse(bg, overflow, nil) }},
		{"orgId key injection", func() (statusCoder, error) { return owner.GetOrgWithResponse(bg, org+"#USER#x", nil) }},
		{"teamId a#b", func() (statusCoder, error) { return owner.GetTeamWithResponse(bg, org, "a#b", nil) }},
		{"teamId lowercase ULID", func() (statusCoder, error) {
			return owner.GetTeamWithResponse(bg, org, strings.ToLower(w.Team.Id), nil)
		}},
		{"teamId overflowing ULID", func() (statusCoder, error) { return owner.GetTeamWithResponse(bg, org, overflow, nil) }},
		{"ticketId a#b", func() (statusCoder, error) { return owner.GetTicketWithResponse(bg, org, "a#b", nil) }},
		{"ticketId lowercase ULID", func() (statusCoder, error) {
			return owner.DeleteTicketWithResponse(bg, org, strings.ToLower(w.Ticket.Id), nil)
		}},
		{"ticketId overflowing ULID", func() (statusCoder, error) { return owner.GetTicketWithResponse(bg, org, overflow, nil) }},
		{"userId a#b", func() (statusCoder, error) { return owner.GetOrgUserWithResponse(bg, org, "a#b") }},
		{"userId 129 chars", func() (statusCoder, error) { return owner.GetOrgUserWithResponse(bg, org, strings.Repeat("u", 129)) }},
		{"userId 129 chars in team member", func() (statusCoder, error) {
			return owner.PutTeamMemberWithResponse(bg, org, w.Team.Id, strings.Repeat("u", 129), nil, client.TeamMemberPut{Role: client.RoleMember})
		}},
		{"userId with space", func() (statusCoder, error) { return owner.ListUserTicketsWithResponse(bg, org, "a b", nil) }},
		{"userId with slash", func() (statusCoder, error) { return owner.RemoveOrgUserWithResponse(bg, org, "a/b", nil) }},
		{"invitationId lowercase ULID", func() (statusCoder, error) {
			return owner.RevokeInvitationWithResponse(bg, org, strings.ToLower(w.Team.Id))
		}},
		{"invitationId a#b", func() (statusCoder, error) { return owner.RevokeInvitationWithResponse(bg, org, "a#b") }},
		{"invitation token too short", func() (statusCoder, error) { return owner.AcceptInvitationWithResponse(bg, "short", nil) }},
		{"invitation token with #", func() (statusCoder, error) {
			return owner.AcceptInvitationWithResponse(bg, org+"."+org+"#"+strings.Repeat("x", 43), nil)
		}},
		{"teamId in createInvitation body", func() (statusCoder, error) {
			return owner.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "x@example.com", Role: client.RoleMember, TeamIds: &[]string{"a#b"}})
		}},
		{"teamId in createTicket body", func() (statusCoder, error) {
			return w.Member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "x", TeamId: ptr("a#b")})
		}},
		{"assigneeId in createTicket body", func() (statusCoder, error) {
			return w.Member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "x", AssigneeId: ptr("a#b")})
		}},
	}
	for _, c := range ids {
		t.Run("ids/"+c.name, func(t *testing.T) {
			ts.Rec.Reset()
			r, err := c.do()
			if err != nil {
				t.Fatal(err)
			}
			// An ID with a '/' cannot route: 404 is the router's answer.
			if got := r.StatusCode(); got != http.StatusBadRequest && !(got == http.StatusNotFound && strings.Contains(c.name, "slash")) {
				t.Errorf("status: got %d, want 400: %s", got, r.GetBody())
			}
			if got := ts.Rec.Count(); got != 0 {
				t.Errorf("DynamoDB calls: got %d (%s), want 0", got, ts.Rec.Names())
			}
		})
	}

	// limit and other query parameters.
	for _, c := range []struct {
		name string
		do   func() (statusCoder, error)
	}{
		{"limit=0", func() (statusCoder, error) {
			return owner.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Limit: ptr(0)})
		}},
		{"limit=101", func() (statusCoder, error) {
			return owner.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Limit: ptr(101)})
		}},
		{"limit=-1", func() (statusCoder, error) {
			return owner.ListOrgsWithResponse(bg, &client.ListOrgsParams{Limit: ptr(-1)})
		}},
		{"status=lost", func() (statusCoder, error) {
			return owner.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Status: ptr(client.TicketStatus("lost"))})
		}},
		{"expand=everything", func() (statusCoder, error) {
			return owner.GetTicketWithResponse(bg, org, w.Ticket.Id, &client.GetTicketParams{Expand: &client.TicketExpand{"everything"}})
		}},
		{"include=secrets", func() (statusCoder, error) {
			return owner.GetOrgWithResponse(bg, org, &client.GetOrgParams{Include: ptr(client.GetOrgParamsInclude("secrets"))})
		}},
		{"cursor too long", func() (statusCoder, error) {
			return owner.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Cursor: ptr(strings.Repeat("a", 2049))})
		}},
	} {
		t.Run("query/"+c.name, func(t *testing.T) {
			ts.Rec.Reset()
			r, err := c.do()
			wantProblem(t, r, err, http.StatusBadRequest, "")
			if got := ts.Rec.Count(); got != 0 {
				t.Errorf("DynamoDB calls: got %d (%s), want 0", got, ts.Rec.Names())
			}
		})
	}

	t.Run("createOrg/token without email", func(t *testing.T) {
		c := ts.Client(t, ts.Token(t, ts.UniqueID("noemail"), "", "No Email"))
		r, err := c.CreateOrgWithResponse(bg, nil, client.OrgCreate{Name: "x"})
		wantProblem(t, r, err, http.StatusBadRequest, "email_claim_required")
	})

	// Cursors: tampered, from another org, from another listing, expired.
	for range 3 {
		MustTeam(t, owner, org, ts.UniqueID("team"))
	}
	first, err := owner.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Limit: ptr(1)})
	mustStatus(t, first, err, http.StatusOK)
	if first.JSON200.NextCursor == nil {
		t.Fatal("no nextCursor with limit=1")
	}
	cursor := *first.JSON200.NextCursor
	other := MustOrg(t, owner, "Globex Two")
	for range 2 {
		MustTeam(t, owner, other.Id, ts.UniqueID("team"))
	}
	for _, c := range []struct {
		name string
		do   func() (statusCoder, error)
	}{
		{"tampered signature", func() (statusCoder, error) {
			return owner.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Cursor: ptr(flipLast(cursor))})
		}},
		{"tampered payload", func() (statusCoder, error) {
			return owner.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Cursor: ptr(tamperPayload(t, cursor))})
		}},
		{"garbage", func() (statusCoder, error) {
			return owner.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Cursor: ptr("not-a-cursor")})
		}},
		{"from another org", func() (statusCoder, error) {
			return owner.ListTeamsWithResponse(bg, other.Id, &client.ListTeamsParams{Cursor: &cursor})
		}},
		{"from another listing", func() (statusCoder, error) {
			return owner.ListOrgUsersWithResponse(bg, org, &client.ListOrgUsersParams{Cursor: &cursor})
		}},
		{"from another status filter", func() (statusCoder, error) {
			MustTicket(t, owner, org, client.TicketCreate{Title: "one more"})
			l, err := owner.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Limit: ptr(1), Status: ptr(client.TicketStatusNew)})
			mustStatus(t, l, err, http.StatusOK)
			if l.JSON200.NextCursor == nil {
				t.Fatal("no nextCursor")
			}
			return owner.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Cursor: l.JSON200.NextCursor, Status: ptr(client.TicketStatusOpen)})
		}},
		{"from another team", func() (statusCoder, error) {
			tm := MustTeam(t, owner, org, ts.UniqueID("team"))
			for _, a := range []actor{w.Admin, w.Member} {
				MustMember(t, owner, org, tm.Id, a.ID, client.RoleMember)
			}
			l, err := owner.ListTeamMembersWithResponse(bg, org, tm.Id, &client.ListTeamMembersParams{Limit: ptr(1)})
			mustStatus(t, l, err, http.StatusOK)
			if l.JSON200.NextCursor == nil {
				t.Fatal("no nextCursor")
			}
			return owner.ListTeamMembersWithResponse(bg, org, w.Team.Id, &client.ListTeamMembersParams{Cursor: l.JSON200.NextCursor})
		}},
		{"from another user (listOrgs)", func() (statusCoder, error) {
			l, err := owner.ListOrgsWithResponse(bg, &client.ListOrgsParams{Limit: ptr(1)})
			mustStatus(t, l, err, http.StatusOK)
			if l.JSON200.NextCursor == nil {
				t.Fatal("no nextCursor")
			}
			return w.Admin.C.ListOrgsWithResponse(bg, &client.ListOrgsParams{Cursor: l.JSON200.NextCursor})
		}},
		{"expired", func() (statusCoder, error) {
			ts.Clock.Advance(25 * time.Hour)
			c := ts.Client(t, ts.Token(t, w.Owner.ID, w.Owner.Email, w.Owner.Name))
			return c.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Cursor: &cursor})
		}},
	} {
		t.Run("cursor/"+c.name, func(t *testing.T) {
			r, err := c.do()
			wantProblem(t, r, err, http.StatusBadRequest, "invalid_cursor")
		})
	}
}

func flipLast(s string) string {
	b := []byte(s)
	if b[len(b)-1] == 'A' {
		b[len(b)-1] = 'B'
	} else {
		b[len(b)-1] = 'A'
	}
	return string(b)
}

// tamperPayload rewrites the cursor's payload (keeping its signature).
func tamperPayload(t *testing.T, cursor string) string {
	t.Helper()
	payload, sig, ok := strings.Cut(cursor, ".")
	if !ok {
		return "x" + cursor
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return "x" + cursor
	}
	b = bytes.Replace(b, []byte(`"e":`), []byte(`"e":9`), 1) // a later expiry
	return base64.RawURLEncoding.EncodeToString(b) + "." + sig
}

func TestStatus401(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Hooli")
	now := ts.Clock.Now()
	claims := func(sub string, iat, exp time.Time) httpapi.Claims {
		return httpapi.Claims{Email: "x@example.com", RegisteredClaims: jwt.RegisteredClaims{Subject: sub,
			IssuedAt: jwt.NewNumericDate(iat), ExpiresAt: jwt.NewNumericDate(exp)}}
	}
	algNone, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims(w.Owner.ID, now, now.Add(time.Hour))).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	wrongSecret, err := httpapi.MintHS256("another-secret-another-secret-another-secret", claims(w.Owner.ID, now, now.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	hs384, err := jwt.NewWithClaims(jwt.SigningMethodHS384, claims(w.Owner.ID, now, now.Add(time.Hour))).SignedString([]byte(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	valid := ts.Token(t, w.Owner.ID, w.Owner.Email, w.Owner.Name)
	cases := []struct{ name, header string }{
		{"missing", ""},
		{"garbage", "Bearer garbage"},
		{"not bearer", "Basic " + base64.StdEncoding.EncodeToString([]byte("owner:pw"))},
		{"bearer without token", "Bearer "},
		{"token without scheme", valid},
		{"expired", "Bearer " + ts.mint(t, claims(w.Owner.ID, now.Add(-3*time.Hour), now.Add(-2*time.Hour)))},
		{"no exp", "Bearer " + ts.mint(t, httpapi.Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: w.Owner.ID, IssuedAt: jwt.NewNumericDate(now)}})},
		{"issued in the future", "Bearer " + ts.mint(t, claims(w.Owner.ID, now.Add(time.Hour), now.Add(2*time.Hour)))},
		{"alg none", "Bearer " + algNone},
		{"wrong secret", "Bearer " + wrongSecret},
		{"HS384", "Bearer " + hs384},
		{"tampered payload", "Bearer " + tamperJWT(t, valid)},
		{"invalid sub", "Bearer " + ts.mint(t, claims("a#b", now, now.Add(time.Hour)))},
		{"empty sub", "Bearer " + ts.mint(t, claims("", now, now.Add(time.Hour)))},
	}
	hc := ts.HTTPClient(t, "")
	reqs := []struct{ method, path, body string }{
		{http.MethodGet, "/v1/me", ""},
		{http.MethodGet, "/v1/orgs", ""},
		{http.MethodPost, "/v1/orgs", `{"name":"x"}`},
		{http.MethodGet, "/v1/orgs/" + w.Org.Id, ""},
		{http.MethodDelete, "/v1/orgs/" + w.Org.Id, ""},
		{http.MethodPatch, "/v1/orgs/" + w.Org.Id + "/tickets/" + w.Ticket.Id, `{"title":"x"}`},
		{http.MethodGet, "/v1/orgs/" + w.Org.Id + "/teams/" + w.Team.Id + "/members/" + w.TeamAdmin.ID, ""},
		{http.MethodPost, "/v1/invitations/" + MustInvitation(t, w.Owner.C, w.Org.Id, "unauthenticated@example.com", client.RoleMember).Token + "/accept", ""},
		{http.MethodGet, "/v1/orgs/" + w.Org.Id + "/audit-log", ""},
	}
	for _, c := range cases {
		for _, rq := range reqs {
			t.Run(c.name+"/"+rq.method+" "+rq.path, func(t *testing.T) {
				var body io.Reader
				if rq.body != "" {
					body = strings.NewReader(rq.body)
				}
				req, err := http.NewRequest(rq.method, ts.URL+rq.path, body)
				if err != nil {
					t.Fatal(err)
				}
				if rq.body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				if c.header != "" {
					req.Header.Set("Authorization", c.header)
				}
				ts.Rec.Reset()
				resp, err := hc.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				if got, want := resp.StatusCode, http.StatusUnauthorized; got != want {
					t.Fatalf("status: got %d, want %d: %s", got, want, b)
				}
				if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
					t.Errorf("WWW-Authenticate: got %q, want a Bearer challenge", got)
				}
				if got, want := problemOf(t, b).Code, "invalid_token"; got != want {
					t.Errorf("code: got %q, want %q", got, want)
				}
				if got := ts.Rec.Count(); got != 0 {
					t.Errorf("DynamoDB calls: got %d (%s), want 0", got, ts.Rec.Names())
				}
			})
		}
	}
	t.Run("generated client without token", func(t *testing.T) {
		r, err := ts.Client(t, "").GetMeWithResponse(bg)
		wantProblem(t, r, err, http.StatusUnauthorized, "invalid_token")
		if r.Headers401 == nil || !strings.HasPrefix(r.Headers401.WWWAuthenticate, "Bearer") {
			t.Errorf("WWW-Authenticate: got %+v", r.Headers401)
		}
	})
	t.Run("token within leeway", func(t *testing.T) {
		tok := ts.mint(t, claims(w.Owner.ID, now.Add(-time.Hour), ts.Clock.Now().Add(-10*time.Second)))
		r, err := ts.Client(t, tok).GetMeWithResponse(bg)
		mustStatus(t, r, err, http.StatusOK)
	})
}

// tamperJWT changes the payload's subject while keeping the signature.
func tamperJWT(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["sub"] = "someone-else"
	b, _ = json.Marshal(m)
	parts[1] = base64.RawURLEncoding.EncodeToString(b)
	return strings.Join(parts, ".")
}

func TestStatus403(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Vandelay")
	org := w.Org.Id
	newcomer := func(t *testing.T) actor { t.Helper(); return ts.Actor(t, "newcomer") }
	cases := []struct {
		name string
		do   func(t *testing.T) (statusCoder, error)
		// unchanged re-reads what the request must not have changed.
		check func(t *testing.T)
	}{
		{"member PATCHes org", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.UpdateOrgWithResponse(bg, org, nil, client.OrgUpdate{Name: "Pwned"})
		}, func(t *testing.T) {
			g, err := w.Member.C.GetOrgWithResponse(bg, org, nil)
			mustStatus(t, g, err, http.StatusOK)
			if g.JSON200.Name != w.Org.Name || g.JSON200.Version != w.Org.Version {
				t.Errorf("org changed: %+v", g.JSON200)
			}
		}},
		{"team owner PATCHes org", func(t *testing.T) (statusCoder, error) {
			return w.TeamOwner.C.UpdateOrgWithResponse(bg, org, nil, client.OrgUpdate{Name: "Pwned"})
		}, nil},
		{"admin deletes org", func(t *testing.T) (statusCoder, error) { return w.Admin.C.DeleteOrgWithResponse(bg, org, nil) }, nil},
		{"member creates team", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.CreateTeamWithResponse(bg, org, nil, client.TeamCreate{Name: "Rogue"})
		}, func(t *testing.T) {
			l, err := w.Member.C.ListTeamsWithResponse(bg, org, nil)
			mustStatus(t, l, err, http.StatusOK)
			if len(l.JSON200.Items) != 1 {
				t.Errorf("teams: %d, want 1", len(l.JSON200.Items))
			}
		}},
		{"team owner creates team", func(t *testing.T) (statusCoder, error) {
			return w.TeamOwner.C.CreateTeamWithResponse(bg, org, nil, client.TeamCreate{Name: "Rogue"})
		}, nil},
		{"admin grants owner (add)", func(t *testing.T) (statusCoder, error) {
			a := newcomer(t)
			return w.Admin.C.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: a.ID, Email: a.Email, Name: a.Name, Role: client.RoleOwner})
		}, nil},
		{"admin grants owner (update)", func(t *testing.T) (statusCoder, error) {
			return w.Admin.C.UpdateOrgUserWithResponse(bg, org, w.Member.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleOwner)})
		}, func(t *testing.T) {
			g, err := w.Member.C.GetOrgUserWithResponse(bg, org, w.Member.ID)
			mustStatus(t, g, err, http.StatusOK)
			if g.JSON200.Role != client.RoleMember || g.JSON200.Version != 1 {
				t.Errorf("member changed: %+v", g.JSON200)
			}
		}},
		{"admin grants owner to themself", func(t *testing.T) (statusCoder, error) {
			return w.Admin.C.UpdateOrgUserWithResponse(bg, org, w.Admin.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleOwner)})
		}, nil},
		{"admin demotes owner", func(t *testing.T) (statusCoder, error) {
			return w.Admin.C.UpdateOrgUserWithResponse(bg, org, w.Owner.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleMember)})
		}, nil},
		{"admin removes owner", func(t *testing.T) (statusCoder, error) {
			return w.Admin.C.RemoveOrgUserWithResponse(bg, org, w.Owner.ID, nil)
		}, func(t *testing.T) {
			g, err := w.Member.C.GetOrgUserWithResponse(bg, org, w.Owner.ID)
			mustStatus(t, g, err, http.StatusOK)
		}},
		{"member adds user", func(t *testing.T) (statusCoder, error) {
			a := newcomer(t)
			return w.Member.C.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: a.ID, Email: a.Email, Name: a.Name, Role: client.RoleMember})
		}, nil},
		{"member promotes themself", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.UpdateOrgUserWithResponse(bg, org, w.Member.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleAdmin)})
		}, nil},
		{"member removes another member", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.RemoveOrgUserWithResponse(bg, org, w.Requester.ID, nil)
		}, nil},
		{"team member renames team", func(t *testing.T) (statusCoder, error) {
			return w.TeamMember.C.UpdateTeamWithResponse(bg, org, w.Team.Id, nil, client.TeamUpdate{Name: ptr("Pwned")})
		}, func(t *testing.T) {
			g, err := w.Member.C.GetTeamWithResponse(bg, org, w.Team.Id, nil)
			mustStatus(t, g, err, http.StatusOK)
			if g.JSON200.Name != w.Team.Name || g.JSON200.Version != w.Team.Version {
				t.Errorf("team changed: %+v", g.JSON200)
			}
		}},
		{"team member adds a member", func(t *testing.T) (statusCoder, error) {
			return w.TeamMember.C.PutTeamMemberWithResponse(bg, org, w.Team.Id, w.Member.ID, nil, client.TeamMemberPut{Role: client.RoleMember})
		}, func(t *testing.T) {
			g, err := w.Member.C.GetTeamMemberWithResponse(bg, org, w.Team.Id, w.Member.ID)
			wantProblem(t, g, err, http.StatusNotFound, "")
		}},
		{"team member promotes themself", func(t *testing.T) (statusCoder, error) {
			return w.TeamMember.C.PutTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, nil, client.TeamMemberPut{Role: client.RoleOwner})
		}, nil},
		{"org member deletes team", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.DeleteTeamWithResponse(bg, org, w.Team.Id, nil)
		}, nil},
		{"org member removes a team member", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.RemoveTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, nil)
		}, nil},
		{"member invites", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "friend@example.com", Role: client.RoleMember})
		}, func(t *testing.T) {
			l, err := w.Owner.C.ListInvitationsWithResponse(bg, org, nil)
			mustStatus(t, l, err, http.StatusOK)
			if len(l.JSON200.Items) != 0 {
				t.Errorf("invitations: %+v", l.JSON200.Items)
			}
		}},
		{"admin invites an owner", func(t *testing.T) (statusCoder, error) {
			return w.Admin.C.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "boss@example.com", Role: client.RoleOwner})
		}, nil},
		{"member lists invitations", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.ListInvitationsWithResponse(bg, org, nil)
		}, nil},
		{"team owner revokes an invitation", func(t *testing.T) (statusCoder, error) {
			inv := MustInvitation(t, w.Owner.C, org, "kept@example.com", client.RoleMember)
			return w.TeamOwner.C.RevokeInvitationWithResponse(bg, org, inv.Id)
		}, func(t *testing.T) {
			l, err := w.Owner.C.ListInvitationsWithResponse(bg, org, nil)
			mustStatus(t, l, err, http.StatusOK)
			if len(l.JSON200.Items) != 1 {
				t.Errorf("invitations: %+v", l.JSON200.Items)
			}
		}},
		{"member reads the audit log", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.ListAuditEventsWithResponse(bg, org, nil)
		}, nil},
		{"member updates someone else's ticket", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.UpdateTicketWithResponse(bg, org, w.Ticket.Id, nil, client.UpdateTicketJSONRequestBody{Title: ptr("Pwned")})
		}, func(t *testing.T) {
			g, err := w.Member.C.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
			mustStatus(t, g, err, http.StatusOK)
			if g.JSON200.Title != w.Ticket.Title || g.JSON200.Version != w.Ticket.Version {
				t.Errorf("ticket changed: %+v", g.JSON200)
			}
		}},
		{"assignee deletes ticket", func(t *testing.T) (statusCoder, error) {
			return w.Assignee.C.DeleteTicketWithResponse(bg, org, w.Ticket.Id, nil)
		}, nil},
		{"team member deletes ticket of their team", func(t *testing.T) (statusCoder, error) {
			return w.TeamMember.C.DeleteTicketWithResponse(bg, org, w.Ticket.Id, nil)
		}, func(t *testing.T) {
			g, err := w.Member.C.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
			mustStatus(t, g, err, http.StatusOK)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := c.do(t)
			wantProblem(t, r, err, http.StatusForbidden, "forbidden")
			if c.check != nil {
				c.check(t)
			}
		})
	}
}

func TestStatus404(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Wonka")
	org, c := w.Org.Id, w.Member.C
	unknown := "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	stranger := ts.Actor(t, "stranger")
	cases := []struct {
		name string
		do   func() (statusCoder, error)
	}{
		{"unknown org", func() (statusCoder, error) { return c.GetOrgWithResponse(bg, unknown, nil) }},
		{"org of which the caller is not a member", func() (statusCoder, error) { return stranger.C.GetOrgWithResponse(bg, org, nil) }},
		{"unknown org user", func() (statusCoder, error) { return c.GetOrgUserWithResponse(bg, org, "nobody") }},
		{"update unknown org user", func() (statusCoder, error) {
			return w.Owner.C.UpdateOrgUserWithResponse(bg, org, "nobody", nil, client.OrgUserUpdate{Name: ptr("x")})
		}},
		{"remove unknown org user", func() (statusCoder, error) { return w.Owner.C.RemoveOrgUserWithResponse(bg, org, "nobody", nil) }},
		{"unknown team", func() (statusCoder, error) { return c.GetTeamWithResponse(bg, org, unknown, nil) }},
		{"unknown team with members", func() (statusCoder, error) {
			return c.GetTeamWithResponse(bg, org, unknown, &client.GetTeamParams{Include: ptr(client.GetTeamParamsIncludeMembers)})
		}},
		{"update unknown team", func() (statusCoder, error) {
			return w.Owner.C.UpdateTeamWithResponse(bg, org, unknown, nil, client.TeamUpdate{Name: ptr("x")})
		}},
		{"delete unknown team", func() (statusCoder, error) { return w.Owner.C.DeleteTeamWithResponse(bg, org, unknown, nil) }},
		{"team member who is not in the team", func() (statusCoder, error) {
			return c.GetTeamMemberWithResponse(bg, org, w.Team.Id, w.Member.ID)
		}},
		{"put member into unknown team", func() (statusCoder, error) {
			return w.Owner.C.PutTeamMemberWithResponse(bg, org, unknown, w.Member.ID, nil, client.TeamMemberPut{Role: client.RoleMember})
		}},
		{"remove non-member from team", func() (statusCoder, error) {
			return w.Owner.C.RemoveTeamMemberWithResponse(bg, org, w.Team.Id, w.Member.ID, nil)
		}},
		{"unknown ticket", func() (statusCoder, error) { return c.GetTicketWithResponse(bg, org, unknown, nil) }},
		{"unknown ticket with comments", func() (statusCoder, error) {
			return c.GetTicketWithResponse(bg, org, unknown, &client.GetTicketParams{Include: ptr(client.GetTicketParamsIncludeComments)})
		}},
		{"update unknown ticket", func() (statusCoder, error) {
			return w.Owner.C.UpdateTicketWithResponse(bg, org, unknown, nil, client.UpdateTicketJSONRequestBody{Title: ptr("x")})
		}},
		{"delete unknown ticket", func() (statusCoder, error) { return w.Owner.C.DeleteTicketWithResponse(bg, org, unknown, nil) }},
		{"comment on unknown ticket", func() (statusCoder, error) {
			return c.CreateCommentWithResponse(bg, org, unknown, nil, client.CommentCreate{Body: "hello?"})
		}},
		{"revoke unknown invitation", func() (statusCoder, error) { return w.Owner.C.RevokeInvitationWithResponse(bg, org, unknown) }},
		{"accept unknown token", func() (statusCoder, error) {
			return stranger.C.AcceptInvitationWithResponse(bg, org+"."+unknown+"."+strings.Repeat("x", 43), nil)
		}},
		{"accept a token with a wrong secret", func() (statusCoder, error) {
			inv := MustInvitation(t, w.Owner.C, org, "guessed@example.com", client.RoleMember)
			parts := strings.Split(inv.Token, ".")
			return stranger.C.AcceptInvitationWithResponse(bg, parts[0]+"."+parts[1]+"."+flipLast(parts[2]), nil)
		}},
		{"accept twice", func() (statusCoder, error) {
			inv := MustInvitation(t, w.Owner.C, org, "twice@example.com", client.RoleMember)
			r, err := ts.Invitee(t, "first", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
			mustStatus(t, r, err, http.StatusCreated)
			return ts.Invitee(t, "second", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		}},
		{"accept a replaced invitation", func() (statusCoder, error) {
			old := MustInvitation(t, w.Owner.C, org, "replaced@example.com", client.RoleMember)
			MustInvitation(t, w.Owner.C, org, "replaced@example.com", client.RoleAdmin)
			return stranger.C.AcceptInvitationWithResponse(bg, old.Token, nil)
		}},
		{"accept an invitation to a deleted org", func() (statusCoder, error) {
			o := MustOrg(t, stranger.C, "Vanishing")
			inv := MustInvitation(t, stranger.C, o.Id, "vanishing@example.com", client.RoleMember)
			d, err := stranger.C.DeleteOrgWithResponse(bg, o.Id, nil)
			mustStatus(t, d, err, http.StatusNoContent)
			return ts.Invitee(t, "latecomer", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		}},
		{"orgs of a deleted org", func() (statusCoder, error) {
			o := MustOrg(t, stranger.C, "Short-lived")
			d, err := stranger.C.DeleteOrgWithResponse(bg, o.Id, nil)
			mustStatus(t, d, err, http.StatusNoContent)
			return stranger.C.ListTeamsWithResponse(bg, o.Id, nil)
		}},
	}
	for _, cs := range cases {
		t.Run(cs.name, func(t *testing.T) {
			r, err := cs.do()
			wantProblem(t, r, err, http.StatusNotFound, "")
		})
	}
	t.Run("unknown org and non-member org look the same", func(t *testing.T) {
		a, err := stranger.C.GetOrgWithResponse(bg, org, nil)
		mustStatus(t, a, err, http.StatusNotFound)
		b, err := stranger.C.GetOrgWithResponse(bg, unknown, nil)
		mustStatus(t, b, err, http.StatusNotFound)
		pa, pb := problemOf(t, a.Body), problemOf(t, b.Body)
		if pa.Code != pb.Code || pa.Detail != pb.Detail || pa.Title != pb.Title || pa.Type != pb.Type {
			t.Errorf("distinguishable 404s:\n%+v\n%+v", pa, pb)
		}
	})
	t.Run("unrouted path", func(t *testing.T) {
		resp, err := w.Member.HTTP.Get(ts.URL + "/v1/nothing-here")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got, want := resp.StatusCode, http.StatusNotFound; got != want {
			t.Errorf("status: got %d, want %d", got, want)
		}
	})
	t.Run("accept an expired invitation", func(t *testing.T) {
		inv := MustInvitation(t, w.Owner.C, org, "expired@example.com", client.RoleMember)
		ts.Clock.Advance(8 * 24 * time.Hour)
		late := ts.Invitee(t, "late", inv.Email) // a token minted after the jump
		r, err := late.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		wantProblem(t, r, err, http.StatusNotFound, "")
	})
}

func TestStatus409(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Stark")
	org := w.Org.Id
	owner := w.Owner.C
	cases := []struct {
		name, code string
		do         func(t *testing.T) (statusCoder, error)
	}{
		{"last owner demotes themself", "last_owner", func(t *testing.T) (statusCoder, error) {
			return owner.UpdateOrgUserWithResponse(bg, org, w.Owner.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleAdmin)})
		}},
		{"last owner leaves", "last_owner", func(t *testing.T) (statusCoder, error) {
			return owner.RemoveOrgUserWithResponse(bg, org, w.Owner.ID, nil)
		}},
		{"duplicate email on add", "email_taken", func(t *testing.T) (statusCoder, error) {
			a := ts.Actor(t, "dup")
			return owner.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: a.ID, Email: w.Member.Email, Name: a.Name, Role: client.RoleMember})
		}},
		{"duplicate email on add, other case", "email_taken", func(t *testing.T) (statusCoder, error) {
			a := ts.Actor(t, "dup")
			return owner.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: a.ID, Email: strings.ToUpper(w.Member.Email), Name: a.Name, Role: client.RoleMember})
		}},
		{"duplicate email on update", "email_taken", func(t *testing.T) (statusCoder, error) {
			return owner.UpdateOrgUserWithResponse(bg, org, w.Admin.ID, nil, client.OrgUserUpdate{Email: &w.Member.Email})
		}},
		{"user already in org", "user_exists", func(t *testing.T) (statusCoder, error) {
			return owner.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: w.Member.ID, Email: "other-" + w.Member.Email, Name: "x", Role: client.RoleMember})
		}},
		{"team member who is not in the org", "not_org_member", func(t *testing.T) (statusCoder, error) {
			return w.TeamAdmin.C.PutTeamMemberWithResponse(bg, org, w.Team.Id, "outsider", nil, client.TeamMemberPut{Role: client.RoleMember})
		}},
		{"ticket for an unknown team", "team_not_found", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "x", TeamId: ptr("01ARZ3NDEKTSV4RRFFQ69G5FAV")})
		}},
		{"ticket for an assignee outside the org", "assignee_not_org_member", func(t *testing.T) (statusCoder, error) {
			return w.Member.C.CreateTicketWithResponse(bg, org, nil, client.TicketCreate{Title: "x", AssigneeId: ptr("outsider")})
		}},
		{"reassign to a user outside the org", "assignee_not_org_member", func(t *testing.T) (statusCoder, error) {
			return w.Requester.C.UpdateTicketWithResponse(bg, org, w.Ticket.Id, nil,
				client.UpdateTicketJSONRequestBody{AssigneeId: nullable.NewNullableWithValue("outsider")})
		}},
		{"reroute to an unknown team", "team_not_found", func(t *testing.T) (statusCoder, error) {
			return w.Requester.C.UpdateTicketWithResponse(bg, org, w.Ticket.Id, nil,
				client.UpdateTicketJSONRequestBody{TeamId: nullable.NewNullableWithValue("01ARZ3NDEKTSV4RRFFQ69G5FAV")})
		}},
		{"invitation for a user's email", "email_taken", func(t *testing.T) (statusCoder, error) {
			return owner.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: w.Member.Email, Role: client.RoleMember})
		}},
		{"invitation to an unknown team", "team_not_found", func(t *testing.T) (statusCoder, error) {
			return owner.CreateInvitationWithResponse(bg, org, nil, client.InvitationCreate{Email: "teamless@example.com", Role: client.RoleMember,
				TeamIds: &[]string{"01ARZ3NDEKTSV4RRFFQ69G5FAV"}})
		}},
		{"accepting while already a user", "user_exists", func(t *testing.T) (statusCoder, error) {
			// A user of the org whose org email is not their token's: the
			// invitation to their token's email is theirs, but they are in.
			joined := ts.Invitee(t, "joined", "already@example.com")
			inOrg := joined
			inOrg.Email = "already-in-org@example.com"
			MustUser(t, owner, org, inOrg, client.RoleMember)
			inv := MustInvitation(t, owner, org, "already@example.com", client.RoleMember)
			return joined.C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		}},
		{"accepting an email taken meanwhile", "email_taken", func(t *testing.T) (statusCoder, error) {
			inv := MustInvitation(t, owner, org, "contested@example.com", client.RoleMember)
			first := ts.Actor(t, "first")
			first.Email = "contested@example.com"
			MustUser(t, owner, org, first, client.RoleMember)
			return ts.Invitee(t, "second", inv.Email).C.AcceptInvitationWithResponse(bg, inv.Token, nil)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := c.do(t)
			wantProblem(t, r, err, http.StatusConflict, c.code)
		})
	}
	t.Run("nothing changed", func(t *testing.T) {
		g, err := owner.GetOrgUserWithResponse(bg, org, w.Owner.ID)
		mustStatus(t, g, err, http.StatusOK)
		if g.JSON200.Role != client.RoleOwner || g.JSON200.Version != 1 {
			t.Errorf("owner changed: %+v", g.JSON200)
		}
		a, err := owner.GetOrgUserWithResponse(bg, org, w.Admin.ID)
		mustStatus(t, a, err, http.StatusOK)
		if a.JSON200.Email != w.Admin.Email || a.JSON200.Version != 1 {
			t.Errorf("admin changed: %+v", a.JSON200)
		}
		tk, err := owner.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
		mustStatus(t, tk, err, http.StatusOK)
		if tk.JSON200.Version != w.Ticket.Version || *tk.JSON200.AssigneeId != w.Assignee.ID || *tk.JSON200.TeamId != w.Team.Id {
			t.Errorf("ticket changed: %+v", tk.JSON200)
		}
		tm, err := owner.GetTeamWithResponse(bg, org, w.Team.Id, nil)
		mustStatus(t, tm, err, http.StatusOK)
		if tm.JSON200.MemberCount != 4 {
			t.Errorf("memberCount: %d, want 4", tm.JSON200.MemberCount)
		}
	})
	t.Run("with two owners the first may step down", func(t *testing.T) {
		MustUser(t, owner, org, ts.Actor(t, "second-owner"), client.RoleOwner)
		r, err := owner.UpdateOrgUserWithResponse(bg, org, w.Owner.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleAdmin)})
		mustStatus(t, r, err, http.StatusOK)
	})
}

func TestStatus412(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Cyberdyne")
	org, owner := w.Org.Id, w.Owner.C
	stale := ptr(etagOf(99))
	cases := []struct {
		name string
		do   func() (statusCoder, error)
	}{
		{"updateOrg", func() (statusCoder, error) {
			return owner.UpdateOrgWithResponse(bg, org, &client.UpdateOrgParams{IfMatch: stale}, client.OrgUpdate{Name: "x"})
		}},
		{"updateOrg/not a version", func() (statusCoder, error) {
			return owner.UpdateOrgWithResponse(bg, org, &client.UpdateOrgParams{IfMatch: ptr(`"abc"`)}, client.OrgUpdate{Name: "x"})
		}},
		{"deleteOrg", func() (statusCoder, error) {
			return owner.DeleteOrgWithResponse(bg, org, &client.DeleteOrgParams{IfMatch: stale})
		}},
		{"updateOrgUser", func() (statusCoder, error) {
			return owner.UpdateOrgUserWithResponse(bg, org, w.Member.ID, &client.UpdateOrgUserParams{IfMatch: stale}, client.OrgUserUpdate{Name: ptr("x")})
		}},
		{"removeOrgUser", func() (statusCoder, error) {
			return owner.RemoveOrgUserWithResponse(bg, org, w.Member.ID, &client.RemoveOrgUserParams{IfMatch: stale})
		}},
		{"updateTeam", func() (statusCoder, error) {
			return owner.UpdateTeamWithResponse(bg, org, w.Team.Id, &client.UpdateTeamParams{IfMatch: stale}, client.TeamUpdate{Name: ptr("x")})
		}},
		{"deleteTeam", func() (statusCoder, error) {
			return owner.DeleteTeamWithResponse(bg, org, w.Team.Id, &client.DeleteTeamParams{IfMatch: stale})
		}},
		{"putTeamMember/existing", func() (statusCoder, error) {
			return owner.PutTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, &client.PutTeamMemberParams{IfMatch: stale}, client.TeamMemberPut{Role: client.RoleAdmin})
		}},
		{"putTeamMember/new", func() (statusCoder, error) {
			return owner.PutTeamMemberWithResponse(bg, org, w.Team.Id, w.Member.ID, &client.PutTeamMemberParams{IfMatch: ptr(etagOf(1))}, client.TeamMemberPut{Role: client.RoleMember})
		}},
		{"removeTeamMember", func() (statusCoder, error) {
			return owner.RemoveTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, &client.RemoveTeamMemberParams{IfMatch: stale})
		}},
		{"updateTicket", func() (statusCoder, error) {
			return owner.UpdateTicketWithResponse(bg, org, w.Ticket.Id, &client.UpdateTicketParams{IfMatch: stale}, client.UpdateTicketJSONRequestBody{Title: ptr("x")})
		}},
		{"deleteTicket", func() (statusCoder, error) {
			return owner.DeleteTicketWithResponse(bg, org, w.Ticket.Id, &client.DeleteTicketParams{IfMatch: stale})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := c.do()
			wantProblem(t, r, err, http.StatusPreconditionFailed, "version_mismatch")
		})
	}
	t.Run("nothing changed", func(t *testing.T) {
		g, err := owner.GetOrgWithResponse(bg, org, &client.GetOrgParams{Include: ptr(client.GetOrgParamsIncludeUsers)})
		mustStatus(t, g, err, http.StatusOK)
		if g.JSON200.Version != 1 || g.JSON200.Name != w.Org.Name || len(*g.JSON200.Users) != 8 {
			t.Errorf("org changed: %+v", g.JSON200)
		}
		for _, u := range *g.JSON200.Users {
			if u.Version != 1 {
				t.Errorf("user %s changed: %+v", u.UserId, u)
			}
		}
		tm, err := owner.GetTeamWithResponse(bg, org, w.Team.Id, &client.GetTeamParams{Include: ptr(client.GetTeamParamsIncludeMembers)})
		mustStatus(t, tm, err, http.StatusOK)
		if tm.JSON200.Version != 1 || tm.JSON200.MemberCount != 4 || len(*tm.JSON200.Members) != 4 {
			t.Errorf("team changed: %+v", tm.JSON200)
		}
		for _, m := range *tm.JSON200.Members {
			if m.UserId == w.TeamMember.ID && m.Role != client.RoleMember {
				t.Errorf("team member's role changed: %+v", m)
			}
		}
		tk, err := owner.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
		mustStatus(t, tk, err, http.StatusOK)
		if tk.JSON200.Version != 1 || tk.JSON200.Title != w.Ticket.Title {
			t.Errorf("ticket changed: %+v", tk.JSON200)
		}
	})
	t.Run("lost update", func(t *testing.T) {
		g, err := w.Admin.C.GetOrgWithResponse(bg, org, nil)
		mustStatus(t, g, err, http.StatusOK)
		tag := g.HTTPResponse.Header.Get("ETag")
		r, err := owner.UpdateOrgWithResponse(bg, org, &client.UpdateOrgParams{IfMatch: &tag}, client.OrgUpdate{Name: "First"})
		mustStatus(t, r, err, http.StatusOK)
		r, err = w.Admin.C.UpdateOrgWithResponse(bg, org, &client.UpdateOrgParams{IfMatch: &tag}, client.OrgUpdate{Name: "Second"})
		wantProblem(t, r, err, http.StatusPreconditionFailed, "version_mismatch")
		g, err = w.Admin.C.GetOrgWithResponse(bg, org, nil)
		mustStatus(t, g, err, http.StatusOK)
		if g.JSON200.Name != "First" {
			t.Errorf("name: got %q, want First", g.JSON200.Name)
		}
	})
}

func TestStatus413(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Massive")
	org := w.Org.Id
	big := func() string { return `{"title":"` + strings.Repeat("x", httpapi.MaxBodyBytes) + `"}` }
	cases := []struct {
		name string
		do   func(body io.Reader) (statusCoder, error)
	}{
		{"createOrg", func(b io.Reader) (statusCoder, error) {
			return w.Owner.C.CreateOrgWithBodyWithResponse(bg, nil, "application/json", b)
		}},
		{"updateOrg", func(b io.Reader) (statusCoder, error) {
			return w.Owner.C.UpdateOrgWithBodyWithResponse(bg, org, nil, "application/json", b)
		}},
		{"addOrgUser", func(b io.Reader) (statusCoder, error) {
			return w.Owner.C.AddOrgUserWithBodyWithResponse(bg, org, nil, "application/json", b)
		}},
		{"createTicket", func(b io.Reader) (statusCoder, error) {
			return w.Member.C.CreateTicketWithBodyWithResponse(bg, org, nil, "application/json", b)
		}},
		{"updateTicket", func(b io.Reader) (statusCoder, error) {
			return w.Owner.C.UpdateTicketWithBodyWithResponse(bg, org, w.Ticket.Id, nil, "application/json", b)
		}},
		{"createComment", func(b io.Reader) (statusCoder, error) {
			return w.Member.C.CreateCommentWithBodyWithResponse(bg, org, w.Ticket.Id, nil, "application/json", b)
		}},
		{"createInvitation", func(b io.Reader) (statusCoder, error) {
			return w.Owner.C.CreateInvitationWithBodyWithResponse(bg, org, nil, "application/json", b)
		}},
	}
	for _, c := range cases {
		t.Run(c.name+"/Content-Length", func(t *testing.T) {
			ts.Rec.Reset()
			r, err := c.do(strings.NewReader(big()))
			wantProblem(t, r, err, http.StatusRequestEntityTooLarge, "body_too_large")
			if got := ts.Rec.Count(); got != 0 {
				t.Errorf("DynamoDB calls: got %d (%s), want 0", got, ts.Rec.Names())
			}
		})
		t.Run(c.name+"/chunked", func(t *testing.T) {
			ts.Rec.Reset()
			// A reader of unknown length: the request is sent chunked, with
			// no Content-Length for the server to check up front.
			r, err := c.do(io.MultiReader(strings.NewReader(big())))
			wantProblem(t, r, err, http.StatusRequestEntityTooLarge, "body_too_large")
			if got := ts.Rec.Count(); got != 0 {
				t.Errorf("DynamoDB calls: got %d (%s), want 0", got, ts.Rec.Names())
			}
		})
	}
	t.Run("nothing changed", func(t *testing.T) {
		g, err := w.Owner.C.GetTicketWithResponse(bg, org, w.Ticket.Id, nil)
		mustStatus(t, g, err, http.StatusOK)
		if g.JSON200.Version != 1 || g.JSON200.CommentCount != 0 {
			t.Errorf("ticket changed: %+v", g.JSON200)
		}
	})
}
