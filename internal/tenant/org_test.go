package tenant_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/deletion"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/ifmatch"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/testkit"
)

// Other orgs than orgID.
const (
	org2 = "01BX5ZZKBKACTAV9WEVGEMMVRZ"
	org3 = "01BX5ZZKBKACTAV9WEVGEMMVS0"
)

func TestCreateOrg(t *testing.T) {
	nia := authz.Identity{UserID: "u_nia", Email: "nia@example.com", Name: "Nia"}
	with := func(f func(*authz.Identity)) authz.Identity { id := nia; f(&id); return id }
	cases := []struct {
		name  string
		id    authz.Identity
		orgID string // "": minted
		org   string // the org's name
		setup func(s *fakeStore)
		want  outcome
		// created: the call writes the org (and its event).
		created bool
		// owner is the returned owner's name.
		owner string
	}{
		{name: "the caller is its first owner", id: nia, orgID: org2, org: "Globex", want: succeeds, created: true, owner: "Nia"},
		{name: "minted ID", id: nia, org: "Globex", want: succeeds, created: true, owner: "Nia"},
		{name: "owner named after their ID without a name claim", id: with(func(id *authz.Identity) { id.Name = "" }), orgID: org2, org: "Globex",
			want: succeeds, created: true, owner: "u_nia"},
		{name: "empty name", id: nia, orgID: org2, org: "", want: fails(errs.Invalid, "required")},
		{name: "name of 201 characters", id: nia, orgID: org2, org: strings.Repeat("g", tenant.MaxNameLen+1), want: fails(errs.Invalid, "too_long")},
		{name: "name with a leading space", id: nia, orgID: org2, org: " Globex", want: fails(errs.Invalid, "invalid_text")},
		{name: "name with a newline", id: nia, orgID: org2, org: "Glo\nbex", want: fails(errs.Invalid, "invalid_text")},
		{name: "no email claim", id: with(func(id *authz.Identity) { id.Email = "" }), orgID: org2, org: "Globex",
			want: fails(errs.Invalid, "email_claim_required")},
		{name: "bad email claim", id: with(func(id *authz.Identity) { id.Email = "Nia <nia@example.com>" }), orgID: org2, org: "Globex",
			want: fails(errs.Invalid, "invalid_identity")},
		{name: "bad subject", id: with(func(id *authz.Identity) { id.UserID = "u#nia" }), orgID: org2, org: "Globex",
			want: fails(errs.Invalid, "invalid_identity")},
		{name: "name claim of 201 characters", id: with(func(id *authz.Identity) { id.Name = strings.Repeat("n", tenant.MaxNameLen+1) }), orgID: org2, org: "Globex",
			want: fails(errs.Invalid, "invalid_identity")},
		{name: "repeated idempotent create returns the org", id: nia, orgID: org2, org: "Globex",
			setup: func(s *fakeStore) {
				s.orgs[org2] = tenant.Org{ID: org2, Name: "Globex", Version: 4, CreatedAt: t0, UpdatedAt: t0}
				u := seedUser("u_nia", authz.Owner)
				u.OrgID, u.Name = org2, "Nia"
				s.users[userKey(org2, "u_nia")] = u
			},
			want: succeeds, owner: "Nia"},
		{name: "repeated idempotent create after the caller left", id: nia, orgID: org2, org: "Globex",
			setup: func(s *fakeStore) {
				s.orgs[org2] = tenant.Org{ID: org2, Name: "Globex", Version: 4, CreatedAt: t0, UpdatedAt: t0}
			},
			want: fails(errs.NotFound, "user_not_found")},
	}
	for _, c := range cases {
		t.Run(c.want.Name("201", "CreateOrg", c.name), func(t *testing.T) {
			s := newFake(seedUsers()...)
			if c.setup != nil {
				c.setup(s)
			}
			orgs := len(s.orgs)
			o, u, err := tenant.NewService(s, nil, now).CreateOrg(context.Background(), c.id, c.orgID, c.org)
			c.want.Check(t, err)
			if !c.want.OK {
				s.WantNoEvent(t)
				if len(s.orgs) != orgs {
					t.Errorf("an org was written")
				}
				return
			}
			if c.orgID != "" && o.ID != c.orgID || !ids.ValidResource(o.ID) {
				t.Errorf("ID: got %q, want %q", o.ID, c.orgID)
			}
			if s.orgs[o.ID] != o || s.users[userKey(o.ID, c.id.UserID)] != u {
				t.Errorf("returned %+v and %+v, stored %+v and %+v", o, u, s.orgs[o.ID], s.users[userKey(o.ID, c.id.UserID)])
			}
			if u.OrgID != o.ID || u.UserID != c.id.UserID || u.Role != authz.Owner || u.Name != c.owner {
				t.Errorf("owner: got %+v, want %s, owner, named %s", u, c.id.UserID, c.owner)
			}
			if !c.created {
				s.WantNoEvent(t)
				return
			}
			if want := (tenant.Org{ID: o.ID, Name: c.org, Version: 1, CreatedAt: t1, UpdatedAt: t1}); o != want {
				t.Errorf("org: got %+v, want %+v", o, want)
			}
			if len(s.Events) != 1 {
				t.Fatalf("events: got %+v, want 1", s.Events)
			}
			ev := s.Events[0]
			if ev.OrgID != o.ID || ev.Action != "org.create" || ev.TargetType != "org" || ev.TargetID != o.ID ||
				ev.ActorID != c.id.UserID || ev.ActorFloor != "" || !ev.At.Equal(t1) {
				t.Errorf("event: got %+v, want org.create of %s by the outsider %s", ev, o.ID, c.id.UserID)
			}
		})
	}
}

func TestGetOrg(t *testing.T) {
	acme := tenant.Org{ID: orgID, Name: "Acme", Version: 1, CreatedAt: t0, UpdatedAt: t0}
	cases := []struct {
		name      string
		p         authz.Principal
		first     *tenant.Org
		withUsers bool
		setup     func(s *fakeStore)
		want      outcome
		reads     map[string]int
	}{
		{name: "first is used without a read", p: as(member, authz.Member), first: &acme, want: succeeds, reads: map[string]int{}},
		{name: "read without first", p: as(member, authz.Member), want: succeeds, reads: map[string]int{"GetOrg": 1}},
		{name: "with users in one read", p: as(member, authz.Member), withUsers: true, want: succeeds, reads: map[string]int{"GetOrgWithUsers": 1}},
		{name: "with users, the item collection whatever was read first", p: as(member, authz.Member), first: &acme, withUsers: true, want: succeeds,
			reads: map[string]int{"GetOrgWithUsers": 1}},
		{name: "no role", p: as(nobody, ""), want: fails(errs.Forbidden, "forbidden"), reads: map[string]int{}},
		{name: "missing org", p: as(member, authz.Member), setup: func(s *fakeStore) { delete(s.orgs, orgID) },
			want: fails(errs.NotFound, "org_not_found"), reads: map[string]int{"GetOrg": 1}},
	}
	for _, c := range cases {
		t.Run(c.want.Name("200", "GetOrg", c.name), func(t *testing.T) {
			s := newFake(seedUsers()...)
			if c.setup != nil {
				c.setup(s)
			}
			o, users, err := tenant.NewService(s, nil, now).GetOrg(context.Background(), c.p, c.first, c.withUsers)
			c.want.Check(t, err)
			for _, m := range []string{"GetOrg", "GetOrgWithUsers", "ListOrgUsers"} {
				if got, want := s.Calls[m], c.reads[m]; got != want {
					t.Errorf("%s calls: got %d, want %d", m, got, want)
				}
			}
			if !c.want.OK {
				return
			}
			if o != acme {
				t.Errorf("got %+v, want %+v", o, acme)
			}
			if want := map[bool]int{true: len(seedUsers()), false: 0}[c.withUsers]; len(users) != want {
				t.Errorf("users: got %d, want %d", len(users), want)
			}
		})
	}
}

func TestListOrgs(t *testing.T) {
	cases := []struct {
		name   string
		caller string
		want   []tenant.OrgMembership
		batch  int // BatchGetOrgs calls
	}{
		{name: "names filled in, an org being offboarded left out", caller: member, batch: 1, want: []tenant.OrgMembership{
			{OrgID: orgID, Name: "Acme", UserName: "Max", Role: authz.Member, JoinedAt: t0},
			{OrgID: org2, Name: "Globex", UserName: "Max", Role: authz.Owner, JoinedAt: t0},
		}},
		{name: "no orgs, no batch read", caller: nobody, batch: 0},
	}
	for _, c := range cases {
		t.Run("200/ListOrgs/"+c.name, func(t *testing.T) {
			s := newFake(seedUsers()...)
			s.orgs[org2] = tenant.Org{ID: org2, Name: "Globex", Version: 1}
			s.orgs[org3] = tenant.Org{ID: org3, Name: "Initech", Version: 1}
			s.offboarding[org3] = deletion.Job{Kind: deletion.Org, OrgID: org3, Phase: "teams"}
			for _, o := range []string{org2, org3} {
				u := seedUser(member, authz.Owner)
				u.OrgID = o
				s.users[userKey(o, member)] = u
			}
			r, err := tenant.NewService(s, nil, now).ListOrgs(context.Background(), authz.Identity{UserID: c.caller}, page.Request{Limit: 10})
			succeeds.Check(t, err)
			if len(r.Items) != len(c.want) {
				t.Fatalf("got %+v, want %+v", r.Items, c.want)
			}
			for i := range c.want {
				if r.Items[i] != c.want[i] {
					t.Errorf("item %d: got %+v, want %+v", i, r.Items[i], c.want[i])
				}
			}
			if got := s.Calls["BatchGetOrgs"]; got != c.batch {
				t.Errorf("BatchGetOrgs calls: got %d, want %d", got, c.batch)
			}
		})
	}
}

func TestUpdateOrg(t *testing.T) {
	cases := []struct {
		name    string
		p       authz.Principal
		newName string
		ifMatch ifmatch.Match
		first   bool
		setup   func(s *fakeStore)
		want    outcome
		reads   int
		// written: the update writes (an event, version 2 or later).
		written bool
		version int64 // the org's version after it
	}{
		{name: "admin renames it", p: as(admin, authz.Admin), newName: "Acme Inc", want: succeeds, reads: 1, written: true, version: 2},
		{name: "owner renames it", p: as(owner, authz.Owner), newName: "Acme Inc", want: succeeds, reads: 1, written: true, version: 2},
		{name: "same name writes nothing", p: as(owner, authz.Owner), newName: "Acme", want: succeeds, reads: 1, version: 1},
		{name: "member renames it", p: as(member, authz.Member), newName: "Acme Inc", want: fails(errs.Forbidden, "forbidden")},
		{name: "member renames it to nothing", p: as(member, authz.Member), newName: "", want: fails(errs.Forbidden, "forbidden")},
		{name: "no role", p: as(nobody, ""), newName: "Acme Inc", want: fails(errs.Forbidden, "forbidden")},
		{name: "empty name", p: as(admin, authz.Admin), newName: "", want: fails(errs.Invalid, "required")},
		{name: "name of 201 characters", p: as(admin, authz.Admin), newName: strings.Repeat("a", tenant.MaxNameLen+1), want: fails(errs.Invalid, "too_long")},
		{name: "name of 200 characters", p: as(admin, authz.Admin), newName: strings.Repeat("あ", tenant.MaxNameLen), want: succeeds, reads: 1, written: true, version: 2},
		{name: "name with a control character", p: as(admin, authz.Admin), newName: "Acme\x00", want: fails(errs.Invalid, "invalid_text")},
		{name: "missing org", p: as(admin, authz.Admin), newName: "Acme Inc", setup: func(s *fakeStore) { delete(s.orgs, orgID) },
			want: fails(errs.NotFound, "org_not_found"), reads: 1},
		{name: "stale If-Match", p: as(admin, authz.Admin), newName: "Acme Inc", ifMatch: ifmatch.Versions(2),
			want: fails(errs.PreconditionFailed, "version_mismatch"), reads: 1},
		{name: "If-Match of the current version", p: as(admin, authz.Admin), newName: "Acme Inc", ifMatch: ifmatch.Versions(1),
			want: succeeds, reads: 1, written: true, version: 2},
		{name: "If-Match *", p: as(admin, authz.Admin), newName: "Acme Inc", ifMatch: ifmatch.Any(), want: succeeds, reads: 1, written: true, version: 2},
		{name: "first is used without a read", p: as(admin, authz.Admin), newName: "Acme Inc", first: true, want: succeeds, reads: 0, written: true, version: 2},
		{name: "stale first is read again", p: as(admin, authz.Admin), newName: "Acme Inc", first: true,
			setup: func(s *fakeStore) { s.changeOrg(func(*tenant.Org) {}) },
			want:  succeeds, reads: 1, written: true, version: 3},
		{name: "If-Match: a concurrent change is not retried", p: as(admin, authz.Admin), newName: "Acme Inc", first: true, ifMatch: ifmatch.Versions(1),
			setup: func(s *fakeStore) {
				s.BeforeWrite = once(func() { s.changeOrg(func(o *tenant.Org) { o.Name = "ACME" }) })
			},
			want: fails(errs.PreconditionFailed, "version_mismatch"), reads: 0},
		{name: "no If-Match: a concurrent change is read again", p: as(admin, authz.Admin), newName: "Acme Inc",
			setup: func(s *fakeStore) {
				s.BeforeWrite = once(func() { s.changeOrg(func(o *tenant.Org) { o.Name = "ACME" }) })
			},
			want: succeeds, reads: 2, written: true, version: 3},
		{name: "no If-Match: always changed concurrently", p: as(admin, authz.Admin), newName: "Acme Inc", first: true,
			setup: func(s *fakeStore) { s.BeforeWrite = func() { s.changeOrg(func(*tenant.Org) {}) } },
			want:  fails(errs.Unavailable, "busy"), reads: 11},
	}
	for _, c := range cases {
		t.Run(c.want.Name("200", "UpdateOrg", c.name), func(t *testing.T) {
			s := newFake(seedUsers()...)
			var first *tenant.Org
			if c.first {
				o := s.orgs[orgID]
				first = &o
			}
			if c.setup != nil {
				c.setup(s)
			}
			o, err := tenant.NewService(s, nil, now).UpdateOrg(context.Background(), c.p, first, c.newName, c.ifMatch)
			c.want.Check(t, err)
			if got := s.Calls["GetOrg"]; got != c.reads {
				t.Errorf("reads: got %d, want %d", got, c.reads)
			}
			if !c.want.OK {
				s.WantNoEvent(t)
				return
			}
			if o != s.orgs[orgID] || o.Version != c.version {
				t.Errorf("returned %+v, stored %+v, want version %d", o, s.orgs[orgID], c.version)
			}
			if !c.written {
				s.WantNoEvent(t)
				return
			}
			if o.Name != c.newName || o.UpdatedAt != t1 || o.CreatedAt != t0 {
				t.Errorf("got %+v, want named %q, updated at %v", o, c.newName, t1)
			}
			s.WantEvent(t, "org.update", "org", orgID, c.p.UserID, testkit.ByOrg(authz.Admin), "name")
		})
	}
}

// fakeDeletions is a deletion.Storer whose Finish ends at once with err.
type fakeDeletions struct{ err error }

func (fakeDeletions) ListJobs(context.Context, int) ([]deletion.Job, error) { return nil, nil }
func (fakeDeletions) Acquire(context.Context, deletion.Job, string, time.Time) (bool, error) {
	return false, nil
}
func (d fakeDeletions) Finish(context.Context, deletion.Job, string) error { return d.err }
func (fakeDeletions) Release(context.Context, deletion.Job, string) error  { return nil }

func TestDeleteOrg(t *testing.T) {
	finishErr := errs.E(errs.Unavailable, "db_unavailable", "throttled")
	cases := []struct {
		name      string
		p         authz.Principal
		ifMatch   ifmatch.Match
		finishErr error
		setup     func(s *fakeStore)
		want      outcome
		done      bool
		phase     string  // of the job returned
		startedIf []int64 // StartOffboarding's ifVersion, each call
		reads     int     // of the org
		cutOffs   int
		released  int
	}{
		{name: "owner offboards it", p: as(owner, authz.Owner), want: succeeds, done: true, phase: "cutoff",
			startedIf: []int64{0}, cutOffs: 1},
		{name: "admin", p: as(admin, authz.Admin), want: fails(errs.Forbidden, "forbidden")},
		{name: "member", p: as(member, authz.Member), want: fails(errs.Forbidden, "forbidden")},
		{name: "the run fails: it is under way", p: as(owner, authz.Owner), finishErr: finishErr, want: succeeds, done: false, phase: "teams",
			startedIf: []int64{0}, cutOffs: 1},
		{name: "a repeated DELETE finds it under way", p: as(owner, authz.Owner),
			setup: func(s *fakeStore) {
				s.offboarding[orgID] = deletion.Job{Kind: deletion.Org, OrgID: orgID, By: owner, Phase: "tickets"}
			},
			want: succeeds, done: false, phase: "tickets", startedIf: []int64{0}},
		{name: "the cut-off fails: the lease is released", p: as(owner, authz.Owner),
			setup: func(s *fakeStore) { s.cutOffErr = finishErr },
			want:  fails(errs.Unavailable, "db_unavailable"), startedIf: []int64{0}, cutOffs: 1, released: 1},
		{name: "If-Match of the current version goes to the store", p: as(owner, authz.Owner), ifMatch: ifmatch.Versions(1),
			want: succeeds, done: true, phase: "cutoff", startedIf: []int64{1}, cutOffs: 1},
		{name: "stale If-Match goes to the store", p: as(owner, authz.Owner), ifMatch: ifmatch.Versions(2),
			want: fails(errs.PreconditionFailed, "version_mismatch"), startedIf: []int64{2}},
		{name: "If-Match * reads the org", p: as(owner, authz.Owner), ifMatch: ifmatch.Any(),
			want: succeeds, done: true, phase: "cutoff", startedIf: []int64{0}, reads: 1, cutOffs: 1},
		{name: "If-Match of several tags pins the current version", p: as(owner, authz.Owner), ifMatch: ifmatch.Versions(3, 1),
			want: succeeds, done: true, phase: "cutoff", startedIf: []int64{1}, reads: 1, cutOffs: 1},
		{name: "stale If-Match of several tags", p: as(owner, authz.Owner), ifMatch: ifmatch.Versions(2, 3),
			want: fails(errs.PreconditionFailed, "version_mismatch"), reads: 1},
		{name: "If-Match of only weak tags", p: as(owner, authz.Owner), ifMatch: ifmatch.Versions(),
			want: fails(errs.PreconditionFailed, "version_mismatch"), reads: 1},
	}
	for _, c := range cases {
		t.Run(c.want.Name("204", "DeleteOrg", c.name), func(t *testing.T) {
			s := newFake(seedUsers()...)
			if c.setup != nil {
				c.setup(s)
			}
			w := deletion.NewWorker(fakeDeletions{err: c.finishErr}, deletion.Options{})
			t.Cleanup(w.Close)
			// No timer decides: the run's result (or the job under way)
			// always comes first.
			j, done, err := tenant.NewService(s, w, now).DeleteOrg(context.Background(), c.p, c.ifMatch, time.Hour)
			c.want.Check(t, err)
			if got := s.Calls["GetOrg"]; got != c.reads {
				t.Errorf("reads of the org: got %d, want %d", got, c.reads)
			}
			if !slices.Equal(s.startedIf, c.startedIf) {
				t.Errorf("StartOffboarding's ifVersion: got %v, want %v", s.startedIf, c.startedIf)
			}
			if got := s.Calls["CutOff"]; got != c.cutOffs {
				t.Errorf("CutOff calls: got %d, want %d", got, c.cutOffs)
			}
			if s.released != c.released {
				t.Errorf("releases: got %d, want %d", s.released, c.released)
			}
			if !c.want.OK {
				return
			}
			if done != c.done || j.OrgID != orgID || j.Phase != c.phase {
				t.Errorf("got %+v, done %v; want phase %q, done %v", j, done, c.phase, c.done)
			}
		})
	}
}

func TestGetOffboarding(t *testing.T) {
	cases := []struct {
		name     string
		p        authz.Principal
		underWay bool
		want     outcome
	}{
		{name: "owner reads the progress", p: as(owner, authz.Owner), underWay: true, want: succeeds},
		{name: "admin", p: as(admin, authz.Admin), underWay: true, want: fails(errs.Forbidden, "forbidden")},
		{name: "none under way", p: as(owner, authz.Owner), want: fails(errs.NotFound, "offboarding_not_found")},
	}
	for _, c := range cases {
		t.Run(c.want.Name("200", "GetOffboarding", c.name), func(t *testing.T) {
			s := newFake(seedUsers()...)
			if c.underWay {
				s.offboarding[orgID] = deletion.Job{Kind: deletion.Org, OrgID: orgID, By: owner, Phase: "teams"}
			}
			j, err := tenant.NewService(s, nil, now).GetOffboarding(context.Background(), c.p)
			c.want.Check(t, err)
			if c.want.OK && j.Phase != "teams" {
				t.Errorf("got %+v, want phase teams", j)
			}
		})
	}
}

// TestStoreErrorsPass: an error of the store reaches the caller as it is,
// and is not retried, whatever its kind.
func TestStoreErrorsPass(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want outcome
	}{
		{name: "unavailable", err: errs.E(errs.Unavailable, "db_unavailable", "throttled"), want: fails(errs.Unavailable, "db_unavailable")},
		{name: "unclassified", err: errors.New("connection reset"), want: fails(errs.Internal, "")},
	}
	for _, c := range cases {
		t.Run(c.want.Name("200", "UpdateOrgUser", c.name), func(t *testing.T) {
			s := newFake(seedUsers()...)
			s.Fail["UpdateOrgUser"] = c.err
			_, err := tenant.NewService(s, nil, now).UpdateOrgUser(context.Background(), as(admin, authz.Admin), member, nil,
				tenant.UserPatch{Name: ptr("Maxine")}, ifmatch.None)
			c.want.Check(t, err)
			if !errors.Is(err, c.err) {
				t.Errorf("got %v, want %v", err, c.err)
			}
			if n := s.Calls["UpdateOrgUser"]; n != 1 {
				t.Errorf("writes: got %d, want 1", n)
			}
		})
	}
}
