package httpapi_test

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/apitest"
)

// TestOrg is the behaviour of orgs, the caller's view of them (getMe) and
// their offboarding.
func TestOrg(t *testing.T) {
	t.Run("200", func(t *testing.T) {
		// An offboarding waits a second before its last sweep, so that one is
		// still under way when getOffboarding reads it.
		ts := MustServer(t, withOffboarding(time.Second, time.Millisecond))
		w := MustWorld(t, ts, "Acme")
		org, owner := w.Org.Id, w.Owner.C
		spec(t, "getOffboarding", func(t *testing.T) {
			doomed := MustWorld(t, ts, "Doomed while read")
			d, err := doomed.Owner.C.DeleteOrgWithResponse(bg, doomed.Org.Id, nil)
			mustStatus(t, d, err, http.StatusAccepted)
			r, err := doomed.Owner.C.GetOffboardingWithResponse(bg, doomed.Org.Id)
			mustStatus(t, r, err, http.StatusOK)
			if got := r.JSON200; got.OrgId != doomed.Org.Id || got.StartedBy != doomed.Owner.ID || got.State != client.OffboardingStateRunning {
				t.Errorf("offboarding: got %+v", got)
			}
		})

		spec(t, "getMe", func(t *testing.T) {
			r, err := owner.GetMeWithResponse(bg, nil)
			mustStatus(t, r, err, http.StatusOK)
			if got, want := r.JSON200.UserId, w.Owner.ID; got != want {
				t.Errorf("userId: got %q, want %q", got, want)
			}
			if got, want := r.JSON200.Orgs, []client.MeOrg{{OrgId: org, Name: w.Org.Name, Role: client.RoleOwner, UserName: w.Owner.Name}}; !slices.Equal(got, want) {
				t.Errorf("orgs: got %+v, want %+v", got, want)
			}
		})

		spec(t, "getMe/its orgs a page at a time, never cut silently", func(t *testing.T) {
			a := ts.Actor(t, "pager")
			want := map[string]bool{}
			for _, name := range []string{"Paged One", "Paged Two", "Paged Three"} {
				want[MustOrg(t, a.C, name).Id] = true
			}
			got := map[string]bool{}
			var cursor *string
			for pages := 1; ; pages++ {
				r, err := a.C.GetMeWithResponse(bg, &client.GetMeParams{Limit: ptr(2), Cursor: cursor})
				mustStatus(t, r, err, http.StatusOK)
				if len(r.JSON200.Orgs) > 2 {
					t.Fatalf("page %d: %d orgs, want at most 2", pages, len(r.JSON200.Orgs))
				}
				for _, o := range r.JSON200.Orgs {
					got[o.OrgId] = true
				}
				if cursor = r.JSON200.NextCursor; cursor == nil {
					if link := r.HTTPResponse.Header.Get("Link"); link != "" {
						t.Errorf("last page: Link %q", link)
					}
					if pages != 2 {
						t.Errorf("3 orgs 2 a page came in %d pages, want 2", pages)
					}
					break
				}
				if link := r.HTTPResponse.Header.Get("Link"); !strings.Contains(link, `rel="next"`) {
					t.Errorf("page %d: nextCursor without a Link header (%q)", pages, link)
				}
				if pages > 3 {
					t.Fatal("no last page")
				}
			}
			if !maps.Equal(got, want) {
				t.Errorf("orgs over the pages: got %v, want %v", got, want)
			}
			// Without a limit, a page of 100: all three, and no cursor.
			r, err := a.C.GetMeWithResponse(bg, nil)
			mustStatus(t, r, err, http.StatusOK)
			if len(r.JSON200.Orgs) != 3 || r.JSON200.NextCursor != nil {
				t.Errorf("default page: %d orgs, nextCursor %v; want 3 and none", len(r.JSON200.Orgs), r.JSON200.NextCursor)
			}
		})

		spec(t, "listOrgs", func(t *testing.T) {
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

		spec(t, "getOrg", func(t *testing.T) {
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

		spec(t, "getOrg/include=users", func(t *testing.T) {
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
			if got, want := ids, w.UserIDs(); !slices.Equal(got, want) {
				t.Errorf("users: got %v, want %v", got, want)
			}
			wantETag(t, r.HTTPResponse.Header, r.JSON200.Version)
		})

		spec(t, "updateOrg", func(t *testing.T) {
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
	})
	t.Run("201", func(t *testing.T) {
		ts := MustServer(t)
		spec(t, "createOrg", func(t *testing.T) {
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

		spec(t, "createOrg/Idempotency-Key replays", func(t *testing.T) {
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
	t.Run("202", func(t *testing.T) {
		// The offboarding's last sweep waits a second, and the DELETE waits
		// for it a millisecond: it answers before the work is done.
		ts := MustServer(t, withOffboarding(time.Second, time.Millisecond))
		w := MustWorld(t, ts, "Doomed")
		spec(t, "deleteOrg/the offboarding outlasts the request", func(t *testing.T) {
			r, err := w.Owner.C.DeleteOrgWithResponse(bg, w.Org.Id, nil)
			mustStatus(t, r, err, http.StatusAccepted)
			if got, want := r.HTTPResponse.Header.Get("Location"), "/v1/orgs/"+w.Org.Id+"/offboarding"; got != want {
				t.Errorf("Location: got %q, want %q", got, want)
			}
			if got := r.JSON202; got.OrgId != w.Org.Id || got.StartedBy != w.Owner.ID || got.State != client.OffboardingStateRunning {
				t.Errorf("202 body: got %+v, want the owner's running offboarding", got)
			}
		})
	})
	t.Run("204", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Umbrella")
		org := w.Org.Id
		spec(t, "deleteOrg", func(t *testing.T) {
			other := MustOrg(t, w.Owner.C, "Other of owner")
			r, err := w.Owner.C.DeleteOrgWithResponse(bg, org, &client.DeleteOrgParams{IfMatch: ptr(etagOf(w.Org.Version))})
			mustStatus(t, r, err, http.StatusNoContent)
			for _, a := range []actor{w.Owner, w.Admin, w.Requester} {
				g, err := a.C.GetOrgWithResponse(bg, org, nil)
				wantProblem(t, g, err, http.StatusNotFound, "")
			}
			me, err := w.Owner.C.GetMeWithResponse(bg, nil)
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
	t.Run("400", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Globex")
		org, owner := w.Org.Id, w.Owner.C
		// Unknown and read-only properties are refused, and nothing changes.
		wantRefusedBodies(t, w, []refusedBody{
			{"createOrg/body with id", func(b io.Reader) (statusCoder, error) {
				return owner.CreateOrgWithBodyWithResponse(bg, nil, jsonType, b)
			}, `{"name":"x","id":"01ARZ3NDEKTSV4RRFFQ69G5FAV"}`},
			{"updateOrg/body with orgId", func(b io.Reader) (statusCoder, error) {
				return owner.UpdateOrgWithBodyWithResponse(bg, org, nil, jsonType, b)
			}, `{"name":"Hacked","orgId":"01ARZ3NDEKTSV4RRFFQ69G5FAV"}`},
			{"updateOrg/body with version", func(b io.Reader) (statusCoder, error) {
				return owner.UpdateOrgWithBodyWithResponse(bg, org, nil, jsonType, b)
			}, `{"name":"Hacked","version":99}`},
			// Not unknown, but invalid all the same.
			{"updateOrg/body with an empty name", func(b io.Reader) (statusCoder, error) {
				return owner.UpdateOrgWithBodyWithResponse(bg, org, nil, jsonType, b)
			}, `{"name":""}`},
		})
		// Invalid IDs, and invalid query parameters, never reach DynamoDB.
		overflow := "8" + strings.Repeat("0", 25) // 26 Crockford characters, beyond 128 bits
		wantRefused(t, ts, []refusedRequest{
			{"getOrg/orgId a#b", func() (statusCoder, error) { return owner.GetOrgWithResponse(bg, "a#b", nil) }},
			{"getOrg/orgId a lowercase ULID", func() (statusCoder, error) { return owner.GetOrgWithResponse(bg, strings.ToLower(org), nil) }},
			{"getOrg/orgId an overflowing ULID", func() (statusCoder, error) { return owner.GetOrgWithResponse(bg, overflow, nil) }},
			{"getOrg/orgId with a key injected", func() (statusCoder, error) { return owner.GetOrgWithResponse(bg, org+"#USER#x", nil) }},
			{"listOrgs/limit=-1", func() (statusCoder, error) {
				return owner.ListOrgsWithResponse(bg, &client.ListOrgsParams{Limit: ptr(-1)})
			}},
			{"getOrg/include=secrets", func() (statusCoder, error) {
				return owner.GetOrgWithResponse(bg, org, &client.GetOrgParams{Include: ptr(client.GetOrgParamsInclude("secrets"))})
			}},
		})
		spec(t, "createOrg/a token without email", func(t *testing.T) {
			c := ts.Client(t, ts.Token(t, ts.UniqueID("noemail"), "", "No Email"))
			r, err := c.CreateOrgWithResponse(bg, nil, client.OrgCreate{Name: "x"})
			wantProblem(t, r, err, http.StatusBadRequest, "email_claim_required")
		})
		// A cursor of another caller's listing.
		MustOrg(t, owner, "Globex Two")
		wantInvalidCursors(t, []cursorCase{
			{"listOrgs/cursor of another user", func(t *testing.T) (statusCoder, error) {
				l, err := owner.ListOrgsWithResponse(bg, &client.ListOrgsParams{Limit: ptr(1)})
				mustStatus(t, l, err, http.StatusOK)
				if l.JSON200.NextCursor == nil {
					t.Fatal("no nextCursor")
				}
				return w.Admin.C.ListOrgsWithResponse(bg, &client.ListOrgsParams{Cursor: l.JSON200.NextCursor})
			}},
			{"getMe/cursor of listOrgs", func(t *testing.T) (statusCoder, error) {
				l, err := owner.ListOrgsWithResponse(bg, &client.ListOrgsParams{Limit: ptr(1)})
				mustStatus(t, l, err, http.StatusOK)
				if l.JSON200.NextCursor == nil {
					t.Fatal("no nextCursor")
				}
				return owner.GetMeWithResponse(bg, &client.GetMeParams{Cursor: l.JSON200.NextCursor})
			}},
		})
		wantRefused(t, ts, []refusedRequest{
			{"getMe/limit=101", func() (statusCoder, error) { return owner.GetMeWithResponse(bg, &client.GetMeParams{Limit: ptr(101)}) }},
		})
	})
	t.Run("403", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Vandelay")
		org := w.Org.Id
		wantForbidden(t, []forbiddenCase{
			{"updateOrg/member", func(t *testing.T) (statusCoder, error) {
				return w.Member.C.UpdateOrgWithResponse(bg, org, nil, client.OrgUpdate{Name: "Pwned"})
			}, func(t *testing.T) {
				g, err := w.Member.C.GetOrgWithResponse(bg, org, nil)
				mustStatus(t, g, err, http.StatusOK)
				if g.JSON200.Name != w.Org.Name || g.JSON200.Version != w.Org.Version {
					t.Errorf("org changed: %+v", g.JSON200)
				}
			}},
			{"updateOrg/team owner", func(t *testing.T) (statusCoder, error) {
				return w.TeamOwner.C.UpdateOrgWithResponse(bg, org, nil, client.OrgUpdate{Name: "Pwned"})
			}, nil},
			{"deleteOrg/admin", func(t *testing.T) (statusCoder, error) { return w.Admin.C.DeleteOrgWithResponse(bg, org, nil) }, nil},
			// Only an owner (who may delete the org) reads its offboarding.
			{"getOffboarding/admin", func(t *testing.T) (statusCoder, error) { return w.Admin.C.GetOffboardingWithResponse(bg, org) }, nil},
		})
		spec(t, "createOrg/quota of owned orgs, whatever the burst", func(t *testing.T) {
			const quota = 2
			ts := MustServer(t, apitest.WithMaxOrgsPerUser(quota))
			a := ts.Actor(t, "hoarder")
			create := func() (*client.CreateOrgResponse, error) {
				return a.C.CreateOrgWithResponse(bg, nil, client.OrgCreate{Name: "Hoard"})
			}
			var wg sync.WaitGroup
			const burst = 5 * quota
			answers := make([]int, burst)
			for i := range burst {
				wg.Go(func() {
					r, err := create()
					if err != nil {
						t.Errorf("create: %v", err)
						return
					}
					answers[i] = r.StatusCode()
				})
			}
			wg.Wait()
			created, refused := 0, 0
			for _, s := range answers {
				switch s {
				case http.StatusCreated:
					created++
				case http.StatusForbidden:
					refused++
				case http.StatusServiceUnavailable: // transaction conflicts past the retries: nothing written
				default:
					t.Errorf("a create of the burst answered %d", s)
				}
			}
			if created > quota || refused == 0 {
				t.Fatalf("the burst created %d orgs, %d refused by the quota: want at most %d created", created, refused, quota)
			}
			for ; created < quota; created++ { // what the burst's conflicts left
				r, err := create()
				mustStatus(t, r, err, http.StatusCreated)
			}
			r, err := create()
			wantProblem(t, r, err, http.StatusForbidden, "org_quota_exceeded")
			l, err := a.C.ListOrgsWithResponse(bg, nil)
			mustStatus(t, l, err, http.StatusOK)
			if got := len(l.JSON200.Items); got != quota {
				t.Fatalf("the caller's orgs: %d, want %d", got, quota)
			}
			// Deleting one of them makes room for another.
			d, err := a.C.DeleteOrgWithResponse(bg, l.JSON200.Items[0].OrgId, nil)
			mustStatus(t, d, err, http.StatusNoContent)
			r, err = create()
			mustStatus(t, r, err, http.StatusCreated)
			apitest.MustHealthy(t, ts)
		})
		spec(t, "createOrg/quota/adding a ghost owner and stepping down frees no room", func(t *testing.T) {
			const quota = 2
			ts := MustServer(t, apitest.WithMaxOrgsPerUser(quota))
			a := ts.Actor(t, "dodger")
			for i := range quota {
				r, err := a.C.CreateOrgWithResponse(bg, nil, client.OrgCreate{Name: "Dodge"})
				mustStatus(t, r, err, http.StatusCreated)
				org := r.JSON201.Id
				ghost := client.OrgUserCreate{UserId: fmt.Sprintf("ghost_%d", i), Email: "g@x.invalid", Name: "G", Role: client.RoleOwner}
				au, err := a.C.AddOrgUserWithResponse(bg, org, nil, ghost)
				mustStatus(t, au, err, http.StatusCreated)
				uu, err := a.C.UpdateOrgUserWithResponse(bg, org, a.ID, nil, client.OrgUserUpdate{Role: ptr(client.RoleAdmin)})
				mustStatus(t, uu, err, http.StatusOK)
			}
			r, err := a.C.CreateOrgWithResponse(bg, nil, client.OrgCreate{Name: "Dodge"})
			wantProblem(t, r, err, http.StatusForbidden, "org_quota_exceeded")
			apitest.MustHealthy(t, ts)
		})
		spec(t, "createOrg/quota/orgs another made the caller owner of count nothing", func(t *testing.T) {
			const quota = 2
			ts := MustServer(t, apitest.WithMaxOrgsPerUser(quota))
			attacker, victim := ts.Actor(t, "attacker"), ts.Actor(t, "victim")
			for range quota {
				r, err := attacker.C.CreateOrgWithResponse(bg, nil, client.OrgCreate{Name: "Trap"})
				mustStatus(t, r, err, http.StatusCreated)
				org := r.JSON201.Id
				au, err := attacker.C.AddOrgUserWithResponse(bg, org, nil,
					client.OrgUserCreate{UserId: victim.ID, Email: victim.Email, Name: victim.Name, Role: client.RoleOwner})
				mustStatus(t, au, err, http.StatusCreated)
				ru, err := attacker.C.RemoveOrgUserWithResponse(bg, org, attacker.ID, nil)
				mustStatus(t, ru, err, http.StatusNoContent)
			}
			r, err := victim.C.CreateOrgWithResponse(bg, nil, client.OrgCreate{Name: "Mine"})
			mustStatus(t, r, err, http.StatusCreated)
			apitest.MustHealthy(t, ts)
		})
	})
	t.Run("404", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Wonka")
		org, c := w.Org.Id, w.Member.C
		unknown := "01ARZ3NDEKTSV4RRFFQ69G5FAV"
		stranger := ts.Actor(t, "stranger")
		wantNotFound(t, []notFoundCase{
			{"getOrg/unknown org", "", func() (statusCoder, error) { return c.GetOrgWithResponse(bg, unknown, nil) }},
			{"getOrg/org of which the caller is not a member", "", func() (statusCoder, error) { return stranger.C.GetOrgWithResponse(bg, org, nil) }},
			{"getOffboarding/no offboarding under way", "offboarding_not_found", func() (statusCoder, error) {
				return w.Owner.C.GetOffboardingWithResponse(bg, org)
			}},
		})
		spec(t, "getOrg/unknown org and non-member org look the same", func(t *testing.T) {
			a, err := stranger.C.GetOrgWithResponse(bg, org, nil)
			mustStatus(t, a, err, http.StatusNotFound)
			b, err := stranger.C.GetOrgWithResponse(bg, unknown, nil)
			mustStatus(t, b, err, http.StatusNotFound)
			pa, pb := problemOf(t, a.Body), problemOf(t, b.Body)
			if pa.Code != pb.Code || pa.Detail != pb.Detail || pa.Title != pb.Title || pa.Type != pb.Type {
				t.Errorf("distinguishable 404s:\n%+v\n%+v", pa, pb)
			}
		})
	})
	t.Run("409", func(t *testing.T) {
		g := &gate{}
		ts := MustServer(t, withTransport(g.wrap), withRequestTimeout(time.Minute))
		a := ts.Actor(t, "founder")
		spec(t, "createOrg/its Idempotency-Key held by a request still running", func(t *testing.T) {
			hc := ts.HTTPClient(t, a.Token)
			wantKeyInUse(t, g, "Held org", func() apiRespE {
				return doReqE(hc, http.MethodPost, ts.URL+"/v1/orgs", "", http.Header{"Idempotency-Key": {"held-org"}}, `{"name":"Held org"}`)
			})
		})
	})
	t.Run("412", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Cyberdyne")
		org, owner := w.Org.Id, w.Owner.C
		stale := ptr(etagOf(99))
		wantStale(t, []staleCase{
			{"updateOrg", func() (statusCoder, error) {
				return owner.UpdateOrgWithResponse(bg, org, &client.UpdateOrgParams{IfMatch: stale}, client.OrgUpdate{Name: "x"})
			}},
			{"updateOrg/not a version", func() (statusCoder, error) {
				return owner.UpdateOrgWithResponse(bg, org, &client.UpdateOrgParams{IfMatch: ptr(`"abc"`)}, client.OrgUpdate{Name: "x"})
			}},
			{"deleteOrg", func() (statusCoder, error) {
				return owner.DeleteOrgWithResponse(bg, org, &client.DeleteOrgParams{IfMatch: stale})
			}},
		})
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
		})
		spec(t, "updateOrg/lost update", func(t *testing.T) {
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
	})
}
