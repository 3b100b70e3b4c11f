package httpapi_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantd/tenantd/client"
)

// TestTeam is the behaviour of teams.
func TestTeam(t *testing.T) {
	t.Run("200", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Acme")
		org := w.Org.Id
		spec(t, "listTeams", func(t *testing.T) {
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

		spec(t, "getTeam", func(t *testing.T) {
			r, err := w.Member.C.GetTeamWithResponse(bg, org, w.Team.Id, nil)
			mustStatus(t, r, err, http.StatusOK)
			if r.JSON200.Id != w.Team.Id || r.JSON200.MemberCount != 4 || r.JSON200.Members != nil {
				t.Errorf("team: got %+v", r.JSON200)
			}
			wantETag(t, r.HTTPResponse.Header, r.JSON200.Version)
		})

		spec(t, "getTeam/include=members", func(t *testing.T) {
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

		spec(t, "updateTeam/by team admin who is an org member", func(t *testing.T) {
			r, err := w.TeamAdmin.C.UpdateTeamWithResponse(bg, org, w.Team.Id, &client.UpdateTeamParams{IfMatch: ptr(etagOf(w.Team.Version))},
				client.TeamUpdate{Description: ptr("the front line")})
			mustStatus(t, r, err, http.StatusOK)
			if r.JSON200.Description != "the front line" || r.JSON200.Name != w.Team.Name || r.JSON200.Version != w.Team.Version+1 {
				t.Errorf("team: got %+v", r.JSON200)
			}
			wantETag(t, r.HTTPResponse.Header, r.JSON200.Version)
			w.Team = *r.JSON200
		})
	})
	t.Run("201", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Initech")
		org := w.Org.Id
		spec(t, "createTeam", func(t *testing.T) {
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
	})
	t.Run("204", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Umbrella")
		org := w.Org.Id
		spec(t, "deleteTeam/by the team owner", func(t *testing.T) {
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
	t.Run("400", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Globex")
		org, owner := w.Org.Id, w.Owner.C
		// Unknown and read-only properties are refused, and nothing changes.
		wantRefusedBodies(t, w, []refusedBody{
			{"createTeam/body with memberCount", func(b io.Reader) (statusCoder, error) {
				return owner.CreateTeamWithBodyWithResponse(bg, org, nil, jsonType, b)
			}, `{"name":"Sneaky","memberCount":1000}`},
			{"updateTeam/body with memberCount", func(b io.Reader) (statusCoder, error) {
				return owner.UpdateTeamWithBodyWithResponse(bg, org, w.Team.Id, nil, jsonType, b)
			}, `{"name":"Hacked","memberCount":1000}`},
			{"updateTeam/body with id", func(b io.Reader) (statusCoder, error) {
				return owner.UpdateTeamWithBodyWithResponse(bg, org, w.Team.Id, nil, jsonType, b)
			}, `{"name":"Hacked","id":"01ARZ3NDEKTSV4RRFFQ69G5FAV"}`},
			// Not unknown, but invalid all the same.
			{"updateTeam/an empty patch", func(b io.Reader) (statusCoder, error) {
				return owner.UpdateTeamWithBodyWithResponse(bg, org, w.Team.Id, nil, jsonType, b)
			}, `{}`},
		})
		// Invalid IDs, and invalid query parameters, never reach DynamoDB.
		overflow := "8" + strings.Repeat("0", 25) // 26 Crockford characters, beyond 128 bits
		wantRefused(t, ts, []refusedRequest{
			{"listTeams/orgId too short", func() (statusCoder, error) { return owner.ListTeamsWithResponse(bg, org[:25], nil) }},
			{"listTeams/orgId with I", func() (statusCoder, error) { return owner.ListTeamsWithResponse(bg, "I"+org[1:], nil) }},
			{"getTeam/teamId a#b", func() (statusCoder, error) { return owner.GetTeamWithResponse(bg, org, "a#b", nil) }},
			{"getTeam/teamId a lowercase ULID", func() (statusCoder, error) {
				return owner.GetTeamWithResponse(bg, org, strings.ToLower(w.Team.Id), nil)
			}},
			{"getTeam/teamId an overflowing ULID", func() (statusCoder, error) { return owner.GetTeamWithResponse(bg, org, overflow, nil) }},
			{"listTeams/limit=0", func() (statusCoder, error) {
				return owner.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Limit: ptr(0)})
			}},
			{"listTeams/a cursor too long", func() (statusCoder, error) {
				return owner.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Cursor: ptr(strings.Repeat("a", 2049))})
			}},
		})
		// Cursors: tampered, from another org, expired.
		cursor := teamsCursor(t, ts, w)
		other := MustOrg(t, owner, "Globex Two")
		for range 2 {
			MustTeam(t, owner, other.Id, ts.UniqueID("team"))
		}
		wantInvalidCursors(t, []cursorCase{
			{"listTeams/cursor with a tampered signature", func(t *testing.T) (statusCoder, error) {
				return owner.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Cursor: ptr(flipLast(cursor))})
			}},
			{"listTeams/cursor with a tampered payload", func(t *testing.T) (statusCoder, error) {
				return owner.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Cursor: ptr(tamperPayload(t, cursor))})
			}},
			{"listTeams/garbage cursor", func(t *testing.T) (statusCoder, error) {
				return owner.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Cursor: ptr("not-a-cursor")})
			}},
			{"listTeams/cursor of another org", func(t *testing.T) (statusCoder, error) {
				return owner.ListTeamsWithResponse(bg, other.Id, &client.ListTeamsParams{Cursor: &cursor})
			}},
			// Last: it moves the server's clock a day on.
			{"listTeams/expired cursor", func(t *testing.T) (statusCoder, error) {
				ts.Clock.Advance(25 * time.Hour)
				c := ts.Client(t, ts.Token(t, w.Owner.ID, w.Owner.Email, w.Owner.Name))
				return c.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Cursor: &cursor})
			}},
		})
	})
	t.Run("403", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Vandelay")
		org := w.Org.Id
		wantForbidden(t, []forbiddenCase{
			{"createTeam/member", func(t *testing.T) (statusCoder, error) {
				return w.Member.C.CreateTeamWithResponse(bg, org, nil, client.TeamCreate{Name: "Rogue"})
			}, func(t *testing.T) {
				l, err := w.Member.C.ListTeamsWithResponse(bg, org, nil)
				mustStatus(t, l, err, http.StatusOK)
				if len(l.JSON200.Items) != 1 {
					t.Errorf("teams: %d, want 1", len(l.JSON200.Items))
				}
			}},
			{"createTeam/team owner", func(t *testing.T) (statusCoder, error) {
				return w.TeamOwner.C.CreateTeamWithResponse(bg, org, nil, client.TeamCreate{Name: "Rogue"})
			}, nil},
			{"updateTeam/team member", func(t *testing.T) (statusCoder, error) {
				return w.TeamMember.C.UpdateTeamWithResponse(bg, org, w.Team.Id, nil, client.TeamUpdate{Name: ptr("Pwned")})
			}, func(t *testing.T) {
				g, err := w.Member.C.GetTeamWithResponse(bg, org, w.Team.Id, nil)
				mustStatus(t, g, err, http.StatusOK)
				if g.JSON200.Name != w.Team.Name || g.JSON200.Version != w.Team.Version {
					t.Errorf("team changed: %+v", g.JSON200)
				}
			}},
			{"deleteTeam/org member", func(t *testing.T) (statusCoder, error) {
				return w.Member.C.DeleteTeamWithResponse(bg, org, w.Team.Id, nil)
			}, nil},
		})
	})
	t.Run("404", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Wonka")
		org, c := w.Org.Id, w.Member.C
		unknown := "01ARZ3NDEKTSV4RRFFQ69G5FAV"
		stranger := ts.Actor(t, "stranger")
		wantNotFound(t, []notFoundCase{
			{"getTeam/unknown team", "", func() (statusCoder, error) { return c.GetTeamWithResponse(bg, org, unknown, nil) }},
			{"getTeam/unknown team with members", "", func() (statusCoder, error) {
				return c.GetTeamWithResponse(bg, org, unknown, &client.GetTeamParams{Include: ptr(client.GetTeamParamsIncludeMembers)})
			}},
			{"updateTeam/unknown team", "", func() (statusCoder, error) {
				return w.Owner.C.UpdateTeamWithResponse(bg, org, unknown, nil, client.TeamUpdate{Name: ptr("x")})
			}},
			{"deleteTeam/unknown team", "", func() (statusCoder, error) { return w.Owner.C.DeleteTeamWithResponse(bg, org, unknown, nil) }},
			{"listTeams/a deleted org", "", func() (statusCoder, error) {
				o := MustOrg(t, stranger.C, "Short-lived")
				d, err := stranger.C.DeleteOrgWithResponse(bg, o.Id, nil)
				mustStatus(t, d, err, http.StatusNoContent)
				return stranger.C.ListTeamsWithResponse(bg, o.Id, nil)
			}},
		})
	})
	t.Run("409", func(t *testing.T) {
		g := &gate{}
		ts := MustServer(t, withTransport(g.wrap), withRequestTimeout(time.Minute))
		a := ts.Actor(t, "founder")
		org := MustOrg(t, a.C, "Held").Id
		spec(t, "createTeam/its Idempotency-Key held by a request still running", func(t *testing.T) {
			hc := ts.HTTPClient(t, a.Token)
			wantKeyInUse(t, g, "Held team", func() apiRespE {
				return doReqE(hc, http.MethodPost, ts.URL+"/v1/orgs/"+org+"/teams", "", http.Header{"Idempotency-Key": {"held-team"}}, `{"name":"Held team"}`)
			})
		})
	})
	t.Run("412", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Cyberdyne")
		org, owner := w.Org.Id, w.Owner.C
		stale := ptr(etagOf(99))
		wantStale(t, []staleCase{
			{"updateTeam", func() (statusCoder, error) {
				return owner.UpdateTeamWithResponse(bg, org, w.Team.Id, &client.UpdateTeamParams{IfMatch: stale}, client.TeamUpdate{Name: ptr("x")})
			}},
			{"deleteTeam", func() (statusCoder, error) {
				return owner.DeleteTeamWithResponse(bg, org, w.Team.Id, &client.DeleteTeamParams{IfMatch: stale})
			}},
		})
		t.Run("nothing changed", func(t *testing.T) {
			tm, err := owner.GetTeamWithResponse(bg, org, w.Team.Id, &client.GetTeamParams{Include: ptr(client.GetTeamParamsIncludeMembers)})
			mustStatus(t, tm, err, http.StatusOK)
			if tm.JSON200.Version != 1 || tm.JSON200.MemberCount != 4 || len(*tm.JSON200.Members) != 4 {
				t.Errorf("team changed: %+v", tm.JSON200)
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

	spec(t, "403/updateTeam/taken off the team before the commit", func(t *testing.T) {
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
	spec(t, "403/putTeamMember/taken off the team before the commit", func(t *testing.T) {
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
	spec(t, "403/deleteTeam/taken off the team before the commit", func(t *testing.T) {
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
	spec(t, "403/updateTicket/a member of the ticket's team taken off it before the commit", func(t *testing.T) {
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
