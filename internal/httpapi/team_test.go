package httpapi_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/tenantd/tenantd/client"
)

// TestTeam is the behaviour of teams and their members.
func TestTeam(t *testing.T) {
	t.Run("200", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Acme")
		org := w.Org.Id
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
			r, err := w.Member.C.GetTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, nil)
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
	})
	t.Run("201", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Initech")
		org := w.Org.Id
		t.Run("createTeam", func(t *testing.T) {
			r, err := w.Admin.C.CreateTeamWithResponse(bg, org, nil, client.TeamCreate{Name: "Billing"})
			mustStatus(t, r, err, http.StatusCreated)
			tm := r.JSON201
			if tm.Name != "Billing" || tm.Description != "" || tm.MemberCount != 1 || tm.Version != 1 {
				t.Errorf("team: got %+v", tm)
			}
			wantETag(t, r.HTTPResponse.Header, 1)
			m, err := w.Admin.C.GetTeamMemberWithResponse(bg, org, tm.Id, w.Admin.ID, nil)
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
	})
	t.Run("204", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Umbrella")
		org := w.Org.Id
		t.Run("removeTeamMember", func(t *testing.T) {
			r, err := w.TeamAdmin.C.RemoveTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, &client.RemoveTeamMemberParams{IfMatch: ptr(etagOf(1))})
			mustStatus(t, r, err, http.StatusNoContent)
			if len(r.Body) != 0 {
				t.Errorf("204 with a body: %q", r.Body)
			}
			g, err := w.Member.C.GetTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, nil)
			wantProblem(t, g, err, http.StatusNotFound, "")
			tm, err := w.Member.C.GetTeamWithResponse(bg, org, w.Team.Id, nil)
			mustStatus(t, tm, err, http.StatusOK)
			if got, want := tm.JSON200.MemberCount, 3; got != want {
				t.Errorf("memberCount: got %d, want %d", got, want)
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
	})
}

// TestDeleteTeamRacingPutMember: 20 rounds of 6 PUTs of members racing one
// DELETE of their team. No edge may outlive its team, the users' team sets
// must equal their edges, and every user stays removable; the org's
// offboarding then leaves nothing.
func TestDeleteTeamRacingPutMember(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Team race")
	org := w.Org.Id
	hc := raceClient(t, 8)
	var users []actor
	for range 6 {
		u := ts.Actor(t, "racer")
		MustUser(t, w.Owner.C, org, u, "member")
		users = append(users, u)
	}
	var puts, deletes statusCounts
	for round := range 20 {
		team := MustTeam(t, w.Owner.C, org, fmt.Sprintf("Doomed %d", round))
		parallel(7, func(i int) {
			if i == 6 {
				r := doReqE(hc, http.MethodDelete, ts.URL+"/v1/orgs/"+org+"/teams/"+team.Id, w.Owner.Token, nil, "")
				if r.Err != nil {
					t.Errorf("delete: %v", r.Err)
					return
				}
				deletes.add(r.Status)
				return
			}
			r := doReqE(hc, http.MethodPut, ts.URL+"/v1/orgs/"+org+"/teams/"+team.Id+"/members/"+users[i].ID, w.Owner.Token, nil, `{"role":"member"}`)
			if r.Err != nil {
				t.Errorf("put: %v", r.Err)
				return
			}
			puts.add(r.Status)
			if r.Status != http.StatusCreated && r.Status != http.StatusNotFound {
				t.Errorf("put: %d %s, want 201 or 404", r.Status, r.Body)
			}
		})
	}
	t.Logf("PUT member: %s; DELETE team: %s", &puts, &deletes)
	if deletes.get(http.StatusNoContent) != 20 {
		t.Errorf("DELETE team: %s, want 20 204", &deletes)
	}
	mustHealthy(t, ts)
	for _, u := range users {
		r, err := w.Owner.C.RemoveOrgUserWithResponse(bg, org, u.ID, nil)
		mustStatus(t, r, err, http.StatusNoContent)
	}
	mustHealthy(t, ts)
	r, err := w.Owner.C.DeleteOrgWithResponse(bg, org, nil)
	mustStatus(t, r, err, http.StatusNoContent)
	mustHealthy(t, ts)
	if n := len(itemsOf(t, ts, "Membership", org)); n != 0 {
		t.Errorf("%d memberships of the offboarded org left", n)
	}
}

// TestTeamOwnerRules: a team admin who is only an org member manages the
// team's members but not its owners (making themself owner included); a
// team keeps an owner; only an owner edits an org owner.
func TestTeamOwnerRules(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Owned")
	org, team := w.Org.Id, w.Team.Id
	ta := w.TeamAdmin.C
	r, err := ta.PutTeamMemberWithResponse(bg, org, team, w.TeamAdmin.ID, nil, client.TeamMemberPut{Role: client.RoleOwner})
	wantProblem(t, r, err, http.StatusForbidden, "forbidden")
	r, err = ta.PutTeamMemberWithResponse(bg, org, team, w.TeamOwner.ID, nil, client.TeamMemberPut{Role: client.RoleMember})
	wantProblem(t, r, err, http.StatusForbidden, "forbidden")
	d, err := ta.RemoveTeamMemberWithResponse(bg, org, team, w.TeamOwner.ID, nil)
	wantProblem(t, d, err, http.StatusForbidden, "forbidden")
	// What a team admin may do: manage members.
	r, err = ta.PutTeamMemberWithResponse(bg, org, team, w.Member.ID, nil, client.TeamMemberPut{Role: client.RoleAdmin})
	mustStatus(t, r, err, http.StatusCreated)
	d, err = ta.RemoveTeamMemberWithResponse(bg, org, team, w.Member.ID, nil)
	mustStatus(t, d, err, http.StatusNoContent)
	// The world's team was created by the org owner (its owner) and has
	// the team owner as a second owner: one may go, not both.
	d, err = w.TeamOwner.C.RemoveTeamMemberWithResponse(bg, org, team, w.Owner.ID, nil)
	mustStatus(t, d, err, http.StatusNoContent)
	for _, c := range []*client.ClientWithResponses{w.TeamOwner.C, w.Owner.C, w.Admin.C} {
		d, err = c.RemoveTeamMemberWithResponse(bg, org, team, w.TeamOwner.ID, nil)
		wantProblem(t, d, err, http.StatusConflict, "last_team_owner")
		r, err = c.PutTeamMemberWithResponse(bg, org, team, w.TeamOwner.ID, nil, client.TeamMemberPut{Role: client.RoleAdmin})
		wantProblem(t, r, err, http.StatusConflict, "last_team_owner")
	}
	// Its owner may leave the org only once another member owns the team.
	rm, err := w.Owner.C.RemoveOrgUserWithResponse(bg, org, w.TeamOwner.ID, nil)
	wantProblem(t, rm, err, http.StatusConflict, "last_team_owner")
	r, err = w.TeamOwner.C.PutTeamMemberWithResponse(bg, org, team, w.TeamAdmin.ID, nil, client.TeamMemberPut{Role: client.RoleOwner})
	mustStatus(t, r, err, http.StatusOK)
	rm, err = w.Owner.C.RemoveOrgUserWithResponse(bg, org, w.TeamOwner.ID, nil)
	mustStatus(t, rm, err, http.StatusNoContent)
	// An org admin changes neither an owner's name nor their email.
	u, err := w.Admin.C.UpdateOrgUserWithResponse(bg, org, w.Owner.ID, nil, client.OrgUserUpdate{Name: ptr("Renamed by an admin")})
	wantProblem(t, u, err, http.StatusForbidden, "forbidden")
	u, err = w.Admin.C.UpdateOrgUserWithResponse(bg, org, w.Owner.ID, nil, client.OrgUserUpdate{Email: ptr("taken-over@example.com")})
	wantProblem(t, u, err, http.StatusForbidden, "forbidden")
	u, err = w.Owner.C.UpdateOrgUserWithResponse(bg, org, w.Owner.ID, nil, client.OrgUserUpdate{Name: ptr("Renamed by themself")})
	mustStatus(t, u, err, http.StatusOK)
	mustHealthy(t, ts)
}

// gate holds the DynamoDB transaction whose request body contains marker
// until open is called: a write caught between its authorization read and
// its commit, as a slow or retried transaction is.
type gate struct {
	base   http.RoundTripper
	mu     sync.Mutex
	marker string
	held   chan struct{} // closed when the marked transaction arrives
	open   chan struct{} // closed to let it through
}

func (g *gate) wrap(base http.RoundTripper) http.RoundTripper { g.base = base; return g }

func (g *gate) arm(marker string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.marker, g.held, g.open = marker, make(chan struct{}), make(chan struct{})
}

func (g *gate) RoundTrip(req *http.Request) (*http.Response, error) {
	g.mu.Lock()
	marker, held, open := g.marker, g.held, g.open
	g.mu.Unlock()
	if marker == "" || req.Header.Get("X-Amz-Target") != "DynamoDB_20120810.TransactWriteItems" || req.Body == nil {
		return g.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	if bytes.Contains(body, []byte(marker)) {
		g.mu.Lock()
		if g.marker == marker {
			g.marker = ""
			close(held)
		}
		g.mu.Unlock()
		select {
		case <-open:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	return g.base.RoundTrip(req)
}

// TestTeamFence: a write authorized by the caller's team role (a team
// admin who is only an org member, a member of a ticket's team) commits
// only while that team edge still exists with the role: taken off the team
// between their authorization read and their commit, they get 403 and
// nothing changes. (Found by an outside attack: the org role was
// fenced, the team role was not.)
func TestTeamFence(t *testing.T) {
	g := &gate{}
	ts := MustServer(t, withTransport(g.wrap))
	w := MustWorld(t, ts, "Fenced")
	org, owner := w.Org.Id, w.Owner.C
	x := ts.Actor(t, "x")
	MustUser(t, owner, org, x, client.RoleMember)
	z := ts.Actor(t, "z")
	MustUser(t, owner, org, z, client.RoleMember)

	// caught runs write as x with the transaction held at marker while
	// x's edge in team is removed, and returns x's answer.
	caught := func(t *testing.T, team, marker string, write func() statusCoder) statusCoder {
		t.Helper()
		g.arm(marker)
		done := make(chan statusCoder, 1)
		go func() { done <- write() }()
		select {
		case <-g.held:
		case <-time.After(10 * time.Second):
			t.Fatal("the write's transaction never came")
		}
		r, err := owner.RemoveTeamMemberWithResponse(bg, org, team, x.ID, nil)
		mustStatus(t, r, err, http.StatusNoContent)
		close(g.open)
		return <-done
	}
	teamWithX := func(t *testing.T, role client.Role) client.Team {
		tm := MustTeam(t, owner, org, ts.UniqueID("fenced team"))
		MustMember(t, owner, org, tm.Id, x.ID, role)
		return tm
	}

	t.Run("403/updateTeam", func(t *testing.T) {
		tm := teamWithX(t, client.RoleAdmin)
		r := caught(t, tm.Id, "renamed by x", func() statusCoder {
			r, err := x.C.UpdateTeamWithResponse(bg, org, tm.Id, nil, client.TeamUpdate{Name: ptr("renamed by x")})
			if err != nil {
				t.Error(err)
			}
			return r
		})
		wantProblem(t, r, nil, http.StatusForbidden, "team_role_changed")
		if got, err := owner.GetTeamWithResponse(bg, org, tm.Id, nil); err != nil || got.JSON200 == nil || got.JSON200.Name != tm.Name {
			t.Errorf("the team was renamed after all: %v %+v", err, got.JSON200)
		}
	})
	t.Run("403/putTeamMember", func(t *testing.T) {
		tm := teamWithX(t, client.RoleAdmin)
		r := caught(t, tm.Id, "MEMBER#"+z.ID, func() statusCoder {
			r, err := x.C.PutTeamMemberWithResponse(bg, org, tm.Id, z.ID, nil, client.TeamMemberPut{Role: client.RoleAdmin})
			if err != nil {
				t.Error(err)
			}
			return r
		})
		wantProblem(t, r, nil, http.StatusForbidden, "team_role_changed")
		m, err := owner.GetTeamMemberWithResponse(bg, org, tm.Id, z.ID, nil)
		wantProblem(t, m, err, http.StatusNotFound, "")
	})
	t.Run("403/deleteTeam", func(t *testing.T) {
		tm := teamWithX(t, client.RoleOwner)
		MustMember(t, owner, org, tm.Id, w.Owner.ID, client.RoleOwner) // so x's edge can go
		r := caught(t, tm.Id, "ORG#"+org+"#TEAM#"+tm.Id, func() statusCoder {
			r, err := x.C.DeleteTeamWithResponse(bg, org, tm.Id, nil)
			if err != nil {
				t.Error(err)
			}
			return r
		})
		wantProblem(t, r, nil, http.StatusForbidden, "team_role_changed")
		got, err := owner.GetTeamWithResponse(bg, org, tm.Id, nil)
		mustStatus(t, got, err, http.StatusOK)
	})
	t.Run("403/updateTicket by a member of the ticket's team", func(t *testing.T) {
		tm := teamWithX(t, client.RoleMember)
		tk := MustTicket(t, w.Requester.C, org, client.TicketCreate{Title: "routed", TeamId: &tm.Id})
		r := caught(t, tm.Id, "retitled by x", func() statusCoder {
			r, err := x.C.UpdateTicketWithResponse(bg, org, tk.Id, nil, client.UpdateTicketJSONRequestBody{Title: ptr("retitled by x")})
			if err != nil {
				t.Error(err)
			}
			return r
		})
		wantProblem(t, r, nil, http.StatusForbidden, "team_role_changed")
		got, err := owner.GetTicketWithResponse(bg, org, tk.Id, nil)
		mustStatus(t, got, err, http.StatusOK)
		if got.JSON200.Title != "routed" {
			t.Errorf("ticket retitled after x left the team: %q", got.JSON200.Title)
		}
	})
	mustHealthy(t, ts)
}
