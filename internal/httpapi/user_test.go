package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/tenantd/tenantd/client"
)

// TestUser is the behaviour of an org's users.
func TestUser(t *testing.T) {
	t.Run("200", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Acme")
		org, owner := w.Org.Id, w.Owner.C
		spec(t, "listOrgUsers", func(t *testing.T) {
			r, err := w.Member.C.ListOrgUsersWithResponse(bg, org, nil)
			mustStatus(t, r, err, http.StatusOK)
			var ids []string
			for _, u := range r.JSON200.Items {
				ids = append(ids, u.UserId)
			}
			if got, want := ids, w.UserIDs(); !slices.Equal(got, want) {
				t.Errorf("users (ordered by id): got %v, want %v", got, want)
			}
		})

		spec(t, "getOrgUser", func(t *testing.T) {
			r, err := w.Member.C.GetOrgUserWithResponse(bg, org, w.Admin.ID, nil)
			mustStatus(t, r, err, http.StatusOK)
			u := r.JSON200
			if u.UserId != w.Admin.ID || u.Email != w.Admin.Email || u.Name != w.Admin.Name || u.Role != client.RoleAdmin {
				t.Errorf("user: got %+v", u)
			}
			wantETag(t, r.HTTPResponse.Header, u.Version)
		})

		spec(t, "updateOrgUser", func(t *testing.T) {
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

		spec(t, "getOrgUser/ids with special characters", func(t *testing.T) {
			for _, id := range []string{"auth0|5f7c8ec7c33c6c004bbafe82", "google-oauth2|1234567890", "a.b_c~d:e@f+g=h-i"} {
				t.Run(id, func(t *testing.T) {
					a := ts.ActorWithID(t, id)
					MustUser(t, owner, org, a, client.RoleMember)
					g, err := a.C.GetOrgUserWithResponse(bg, org, id, nil)
					mustStatus(t, g, err, http.StatusOK)
					if got := g.JSON200.UserId; got != id {
						t.Errorf("userId: got %q, want %q", got, id)
					}
					me, err := a.C.GetMeWithResponse(bg, nil)
					mustStatus(t, me, err, http.StatusOK)
					if got := me.JSON200.UserId; got != id || len(me.JSON200.Orgs) != 1 {
						t.Errorf("me: got %+v", me.JSON200)
					}
					MustMember(t, owner, org, w.Team.Id, id, client.RoleMember)
					m, err := a.C.GetTeamMemberWithResponse(bg, org, w.Team.Id, id, nil)
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
	})
	t.Run("201", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Initech")
		org := w.Org.Id
		spec(t, "addOrgUser", func(t *testing.T) {
			a := ts.Actor(t, "hire")
			r, err := w.Admin.C.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: a.ID, Email: a.Email, Name: a.Name, Role: client.RoleAdmin})
			mustStatus(t, r, err, http.StatusCreated)
			if u := r.JSON201; u.UserId != a.ID || u.Email != a.Email || u.Name != a.Name || u.Role != client.RoleAdmin || u.Version != 1 {
				t.Errorf("user: got %+v", u)
			}
			wantETag(t, r.HTTPResponse.Header, 1)
			me, err := a.C.GetMeWithResponse(bg, nil)
			mustStatus(t, me, err, http.StatusOK)
			if got, want := me.JSON200.Orgs, []client.MeOrg{{OrgId: org, Name: w.Org.Name, Role: client.RoleAdmin, UserName: a.Name}}; !slices.Equal(got, want) {
				t.Errorf("the new user's orgs: got %+v, want %+v", got, want)
			}
		})

		spec(t, "addOrgUser/owner by owner", func(t *testing.T) {
			a := ts.Actor(t, "coowner")
			r, err := w.Owner.C.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: a.ID, Email: a.Email, Name: a.Name, Role: client.RoleOwner})
			mustStatus(t, r, err, http.StatusCreated)
		})
	})
	t.Run("204", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Umbrella")
		org := w.Org.Id
		spec(t, "removeOrgUser/by admin, with their teams", func(t *testing.T) {
			before := memberCount(t, w.Member.C, org, w.Team.Id)
			r, err := w.Admin.C.RemoveOrgUserWithResponse(bg, org, w.TeamAdmin.ID, &client.RemoveOrgUserParams{IfMatch: ptr(etagOf(1))})
			mustStatus(t, r, err, http.StatusNoContent)
			g, err := w.Member.C.GetOrgUserWithResponse(bg, org, w.TeamAdmin.ID, nil)
			wantProblem(t, g, err, http.StatusNotFound, "")
			m, err := w.Member.C.GetTeamMemberWithResponse(bg, org, w.Team.Id, w.TeamAdmin.ID, nil)
			wantProblem(t, m, err, http.StatusNotFound, "")
			tm, err := w.Member.C.GetTeamWithResponse(bg, org, w.Team.Id, nil)
			mustStatus(t, tm, err, http.StatusOK)
			if got, want := tm.JSON200.MemberCount, before-1; got != want { // the team admin left it
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

		spec(t, "removeOrgUser/member removes themself", func(t *testing.T) {
			r, err := w.Member.C.RemoveOrgUserWithResponse(bg, org, w.Member.ID, nil)
			mustStatus(t, r, err, http.StatusNoContent)
			me, err := w.Member.C.GetMeWithResponse(bg, nil)
			mustStatus(t, me, err, http.StatusOK)
			if len(me.JSON200.Orgs) != 0 {
				t.Errorf("orgs after leaving: %+v", me.JSON200.Orgs)
			}
		})
	})
	t.Run("400", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Globex")
		org, owner := w.Org.Id, w.Owner.C
		// Unknown and read-only properties are refused, and nothing changes.
		wantRefusedBodies(t, w, []refusedBody{
			{"addOrgUser/body with version", func(b io.Reader) (statusCoder, error) {
				return owner.AddOrgUserWithBodyWithResponse(bg, org, nil, jsonType, b)
			}, `{"userId":"sneaky","email":"s@example.com","name":"S","role":"member","version":7}`},
			{"updateOrgUser/body with userId", func(b io.Reader) (statusCoder, error) {
				return owner.UpdateOrgUserWithBodyWithResponse(bg, org, w.Member.ID, nil, jsonType, b)
			}, `{"name":"Hacked","userId":"someone-else"}`},
			// Not unknown, but invalid all the same.
			{"updateOrgUser/body with a bad email", func(b io.Reader) (statusCoder, error) {
				return owner.UpdateOrgUserWithBodyWithResponse(bg, org, w.Member.ID, nil, jsonType, b)
			}, `{"email":"not an email"}`},
			{"addOrgUser/body with a bad role", func(b io.Reader) (statusCoder, error) {
				return owner.AddOrgUserWithBodyWithResponse(bg, org, nil, jsonType, b)
			}, `{"userId":"x","email":"x@example.com","name":"X","role":"root"}`},
		})
		// Invalid IDs never reach DynamoDB.
		wantRefused(t, ts, []refusedRequest{
			{"getOrgUser/userId a#b", func() (statusCoder, error) { return owner.GetOrgUserWithResponse(bg, org, "a#b", nil) }},
			{"getOrgUser/userId of 129 characters", func() (statusCoder, error) {
				return owner.GetOrgUserWithResponse(bg, org, strings.Repeat("u", 129), nil)
			}},
		})
		t.Run("a userId with a slash routes nowhere", func(t *testing.T) {
			// Not a spec subtest: no operation has the path, and 404 is the
			// router's answer (a 400 would do as well); DynamoDB is never
			// asked either way.
			ts.Rec.Reset()
			r, err := owner.RemoveOrgUserWithResponse(bg, org, "a/b", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.StatusCode(); got != http.StatusBadRequest && got != http.StatusNotFound {
				t.Errorf("status: got %d, want 400 or 404: %s", got, r.GetBody())
			}
			if got := ts.Rec.Count(); got != 0 {
				t.Errorf("DynamoDB calls: got %d (%s), want 0", got, ts.Rec.Names())
			}
		})
		// A cursor of another listing of the same org.
		cursor := teamsCursor(t, ts, w)
		wantInvalidCursors(t, []cursorCase{
			{"listOrgUsers/cursor of listTeams", func(t *testing.T) (statusCoder, error) {
				return owner.ListOrgUsersWithResponse(bg, org, &client.ListOrgUsersParams{Cursor: &cursor})
			}},
		})
	})
	t.Run("403", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Vandelay")
		org := w.Org.Id
		newcomer := func(t *testing.T) actor { t.Helper(); return ts.Actor(t, "newcomer") }
		wantForbidden(t, []forbiddenCase{
			{"addOrgUser/admin grants owner", func(t *testing.T) (statusCoder, error) {
				a := newcomer(t)
				return w.Admin.C.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: a.ID, Email: a.Email, Name: a.Name, Role: client.RoleOwner})
			}, nil},
			{"updateOrgUser/admin grants owner", func(t *testing.T) (statusCoder, error) {
				return w.Admin.C.UpdateOrgUserWithResponse(bg, org, w.Member.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleOwner)})
			}, func(t *testing.T) {
				g, err := w.Member.C.GetOrgUserWithResponse(bg, org, w.Member.ID, nil)
				mustStatus(t, g, err, http.StatusOK)
				if g.JSON200.Role != client.RoleMember || g.JSON200.Version != 1 {
					t.Errorf("member changed: %+v", g.JSON200)
				}
			}},
			{"updateOrgUser/admin grants owner to themself", func(t *testing.T) (statusCoder, error) {
				return w.Admin.C.UpdateOrgUserWithResponse(bg, org, w.Admin.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleOwner)})
			}, nil},
			{"updateOrgUser/admin demotes owner", func(t *testing.T) (statusCoder, error) {
				return w.Admin.C.UpdateOrgUserWithResponse(bg, org, w.Owner.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleMember)})
			}, nil},
			{"removeOrgUser/admin removes owner", func(t *testing.T) (statusCoder, error) {
				return w.Admin.C.RemoveOrgUserWithResponse(bg, org, w.Owner.ID, nil)
			}, func(t *testing.T) {
				g, err := w.Member.C.GetOrgUserWithResponse(bg, org, w.Owner.ID, nil)
				mustStatus(t, g, err, http.StatusOK)
			}},
			{"addOrgUser/member adds user", func(t *testing.T) (statusCoder, error) {
				a := newcomer(t)
				return w.Member.C.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: a.ID, Email: a.Email, Name: a.Name, Role: client.RoleMember})
			}, nil},
			{"updateOrgUser/member promotes themself", func(t *testing.T) (statusCoder, error) {
				return w.Member.C.UpdateOrgUserWithResponse(bg, org, w.Member.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleAdmin)})
			}, nil},
			{"removeOrgUser/member removes another member", func(t *testing.T) (statusCoder, error) {
				return w.Member.C.RemoveOrgUserWithResponse(bg, org, w.Requester.ID, nil)
			}, nil},
		})
	})
	t.Run("404", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Wonka")
		org, c := w.Org.Id, w.Member.C
		wantNotFound(t, []notFoundCase{
			{"getOrgUser/unknown user", "", func() (statusCoder, error) { return c.GetOrgUserWithResponse(bg, org, "nobody", nil) }},
			{"updateOrgUser/unknown user", "", func() (statusCoder, error) {
				return w.Owner.C.UpdateOrgUserWithResponse(bg, org, "nobody", nil, client.OrgUserUpdate{Name: ptr("x")})
			}},
			{"removeOrgUser/unknown user", "", func() (statusCoder, error) { return w.Owner.C.RemoveOrgUserWithResponse(bg, org, "nobody", nil) }},
		})
	})
	t.Run("409", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Stark")
		org := w.Org.Id
		owner := w.Owner.C
		wantConflicts(t, []conflictCase{
			{"updateOrgUser/last owner demotes themself", "last_owner", func(t *testing.T) (statusCoder, error) {
				return owner.UpdateOrgUserWithResponse(bg, org, w.Owner.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleAdmin)})
			}},
			{"removeOrgUser/last owner leaves", "last_owner", func(t *testing.T) (statusCoder, error) {
				return owner.RemoveOrgUserWithResponse(bg, org, w.Owner.ID, nil)
			}},
			{"addOrgUser/duplicate email", "email_taken", func(t *testing.T) (statusCoder, error) {
				a := ts.Actor(t, "dup")
				return owner.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: a.ID, Email: w.Member.Email, Name: a.Name, Role: client.RoleMember})
			}},
			{"addOrgUser/duplicate email, other case", "email_taken", func(t *testing.T) (statusCoder, error) {
				a := ts.Actor(t, "dup")
				return owner.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: a.ID, Email: strings.ToUpper(w.Member.Email), Name: a.Name, Role: client.RoleMember})
			}},
			{"updateOrgUser/duplicate email", "email_taken", func(t *testing.T) (statusCoder, error) {
				return owner.UpdateOrgUserWithResponse(bg, org, w.Admin.ID, nil, client.OrgUserUpdate{Email: &w.Member.Email})
			}},
			{"addOrgUser/user already in org", "user_exists", func(t *testing.T) (statusCoder, error) {
				return owner.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: w.Member.ID, Email: "other-" + w.Member.Email, Name: "x", Role: client.RoleMember})
			}},
		})
		t.Run("nothing changed", func(t *testing.T) {
			g, err := owner.GetOrgUserWithResponse(bg, org, w.Owner.ID, nil)
			mustStatus(t, g, err, http.StatusOK)
			if g.JSON200.Role != client.RoleOwner || g.JSON200.Version != 1 {
				t.Errorf("owner changed: %+v", g.JSON200)
			}
			a, err := owner.GetOrgUserWithResponse(bg, org, w.Admin.ID, nil)
			mustStatus(t, a, err, http.StatusOK)
			if a.JSON200.Email != w.Admin.Email || a.JSON200.Version != 1 {
				t.Errorf("admin changed: %+v", a.JSON200)
			}
		})
		t.Run("with two owners the first may step down", func(t *testing.T) {
			MustUser(t, owner, org, ts.Actor(t, "second-owner"), client.RoleOwner)
			r, err := owner.UpdateOrgUserWithResponse(bg, org, w.Owner.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleAdmin)})
			mustStatus(t, r, err, http.StatusOK)
		})
	})
	t.Run("412", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Cyberdyne")
		org, owner := w.Org.Id, w.Owner.C
		stale := ptr(etagOf(99))
		wantStale(t, []staleCase{
			{"updateOrgUser", func() (statusCoder, error) {
				return owner.UpdateOrgUserWithResponse(bg, org, w.Member.ID, &client.UpdateOrgUserParams{IfMatch: stale}, client.OrgUserUpdate{Name: ptr("x")})
			}},
			{"removeOrgUser", func() (statusCoder, error) {
				return owner.RemoveOrgUserWithResponse(bg, org, w.Member.ID, &client.RemoveOrgUserParams{IfMatch: stale})
			}},
		})
		t.Run("nothing changed", func(t *testing.T) {
			g, err := owner.GetOrgWithResponse(bg, org, &client.GetOrgParams{Include: ptr(client.GetOrgParamsIncludeUsers)})
			mustStatus(t, g, err, http.StatusOK)
			if len(*g.JSON200.Users) != 8 {
				t.Errorf("users: %+v", g.JSON200.Users)
			}
			for _, u := range *g.JSON200.Users {
				if u.Version != 1 {
					t.Errorf("user %s changed: %+v", u.UserId, u)
				}
			}
		})
	})
}

// TestEditOwnProfile: any user may change their own name in an org (not
// their email or role, nor anyone else's name), and /v1/me shows it.
func TestEditOwnProfile(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Profiles")
	org, me := w.Org.Id, w.Member
	r, err := me.C.UpdateOrgUserWithResponse(bg, org, me.ID, nil, client.OrgUserUpdate{Name: ptr("Renamed by myself")})
	mustStatus(t, r, err, http.StatusOK)
	m, err := me.C.GetMeWithResponse(bg, nil)
	mustStatus(t, m, err, http.StatusOK)
	if got := m.JSON200.Orgs; len(got) != 1 || got[0].UserName != "Renamed by myself" {
		t.Errorf("/v1/me after renaming myself: %+v", got)
	}
	for name, patch := range map[string]client.OrgUserUpdate{
		"my email":          {Email: ptr("mine@example.com")},
		"my role":           {Role: ptr(client.RoleAdmin)},
		"my name and email": {Name: ptr("x"), Email: ptr("mine@example.com")},
	} {
		r, err := me.C.UpdateOrgUserWithResponse(bg, org, me.ID, nil, patch)
		wantProblem(t, r, err, http.StatusForbidden, "forbidden")
		_ = name
	}
	r, err = me.C.UpdateOrgUserWithResponse(bg, org, w.Requester.ID, nil, client.OrgUserUpdate{Name: ptr("Renamed by another")})
	wantProblem(t, r, err, http.StatusForbidden, "forbidden")
}
