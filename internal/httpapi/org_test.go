package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/tenantd/tenantd/client"
)

// TestOrg is the behaviour of orgs, their users and offboarding.
func TestOrg(t *testing.T) {
	t.Run("200", func(t *testing.T) {
		// An offboarding waits a second before its last sweep, so that one is
		// still under way when getOffboarding reads it.
		ts := MustServer(t, withOffboarding(time.Second, time.Millisecond))
		w := MustWorld(t, ts, "Acme")
		org, owner := w.Org.Id, w.Owner.C
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

		t.Run("getMe", func(t *testing.T) {
			r, err := owner.GetMeWithResponse(bg)
			mustStatus(t, r, err, http.StatusOK)
			if got, want := r.JSON200.UserId, w.Owner.ID; got != want {
				t.Errorf("userId: got %q, want %q", got, want)
			}
			if got, want := r.JSON200.Orgs, []client.MeOrg{{OrgId: org, Name: w.Org.Name, Role: client.RoleOwner, UserName: w.Owner.Name}}; !slices.Equal(got, want) {
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
			r, err := w.Member.C.GetOrgUserWithResponse(bg, org, w.Admin.ID, nil)
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

		t.Run("user ids with special characters", func(t *testing.T) {
			for _, id := range []string{"auth0|5f7c8ec7c33c6c004bbafe82", "google-oauth2|1234567890", "a.b_c~d:e@f+g=h-i"} {
				t.Run(id, func(t *testing.T) {
					a := ts.ActorWithID(t, id)
					MustUser(t, owner, org, a, client.RoleMember)
					g, err := a.C.GetOrgUserWithResponse(bg, org, id, nil)
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
		t.Run("createOrg", func(t *testing.T) {
			a := ts.Actor(t, "founder")
			r, err := a.C.CreateOrgWithResponse(bg, nil, client.OrgCreate{Name: "Founded"})
			mustStatus(t, r, err, http.StatusCreated)
			o := r.JSON201
			if o.Name != "Founded" || o.Version != 1 || len(o.Id) != 26 || !o.CreatedAt.Equal(o.UpdatedAt) {
				t.Errorf("org: got %+v", o)
			}
			wantETag(t, r.HTTPResponse.Header, 1)
			u, err := a.C.GetOrgUserWithResponse(bg, o.Id, a.ID, nil)
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
			if got, want := me.JSON200.Orgs, []client.MeOrg{{OrgId: org, Name: w.Org.Name, Role: client.RoleAdmin, UserName: a.Name}}; !slices.Equal(got, want) {
				t.Errorf("the new user's orgs: got %+v, want %+v", got, want)
			}
		})

		t.Run("addOrgUser/owner by owner", func(t *testing.T) {
			a := ts.Actor(t, "coowner")
			r, err := w.Owner.C.AddOrgUserWithResponse(bg, org, nil, client.OrgUserCreate{UserId: a.ID, Email: a.Email, Name: a.Name, Role: client.RoleOwner})
			mustStatus(t, r, err, http.StatusCreated)
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
	})
	t.Run("204", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Umbrella")
		org := w.Org.Id
		t.Run("removeOrgUser/by admin, with their teams", func(t *testing.T) {
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

		t.Run("removeOrgUser/member removes themself", func(t *testing.T) {
			r, err := w.Member.C.RemoveOrgUserWithResponse(bg, org, w.Member.ID, nil)
			mustStatus(t, r, err, http.StatusNoContent)
			me, err := w.Member.C.GetMeWithResponse(bg)
			mustStatus(t, me, err, http.StatusOK)
			if len(me.JSON200.Orgs) != 0 {
				t.Errorf("orgs after leaving: %+v", me.JSON200.Orgs)
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
			if got, want := me.JSON200.Orgs, []client.MeOrg{{OrgId: other.Id, Name: other.Name, Role: client.RoleOwner, UserName: w.Owner.Name}}; !slices.Equal(got, want) {
				t.Errorf("owner's orgs after delete: got %+v, want %+v", got, want)
			}
			l, err := w.Admin.C.ListOrgsWithResponse(bg, nil)
			mustStatus(t, l, err, http.StatusOK)
			if len(l.JSON200.Items) != 0 {
				t.Errorf("admin's orgs after delete: %+v", l.JSON200.Items)
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
	m, err := me.C.GetMeWithResponse(bg)
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
