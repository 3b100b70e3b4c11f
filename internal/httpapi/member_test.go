package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tenantd/tenantd/client"
)

// TestMember is the behaviour of a team's members (and of a user's teams).
func TestMember(t *testing.T) {
	t.Run("200", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Acme")
		org := w.Org.Id
		spec(t, "listUserTeams", func(t *testing.T) {
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

		spec(t, "listTeamMembers", func(t *testing.T) {
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

		spec(t, "listTeamMembers/expand=user", func(t *testing.T) {
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

		spec(t, "getTeamMember", func(t *testing.T) {
			r, err := w.Member.C.GetTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, nil)
			mustStatus(t, r, err, http.StatusOK)
			if m := r.JSON200; m.UserId != w.TeamMember.ID || m.TeamId != w.Team.Id || m.Role != client.RoleMember {
				t.Errorf("membership: got %+v", m)
			}
			wantETag(t, r.HTTPResponse.Header, 1)
		})

		spec(t, "putTeamMember/role change", func(t *testing.T) {
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
		spec(t, "putTeamMember/201 then 200", func(t *testing.T) {
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
		spec(t, "removeTeamMember", func(t *testing.T) {
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
	})
	t.Run("400", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Globex")
		org, owner := w.Org.Id, w.Owner.C
		// Unknown and read-only properties are refused, and nothing changes.
		wantRefusedBodies(t, w, []refusedBody{
			{"putTeamMember/body with userId", func(b io.Reader) (statusCoder, error) {
				return owner.PutTeamMemberWithBodyWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, nil, jsonType, b)
			}, `{"role":"owner","userId":"someone-else"}`},
		})
		// Invalid IDs never reach DynamoDB.
		wantRefused(t, ts, []refusedRequest{
			{"putTeamMember/userId of 129 characters", func() (statusCoder, error) {
				return owner.PutTeamMemberWithResponse(bg, org, w.Team.Id, strings.Repeat("u", 129), nil, client.TeamMemberPut{Role: client.RoleMember})
			}},
		})
		// A cursor of another team's members.
		wantInvalidCursors(t, []cursorCase{
			{"listTeamMembers/cursor of another team", func(t *testing.T) (statusCoder, error) {
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
		})
	})
	t.Run("403", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Vandelay")
		org := w.Org.Id
		wantForbidden(t, []forbiddenCase{
			{"putTeamMember/team member adds a member", func(t *testing.T) (statusCoder, error) {
				return w.TeamMember.C.PutTeamMemberWithResponse(bg, org, w.Team.Id, w.Member.ID, nil, client.TeamMemberPut{Role: client.RoleMember})
			}, func(t *testing.T) {
				g, err := w.Member.C.GetTeamMemberWithResponse(bg, org, w.Team.Id, w.Member.ID, nil)
				wantProblem(t, g, err, http.StatusNotFound, "")
			}},
			{"putTeamMember/team member promotes themself", func(t *testing.T) (statusCoder, error) {
				return w.TeamMember.C.PutTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, nil, client.TeamMemberPut{Role: client.RoleOwner})
			}, nil},
			{"removeTeamMember/org member", func(t *testing.T) (statusCoder, error) {
				return w.Member.C.RemoveTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, nil)
			}, nil},
		})
	})
	t.Run("404", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Wonka")
		org, c := w.Org.Id, w.Member.C
		unknown := "01ARZ3NDEKTSV4RRFFQ69G5FAV"
		// A listing under a team or user that does not exist in the org is
		// 404 like the resource itself (an existence read happens only
		// when the page is empty).
		gone := MustTeam(t, w.Owner.C, org, "Gone")
		d, err := w.Owner.C.DeleteTeamWithResponse(bg, org, gone.Id, nil)
		mustStatus(t, d, err, http.StatusNoContent)
		wantNotFound(t, []notFoundCase{
			{"getTeamMember/a user who is not in the team", "", func() (statusCoder, error) {
				return c.GetTeamMemberWithResponse(bg, org, w.Team.Id, w.Member.ID, nil)
			}},
			{"putTeamMember/unknown team", "", func() (statusCoder, error) {
				return w.Owner.C.PutTeamMemberWithResponse(bg, org, unknown, w.Member.ID, nil, client.TeamMemberPut{Role: client.RoleMember})
			}},
			{"removeTeamMember/a user who is not in the team", "", func() (statusCoder, error) {
				return w.Owner.C.RemoveTeamMemberWithResponse(bg, org, w.Team.Id, w.Member.ID, nil)
			}},
			{"listTeamMembers/a deleted team", "team_not_found", func() (statusCoder, error) { return c.ListTeamMembersWithResponse(bg, org, gone.Id, nil) }},
			{"listUserTeams/a user not in the org", "user_not_found", func() (statusCoder, error) {
				return c.ListUserTeamsWithResponse(bg, org, "not.a.member", nil)
			}},
		})
	})
	t.Run("409", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Stark")
		org, owner := w.Org.Id, w.Owner.C
		// A team whose creator is its only owner.
		sole := MustTeam(t, owner, org, "Sole owner")
		wantConflicts(t, []conflictCase{
			{"putTeamMember/a user who is not in the org", "not_org_member", func(t *testing.T) (statusCoder, error) {
				return w.TeamAdmin.C.PutTeamMemberWithResponse(bg, org, w.Team.Id, "outsider", nil, client.TeamMemberPut{Role: client.RoleMember})
			}},
			{"putTeamMember/the last team owner demoted", "last_team_owner", func(t *testing.T) (statusCoder, error) {
				return owner.PutTeamMemberWithResponse(bg, org, sole.Id, w.Owner.ID, nil, client.TeamMemberPut{Role: client.RoleAdmin})
			}},
			{"removeTeamMember/the last team owner", "last_team_owner", func(t *testing.T) (statusCoder, error) {
				return owner.RemoveTeamMemberWithResponse(bg, org, sole.Id, w.Owner.ID, nil)
			}},
		})
		t.Run("nothing changed", func(t *testing.T) {
			if got := memberCount(t, owner, org, w.Team.Id); got != 4 {
				t.Errorf("memberCount: %d, want 4", got)
			}
			m, err := owner.GetTeamMemberWithResponse(bg, org, sole.Id, w.Owner.ID, nil)
			mustStatus(t, m, err, http.StatusOK)
			if m.JSON200.Role != client.RoleOwner {
				t.Errorf("the sole owner's role: %s", m.JSON200.Role)
			}
		})
	})
	t.Run("412", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Cyberdyne")
		org, owner := w.Org.Id, w.Owner.C
		stale := ptr(etagOf(99))
		wantStale(t, []staleCase{
			{"putTeamMember/existing member", func() (statusCoder, error) {
				return owner.PutTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, &client.PutTeamMemberParams{IfMatch: stale}, client.TeamMemberPut{Role: client.RoleAdmin})
			}},
			{"putTeamMember/new member", func() (statusCoder, error) {
				return owner.PutTeamMemberWithResponse(bg, org, w.Team.Id, w.Member.ID, &client.PutTeamMemberParams{IfMatch: ptr(etagOf(1))}, client.TeamMemberPut{Role: client.RoleMember})
			}},
			{"removeTeamMember", func() (statusCoder, error) {
				return owner.RemoveTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamMember.ID, &client.RemoveTeamMemberParams{IfMatch: stale})
			}},
		})
		t.Run("nothing changed", func(t *testing.T) {
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
		})
	})
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
