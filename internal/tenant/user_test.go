package tenant_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ifmatch"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/testkit"
)

func ptr[T any](v T) *T { return &v }

func TestAddOrgUser(t *testing.T) {
	newUser := tenant.NewUser{UserID: nobody, Email: "nemo@example.com", Name: "Nemo", Role: authz.Member}
	with := func(f func(*tenant.NewUser)) tenant.NewUser { u := newUser; f(&u); return u }
	cases := []struct {
		name  string
		p     authz.Principal
		in    tenant.NewUser
		setup func(s *fakeStore)
		want  outcome
		// floor is the event's actor floor when the add writes; none when
		// it writes nothing.
		floor authz.Role
	}{
		{name: "admin adds a member", p: as(admin, authz.Admin), in: newUser, want: succeeds, floor: authz.Admin},
		{name: "admin adds an admin", p: as(admin, authz.Admin), in: with(func(u *tenant.NewUser) { u.Role = authz.Admin }), want: succeeds, floor: authz.Admin},
		{name: "owner adds an owner", p: as(owner, authz.Owner), in: with(func(u *tenant.NewUser) { u.Role = authz.Owner }), want: succeeds, floor: authz.Owner},
		{name: "member adds a member", p: as(member, authz.Member), in: newUser, want: fails(errs.Forbidden, "forbidden")},
		{name: "admin adds an owner", p: as(admin, authz.Admin), in: with(func(u *tenant.NewUser) { u.Role = authz.Owner }), want: fails(errs.Forbidden, "forbidden")},
		{name: "member adds an owner with a bad email", p: as(member, authz.Member), in: with(func(u *tenant.NewUser) { u.Role = authz.Owner; u.Email = "x" }),
			want: fails(errs.Forbidden, "forbidden")},
		{name: "bad role", p: as(owner, authz.Owner), in: with(func(u *tenant.NewUser) { u.Role = "superuser" }), want: fails(errs.Invalid, "invalid_role")},
		{name: "no role", p: as(owner, authz.Owner), in: with(func(u *tenant.NewUser) { u.Role = "" }), want: fails(errs.Invalid, "invalid_role")},
		{name: "bad email", p: as(admin, authz.Admin), in: with(func(u *tenant.NewUser) { u.Email = "Nemo <nemo@example.com>" }), want: fails(errs.Invalid, "invalid_email")},
		{name: "email too long", p: as(admin, authz.Admin), in: with(func(u *tenant.NewUser) { u.Email = strings.Repeat("n", 243) + "@example.com" }), want: fails(errs.Invalid, "too_long")},
		{name: "bad user ID", p: as(admin, authz.Admin), in: with(func(u *tenant.NewUser) { u.UserID = "u#nemo" }), want: fails(errs.Invalid, "invalid_id")},
		{name: "empty name", p: as(admin, authz.Admin), in: with(func(u *tenant.NewUser) { u.Name = "" }), want: fails(errs.Invalid, "required")},
		{name: "name of 201 characters", p: as(admin, authz.Admin), in: with(func(u *tenant.NewUser) { u.Name = strings.Repeat("n", tenant.MaxNameLen+1) }), want: fails(errs.Invalid, "too_long")},
		{name: "name of 200 characters", p: as(admin, authz.Admin), in: with(func(u *tenant.NewUser) { u.Name = strings.Repeat("ñ", tenant.MaxNameLen) }), want: succeeds, floor: authz.Admin},
		{name: "user already in the org", p: as(admin, authz.Admin), in: with(func(u *tenant.NewUser) { u.UserID = other }), want: fails(errs.Conflict, "user_exists")},
		{name: "email taken", p: as(admin, authz.Admin), in: with(func(u *tenant.NewUser) { u.Email = "mia@example.com" }), want: fails(errs.Conflict, "email_taken")},
		{name: "repeated idempotent add returns the user it added", p: as(admin, authz.Admin), in: with(func(u *tenant.NewUser) { u.ResourceID = "req-1" }),
			setup: func(s *fakeStore) {
				u := seedUser(nobody, authz.Member)
				u.Email, u.Name, u.AddedBy = "nemo@example.com", "Nemo", "req-1"
				s.users[userKey(orgID, nobody)] = u
			}, want: succeeds},
		{name: "idempotent add of a user another request added", p: as(admin, authz.Admin), in: with(func(u *tenant.NewUser) { u.ResourceID = "req-2" }),
			setup: func(s *fakeStore) {
				u := seedUser(nobody, authz.Member)
				u.AddedBy = "req-1"
				s.users[userKey(orgID, nobody)] = u
			}, want: fails(errs.Conflict, "user_exists")},
	}
	for _, c := range cases {
		t.Run(c.want.Name("201", "AddOrgUser", c.name), func(t *testing.T) {
			s := newFake(seedUsers()...)
			if c.setup != nil {
				c.setup(s)
			}
			before := s.users[userKey(orgID, c.in.UserID)]
			u, err := tenant.NewService(s, nil, now).AddOrgUser(context.Background(), c.p, c.in)
			c.want.Check(t, err)
			stored := s.users[userKey(orgID, c.in.UserID)]
			if !c.want.OK {
				s.WantNoEvent(t)
				if stored != before {
					t.Errorf("stored: got %+v, want it unchanged %+v", stored, before)
				}
				return
			}
			if u != stored {
				t.Errorf("returned %+v, stored %+v", u, stored)
			}
			if c.floor == "" {
				s.WantNoEvent(t)
				return
			}
			want := tenant.User{OrgID: orgID, UserID: c.in.UserID, Email: c.in.Email, Name: c.in.Name, Role: c.in.Role,
				JoinedAt: t1, UpdatedAt: t1, Version: 1, AddedBy: c.in.ResourceID}
			if u != want {
				t.Errorf("got %+v, want %+v", u, want)
			}
			s.WantEvent(t, "user.add", "user", c.in.UserID, c.p.UserID, testkit.ByOrg(c.floor), "email", "name", "role")
		})
	}
}

func TestUpdateOrgUser(t *testing.T) {
	cases := []struct {
		name    string
		p       authz.Principal
		target  string
		patch   tenant.UserPatch
		ifMatch ifmatch.Match
		// first passes the target as stored to the service (a route's
		// authorization read), firstVersion at that version when set.
		first        bool
		firstVersion int64
		setup        func(s *fakeStore)
		want         outcome
		reads        int // of the target
		// floor and fields are the event's when the update writes; fields
		// nil: it writes nothing.
		floor  authz.Role
		fields []string
		check  func(t *testing.T, s *fakeStore, u tenant.User)
	}{
		// Validation before anything else.
		{name: "empty patch", p: as(admin, authz.Admin), target: member, want: fails(errs.Invalid, "empty_patch")},
		{name: "empty patch of a member on another", p: as(member, authz.Member), target: other, want: fails(errs.Invalid, "empty_patch")},

		// Members: their own name only, decided before the target is read.
		{name: "member renames themself", p: as(member, authz.Member), target: member, patch: tenant.UserPatch{Name: ptr("Maxine")},
			want: succeeds, reads: 1, floor: authz.Member, fields: []string{"name"}},
		{name: "member changes another's role", p: as(member, authz.Member), target: other, patch: tenant.UserPatch{Role: ptr(authz.Admin)},
			want: fails(errs.Forbidden, "forbidden")},
		{name: "member renames another", p: as(member, authz.Member), target: other, patch: tenant.UserPatch{Name: ptr("Mo")},
			want: fails(errs.Forbidden, "forbidden")},
		{name: "member patches a missing user", p: as(member, authz.Member), target: nobody, patch: tenant.UserPatch{Name: ptr("Nemo")},
			want: fails(errs.Forbidden, "forbidden")},
		{name: "member renames another with a bad name", p: as(member, authz.Member), target: other, patch: tenant.UserPatch{Name: ptr("")},
			want: fails(errs.Forbidden, "forbidden")},
		{name: "member changes their own email", p: as(member, authz.Member), target: member, patch: tenant.UserPatch{Email: ptr("maxine@example.com")},
			want: fails(errs.Forbidden, "forbidden")},
		{name: "member promotes themself", p: as(member, authz.Member), target: member, patch: tenant.UserPatch{Role: ptr(authz.Admin)},
			want: fails(errs.Forbidden, "forbidden")},
		{name: "member renames themself and keeps their role", p: as(member, authz.Member), target: member,
			patch: tenant.UserPatch{Name: ptr("Maxine"), Role: ptr(authz.Member)}, want: fails(errs.Forbidden, "forbidden")},

		// Admins: anyone but owners, and no owner roles.
		{name: "admin renames a member", p: as(admin, authz.Admin), target: member, patch: tenant.UserPatch{Name: ptr("Maxine")},
			want: succeeds, reads: 1, floor: authz.Admin, fields: []string{"name"}},
		{name: "admin promotes a member to admin", p: as(admin, authz.Admin), target: member, patch: tenant.UserPatch{Role: ptr(authz.Admin)},
			want: succeeds, reads: 1, floor: authz.Admin, fields: []string{"role"}},
		{name: "admin demotes another admin", p: as(admin, authz.Admin), target: admin2, patch: tenant.UserPatch{Role: ptr(authz.Member)},
			want: succeeds, reads: 1, floor: authz.Admin, fields: []string{"role"}},
		{name: "admin demotes themself", p: as(admin, authz.Admin), target: admin, patch: tenant.UserPatch{Role: ptr(authz.Member)},
			want: succeeds, reads: 1, floor: authz.Admin, fields: []string{"role"}},
		{name: "admin changes a member's email and name", p: as(admin, authz.Admin), target: member,
			patch: tenant.UserPatch{Name: ptr("Maxine"), Email: ptr("maxine@example.com")},
			want:  succeeds, reads: 1, floor: authz.Admin, fields: []string{"email", "name"}},
		{name: "admin renames an owner", p: as(admin, authz.Admin), target: owner, patch: tenant.UserPatch{Name: ptr("Liv")},
			want: fails(errs.Forbidden, "forbidden"), reads: 1},
		{name: "admin demotes an owner", p: as(admin, authz.Admin), target: owner, patch: tenant.UserPatch{Role: ptr(authz.Admin)},
			want: fails(errs.Forbidden, "forbidden"), reads: 1},
		{name: "admin promotes a member to owner", p: as(admin, authz.Admin), target: member, patch: tenant.UserPatch{Role: ptr(authz.Owner)},
			want: fails(errs.Forbidden, "forbidden"), reads: 1},
		{name: "admin makes themself owner", p: as(admin, authz.Admin), target: admin, patch: tenant.UserPatch{Role: ptr(authz.Owner)},
			want: fails(errs.Forbidden, "forbidden"), reads: 1},
		{name: "admin patches a missing user", p: as(admin, authz.Admin), target: nobody, patch: tenant.UserPatch{Name: ptr("Nemo")},
			want: fails(errs.NotFound, "user_not_found"), reads: 1},

		// Owners: anything, but the last owner stays.
		{name: "owner promotes a member to owner", p: as(owner, authz.Owner), target: member, patch: tenant.UserPatch{Role: ptr(authz.Owner)},
			want: succeeds, reads: 1, floor: authz.Owner, fields: []string{"role"}},
		{name: "owner renames another owner", p: as(owner, authz.Owner), target: owner2, patch: tenant.UserPatch{Name: ptr("Ozzy")},
			want: succeeds, reads: 1, floor: authz.Owner, fields: []string{"name"}},
		{name: "owner demotes another owner", p: as(owner, authz.Owner), target: owner2, patch: tenant.UserPatch{Role: ptr(authz.Admin)},
			want: succeeds, reads: 1, floor: authz.Owner, fields: []string{"role"}},
		{name: "owner renames themself", p: as(owner, authz.Owner), target: owner, patch: tenant.UserPatch{Name: ptr("Liv")},
			want: succeeds, reads: 1, floor: authz.Member, fields: []string{"name"}},
		{name: "owner demotes themself", p: as(owner, authz.Owner), target: owner, patch: tenant.UserPatch{Role: ptr(authz.Admin)},
			want: succeeds, reads: 1, floor: authz.Owner, fields: []string{"role"}},
		{name: "last owner demotes themself", p: as(owner, authz.Owner), target: owner, patch: tenant.UserPatch{Role: ptr(authz.Admin)},
			setup: func(s *fakeStore) { delete(s.users, userKey(orgID, owner2)) },
			want:  fails(errs.Conflict, "last_owner"), reads: 1},

		// Field rules, after the decision.
		{name: "bad role", p: as(owner, authz.Owner), target: member, patch: tenant.UserPatch{Role: ptr(authz.Role("superuser"))},
			want: fails(errs.Invalid, "invalid_role"), reads: 1},
		{name: "empty name", p: as(admin, authz.Admin), target: member, patch: tenant.UserPatch{Name: ptr("")},
			want: fails(errs.Invalid, "required"), reads: 1},
		{name: "name of 201 characters", p: as(admin, authz.Admin), target: member, patch: tenant.UserPatch{Name: ptr(strings.Repeat("m", tenant.MaxNameLen+1))},
			want: fails(errs.Invalid, "too_long"), reads: 1},
		{name: "name with a trailing space", p: as(member, authz.Member), target: member, patch: tenant.UserPatch{Name: ptr("Max ")},
			want: fails(errs.Invalid, "invalid_text"), reads: 1},
		{name: "bad email", p: as(admin, authz.Admin), target: member, patch: tenant.UserPatch{Email: ptr("max@@example.com")},
			want: fails(errs.Invalid, "invalid_email"), reads: 1},
		{name: "email taken", p: as(admin, authz.Admin), target: member, patch: tenant.UserPatch{Email: ptr("mia@example.com")},
			want: fails(errs.Conflict, "email_taken"), reads: 1},
		{name: "same name writes nothing", p: as(admin, authz.Admin), target: member, patch: tenant.UserPatch{Name: ptr("Max")},
			want: succeeds, reads: 1,
			check: func(t *testing.T, s *fakeStore, u tenant.User) {
				if u != seedUser(member, authz.Member) {
					t.Errorf("got %+v, want the user as it was", u)
				}
				if n := s.Calls["UpdateOrgUser"]; n != 0 {
					t.Errorf("UpdateOrgUser calls: got %d, want 0", n)
				}
			}},

		// If-Match.
		{name: "stale If-Match", p: as(admin, authz.Admin), target: member, patch: tenant.UserPatch{Name: ptr("Maxine")}, ifMatch: ifmatch.Versions(0),
			want: fails(errs.PreconditionFailed, "version_mismatch"), reads: 1},
		{name: "stale If-Match on a no-op", p: as(admin, authz.Admin), target: member, patch: tenant.UserPatch{Name: ptr("Max")}, ifMatch: ifmatch.Versions(2),
			want: fails(errs.PreconditionFailed, "version_mismatch"), reads: 1},
		{name: "If-Match of the current version", p: as(admin, authz.Admin), target: member, patch: tenant.UserPatch{Name: ptr("Maxine")}, ifMatch: ifmatch.Versions(1),
			want: succeeds, reads: 1, floor: authz.Admin, fields: []string{"name"}},
		{name: "If-Match *", p: as(admin, authz.Admin), target: member, patch: tenant.UserPatch{Name: ptr("Maxine")}, ifMatch: ifmatch.Any(),
			want: succeeds, reads: 1, floor: authz.Admin, fields: []string{"name"}},
		{name: "If-Match on a user changed concurrently is not retried", p: as(admin, authz.Admin), target: member,
			patch: tenant.UserPatch{Name: ptr("Maxine")}, ifMatch: ifmatch.Versions(1), first: true,
			setup: func(s *fakeStore) {
				s.BeforeWrite = once(func() { s.change(member, func(u *tenant.User) { u.Name = "Mx" }) })
			},
			want: fails(errs.PreconditionFailed, "version_mismatch"), reads: 0},
		{name: "stale If-Match, 403 first", p: as(member, authz.Member), target: other, patch: tenant.UserPatch{Name: ptr("Mo")}, ifMatch: ifmatch.Versions(0),
			want: fails(errs.Forbidden, "forbidden")},

		// first, and retries without If-Match.
		{name: "first is used without a read", p: as(admin, authz.Admin), target: member, patch: tenant.UserPatch{Name: ptr("Maxine")}, first: true,
			want: succeeds, reads: 0, floor: authz.Admin, fields: []string{"name"}},
		{name: "stale first is read again", p: as(admin, authz.Admin), target: member, patch: tenant.UserPatch{Role: ptr(authz.Admin)}, first: true,
			setup: func(s *fakeStore) { s.change(member, func(u *tenant.User) { u.Name = "Mx" }) },
			want:  succeeds, reads: 1, floor: authz.Admin, fields: []string{"role"},
			check: func(t *testing.T, s *fakeStore, u tenant.User) {
				if u.Name != "Mx" || u.Role != authz.Admin || u.Version != 3 {
					t.Errorf("got %+v, want the concurrent name kept, the role changed, version 3", u)
				}
			}},
		{name: "no If-Match: a concurrent change is read again", p: as(admin, authz.Admin), target: member, patch: tenant.UserPatch{Role: ptr(authz.Admin)},
			setup: func(s *fakeStore) {
				s.BeforeWrite = once(func() { s.change(member, func(u *tenant.User) { u.Name = "Mx" }) })
			},
			want: succeeds, reads: 2, floor: authz.Admin, fields: []string{"role"},
			check: func(t *testing.T, s *fakeStore, u tenant.User) {
				if u.Name != "Mx" || u.Role != authz.Admin || u.Version != 3 {
					t.Errorf("got %+v, want the concurrent name kept, the role changed, version 3", u)
				}
			}},
		{name: "retry decides again: the target became an owner", p: as(admin, authz.Admin), target: member, patch: tenant.UserPatch{Name: ptr("Maxine")}, first: true,
			setup: func(s *fakeStore) {
				s.BeforeWrite = once(func() { s.change(member, func(u *tenant.User) { u.Role = authz.Owner }) })
			},
			want: fails(errs.Forbidden, "forbidden"), reads: 1},
		{name: "no If-Match: always changed concurrently", p: as(admin, authz.Admin), target: member, patch: tenant.UserPatch{Name: ptr("Maxine")}, first: true,
			setup: func(s *fakeStore) { s.BeforeWrite = func() { s.change(member, func(*tenant.User) {}) } },
			want:  fails(errs.Unavailable, "busy"), reads: 11},
	}
	for _, c := range cases {
		t.Run(c.want.Name("200", "UpdateOrgUser", c.name), func(t *testing.T) {
			s := newFake(seedUsers()...)
			var first *tenant.User
			if c.first {
				u := s.user(t, c.target)
				first = &u
			}
			if c.setup != nil {
				c.setup(s)
			}
			before := s.users[userKey(orgID, c.target)]
			u, err := tenant.NewService(s, nil, now).UpdateOrgUser(context.Background(), c.p, c.target, first, c.patch, c.ifMatch)
			c.want.Check(t, err)
			if got := s.Calls["GetOrgUser"]; got != c.reads {
				t.Errorf("reads of the target: got %d, want %d", got, c.reads)
			}
			if !c.want.OK {
				s.WantNoEvent(t)
				if c.setup == nil && s.users[userKey(orgID, c.target)] != before {
					t.Errorf("stored: got %+v, want it unchanged", s.users[userKey(orgID, c.target)])
				}
				return
			}
			if stored := s.user(t, c.target); u != stored {
				t.Errorf("returned %+v, stored %+v", u, stored)
			}
			if c.fields == nil {
				s.WantNoEvent(t)
			} else {
				s.WantEvent(t, "user.update", "user", c.target, c.p.UserID, testkit.ByOrg(c.floor), c.fields...)
				if u.UpdatedAt != t1 || u.JoinedAt != t0 {
					t.Errorf("times: got joined %v updated %v, want %v, %v", u.JoinedAt, u.UpdatedAt, t0, t1)
				}
			}
			if c.check != nil {
				c.check(t, s, u)
			}
		})
	}
}

func TestRemoveOrgUser(t *testing.T) {
	cases := []struct {
		name    string
		p       authz.Principal
		target  string
		ifMatch ifmatch.Match
		first   bool
		setup   func(s *fakeStore)
		want    outcome
		reads   int
		floor   authz.Role
	}{
		{name: "admin removes a member", p: as(admin, authz.Admin), target: member, want: succeeds, reads: 1, floor: authz.Admin},
		{name: "admin removes another admin", p: as(admin, authz.Admin), target: admin2, want: succeeds, reads: 1, floor: authz.Admin},
		{name: "member leaves", p: as(member, authz.Member), target: member, want: succeeds, reads: 1, floor: authz.Member},
		{name: "admin leaves", p: as(admin, authz.Admin), target: admin, want: succeeds, reads: 1, floor: authz.Member},
		{name: "owner removes another owner", p: as(owner, authz.Owner), target: owner2, want: succeeds, reads: 1, floor: authz.Owner},
		{name: "owner leaves", p: as(owner, authz.Owner), target: owner, want: succeeds, reads: 1, floor: authz.Owner},
		{name: "member removes another", p: as(member, authz.Member), target: other, want: fails(errs.Forbidden, "forbidden")},
		{name: "member removes a missing user", p: as(member, authz.Member), target: nobody, want: fails(errs.Forbidden, "forbidden")},
		{name: "admin removes an owner", p: as(admin, authz.Admin), target: owner, want: fails(errs.Forbidden, "forbidden"), reads: 1},
		{name: "admin removes a missing user", p: as(admin, authz.Admin), target: nobody, want: fails(errs.NotFound, "user_not_found"), reads: 1},
		{name: "last owner leaves", p: as(owner, authz.Owner), target: owner,
			setup: func(s *fakeStore) { delete(s.users, userKey(orgID, owner2)) },
			want:  fails(errs.Conflict, "last_owner"), reads: 1},
		{name: "stale If-Match", p: as(admin, authz.Admin), target: member, ifMatch: ifmatch.Versions(7),
			want: fails(errs.PreconditionFailed, "version_mismatch"), reads: 1},
		{name: "If-Match *", p: as(admin, authz.Admin), target: member, ifMatch: ifmatch.Any(), want: succeeds, reads: 1, floor: authz.Admin},
		{name: "If-Match of the current version", p: as(admin, authz.Admin), target: member, ifMatch: ifmatch.Versions(3, 1), want: succeeds, reads: 1, floor: authz.Admin},
		{name: "first is used without a read", p: as(admin, authz.Admin), target: member, first: true, want: succeeds, reads: 0, floor: authz.Admin},
		{name: "no If-Match: a concurrent change is read again", p: as(admin, authz.Admin), target: member, first: true,
			setup: func(s *fakeStore) {
				s.BeforeWrite = once(func() { s.change(member, func(u *tenant.User) { u.Name = "Mx" }) })
			},
			want: succeeds, reads: 1, floor: authz.Admin},
		{name: "If-Match: a concurrent change is not retried", p: as(admin, authz.Admin), target: member, first: true, ifMatch: ifmatch.Versions(1),
			setup: func(s *fakeStore) {
				s.BeforeWrite = once(func() { s.change(member, func(u *tenant.User) { u.Name = "Mx" }) })
			},
			want: fails(errs.PreconditionFailed, "version_mismatch"), reads: 0},
		{name: "retry decides again: the target became an owner", p: as(admin, authz.Admin), target: member, first: true,
			setup: func(s *fakeStore) {
				s.BeforeWrite = once(func() { s.change(member, func(u *tenant.User) { u.Role = authz.Owner }) })
			},
			want: fails(errs.Forbidden, "forbidden"), reads: 1},
		{name: "no If-Match: always changed concurrently", p: as(admin, authz.Admin), target: member,
			setup: func(s *fakeStore) { s.BeforeWrite = func() { s.change(member, func(*tenant.User) {}) } },
			want:  fails(errs.Unavailable, "busy"), reads: 12},
	}
	for _, c := range cases {
		t.Run(c.want.Name("204", "RemoveOrgUser", c.name), func(t *testing.T) {
			s := newFake(seedUsers()...)
			var first *tenant.User
			if c.first {
				u := s.user(t, c.target)
				first = &u
			}
			if c.setup != nil {
				c.setup(s)
			}
			err := tenant.NewService(s, nil, now).RemoveOrgUser(context.Background(), c.p, c.target, first, c.ifMatch)
			c.want.Check(t, err)
			if got := s.Calls["GetOrgUser"]; got != c.reads {
				t.Errorf("reads of the target: got %d, want %d", got, c.reads)
			}
			_, stored := s.users[userKey(orgID, c.target)]
			if !c.want.OK {
				s.WantNoEvent(t)
				if c.target != nobody && !stored {
					t.Errorf("the user was removed")
				}
				return
			}
			if stored {
				t.Errorf("the user is still stored")
			}
			s.WantEvent(t, "user.remove", "user", c.target, c.p.UserID, testkit.ByOrg(c.floor), "email", "role")
		})
	}
}

func TestReadOrgUsers(t *testing.T) {
	maxUser := seedUser(member, authz.Member)
	cases := []struct {
		name  string
		p     authz.Principal
		first *tenant.User
		want  outcome
		reads int
	}{
		{name: "member reads a user", p: as(member, authz.Member), want: succeeds, reads: 1},
		{name: "first is used without a read", p: as(member, authz.Member), first: &maxUser, want: succeeds, reads: 0},
		{name: "no role", p: as(nobody, ""), want: fails(errs.Forbidden, "forbidden")},
	}
	for _, c := range cases {
		t.Run(c.want.Name("200", "GetOrgUser", c.name), func(t *testing.T) {
			s := newFake(seedUsers()...)
			u, err := tenant.NewService(s, nil, now).GetOrgUser(context.Background(), c.p, member, c.first)
			c.want.Check(t, err)
			if got := s.Calls["GetOrgUser"]; got != c.reads {
				t.Errorf("reads: got %d, want %d", got, c.reads)
			}
			if c.want.OK && u != maxUser {
				t.Errorf("got %+v, want %+v", u, maxUser)
			}
		})
	}
	t.Run("200/ListOrgUsers/by user ID", func(t *testing.T) {
		s := newFake(seedUsers()...)
		r, err := tenant.NewService(s, nil, now).ListOrgUsers(context.Background(), as(member, authz.Member), page.Request{Limit: 3})
		succeeds.Check(t, err)
		var got []string
		for _, u := range r.Items {
			got = append(got, u.UserID)
		}
		if want := []string{admin, admin2, member}; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("got %v, want %v", got, want)
		}
	})
	t.Run("403/ListOrgUsers/no role", func(t *testing.T) {
		s := newFake(seedUsers()...)
		_, err := tenant.NewService(s, nil, now).ListOrgUsers(context.Background(), as(nobody, ""), page.Request{Limit: 3})
		fails(errs.Forbidden, "forbidden").Check(t, err)
		if s.Calls["ListOrgUsers"] != 0 {
			t.Errorf("the store was read")
		}
	})
	t.Run("200/BatchGetOrgUsers/absent users left out", func(t *testing.T) {
		s := newFake(seedUsers()...)
		m, err := tenant.NewService(s, nil, now).BatchGetOrgUsers(context.Background(), as(member, authz.Member), []string{owner, nobody})
		succeeds.Check(t, err)
		if _, ok := m[owner]; len(m) != 1 || !ok {
			t.Errorf("got %v, want only %s", m, owner)
		}
	})
}
