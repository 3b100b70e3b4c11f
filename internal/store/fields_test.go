package store_test

// The store keeps each entity in several hand-written parallel lists: the
// item struct, the to/from conversions, the SET list of each update, the
// hand decoders. A field missing from one of them is lost silently, and no
// test of behaviour notices: these tests are the guard. Each builds a value
// with every field of the domain struct set (checked by reflection, so a
// field added to the struct fails here until it is filled), writes it
// through the store's create, reads it back through every getter and
// listing, and compares field by field; then changes every field the update
// may change (checked by reflection too), updates, and reads it back again.

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/access"
	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/idempotency"
	"github.com/tenantd/tenantd/internal/invitation"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
)

// fieldsPage is a page large enough for every listing of these tests.
var fieldsPage = page.Request{Limit: 100}

// at is the fixture's clock plus i minutes and i microseconds and
// nanoseconds: distinct times, with digits a store that truncates would
// lose.
func (f *fixture) at(i int) time.Time {
	return f.now.Add(time.Duration(i)*time.Minute + time.Duration(i)*1001*time.Nanosecond)
}

// mustFull fails tb unless every exported field of v (a struct) is set: not
// zero, and a slice not empty. Fields of one kind (strings, integers,
// times) must also differ from each other, so a conversion that reads one
// field into another shows.
func mustFull(tb testing.TB, v any) {
	tb.Helper()
	rv := reflect.ValueOf(v)
	seen := map[string]string{} // kind + value -> field
	for i := range rv.NumField() {
		sf, fv := rv.Type().Field(i), rv.Field(i)
		if !sf.IsExported() {
			continue
		}
		if fv.IsZero() || (fv.Kind() == reflect.Slice && fv.Len() == 0) {
			tb.Errorf("%T.%s is not set: give it a value in this test (or, if the store must not keep it, say so where the test expects it back)", v, sf.Name)
			continue
		}
		var k string
		switch {
		case fv.Type() == reflect.TypeFor[time.Time]():
			k = "time " + fv.Interface().(time.Time).UTC().Format(time.RFC3339Nano)
		case fv.Kind() == reflect.String:
			k = "string " + fv.String()
		case fv.CanInt():
			k = fmt.Sprint("int ", fv.Int())
		default:
			continue
		}
		if other, dup := seen[k]; dup {
			tb.Errorf("%T.%s and %s hold the same value (%s): make them distinct", v, sf.Name, other, k)
		}
		seen[k] = sf.Name
	}
}

// field returns v's field name, failing tb if v has none: a list of field
// names in this file cannot go stale.
func field(tb testing.TB, v reflect.Value, name string) reflect.Value {
	tb.Helper()
	f := v.FieldByName(name)
	if !f.IsValid() {
		tb.Fatalf("%s has no field %s", v.Type(), name)
	}
	return f
}

// zeroed returns v with the named fields zero.
func zeroed[T any](tb testing.TB, v T, names ...string) T {
	tb.Helper()
	rv := reflect.ValueOf(&v).Elem()
	for _, n := range names {
		f := field(tb, rv, n)
		f.Set(reflect.Zero(f.Type()))
	}
	return v
}

// copied returns v with the named fields taken from src.
func copied[T any](tb testing.TB, v, src T, names ...string) T {
	tb.Helper()
	rv, rs := reflect.ValueOf(&v).Elem(), reflect.ValueOf(src)
	for _, n := range names {
		field(tb, rv, n).Set(field(tb, rs, n))
	}
	return v
}

// mustChangeAll fails tb unless next differs from prev in every exported
// field but identity (the item's key: an update addresses the item by it),
// which must be equal.
func mustChangeAll[T any](tb testing.TB, prev, next T, identity ...string) {
	tb.Helper()
	rp, rn := reflect.ValueOf(prev), reflect.ValueOf(next)
	same := map[string]bool{}
	for _, n := range identity {
		same[n] = true
		if !reflect.DeepEqual(field(tb, rp, n).Interface(), field(tb, rn, n).Interface()) {
			tb.Errorf("%T.%s is the item's identity: next must keep prev's", prev, n)
		}
	}
	for i := range rp.NumField() {
		sf := rp.Type().Field(i)
		if sf.IsExported() && !same[sf.Name] && reflect.DeepEqual(rp.Field(i).Interface(), rn.Field(i).Interface()) {
			tb.Errorf("%T.%s is the same in prev and next (%v): change it, so the test sees whether the update writes it", prev, sf.Name, rp.Field(i).Interface())
		}
	}
}

// utcTimes returns v with its time fields in UTC: the store keeps instants,
// not locations.
func utcTimes[T any](v T) T {
	rv := reflect.ValueOf(&v).Elem()
	for i := range rv.NumField() {
		if f := rv.Field(i); f.CanSet() && f.Type() == reflect.TypeFor[time.Time]() {
			f.Set(reflect.ValueOf(f.Interface().(time.Time).UTC()))
		}
	}
	return v
}

// wantSame reports, field by field, where got (what the store read back
// through what) differs from want.
func wantSame[T any](tb testing.TB, what string, got, want T) {
	tb.Helper()
	got = utcTimes(got)
	rg, rw := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := range rg.NumField() {
		sf := rg.Type().Field(i)
		if !sf.IsExported() {
			continue
		}
		if g, w := rg.Field(i).Interface(), rw.Field(i).Interface(); !reflect.DeepEqual(g, w) {
			tb.Errorf("%s: %T.%s: got %#v, want %#v", what, got, sf.Name, g, w)
		}
	}
}

// wantOne asserts a listing holds want alone.
func wantOne[T any](tb testing.TB, what string, items []T, err error, want T) {
	tb.Helper()
	must(tb, err)
	if len(items) != 1 {
		tb.Errorf("%s: got %d items, want 1", what, len(items))
		return
	}
	wantSame(tb, what, items[0], want)
}

// wantOneOf asserts a batch read's map holds want alone, under k.
func wantOneOf[K comparable, T any](tb testing.TB, what string, m map[K]T, err error, k K, want T) {
	tb.Helper()
	must(tb, err)
	if len(m) != 1 {
		tb.Errorf("%s: got %d items, want 1", what, len(m))
	}
	got, ok := m[k]
	if !ok {
		tb.Errorf("%s: %v missing", what, k)
		return
	}
	wantSame(tb, what, got, want)
}

// wantNone asserts a listing is empty.
func wantNone[T any](tb testing.TB, what string, items []T, err error) {
	tb.Helper()
	must(tb, err)
	if len(items) != 0 {
		tb.Errorf("%s: got %d items, want none (a stale index key?)", what, len(items))
	}
}

func TestOrgFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	org := tenant.Org{ID: f.ids.New(), Name: "Fields Org", Version: 3, CreatedAt: f.at(1), UpdatedAt: f.at(2)}
	mustFull(t, org)
	owner := tenant.User{OrgID: org.ID, UserID: "u_owner", Email: "owner@example.com", Name: "Olive Owner", Role: authz.Owner,
		JoinedAt: f.at(3), UpdatedAt: f.at(4), Version: 5, AddedBy: "res-owner"}
	mustFull(t, owner)
	must(t, f.Orgs.CreateOrg(ctx, org, owner, ev(org)))

	read := func(t *testing.T, want tenant.Org) {
		t.Helper()
		got, err := f.Orgs.GetOrg(ctx, org.ID)
		must(t, err)
		wantSame(t, "GetOrg", got, want)
		got, users, err := f.Orgs.GetOrgWithUsers(ctx, org.ID, 10)
		must(t, err)
		wantSame(t, "GetOrgWithUsers", got, want)
		wantOne(t, "GetOrgWithUsers users", users, nil, owner)
		m, err := f.Orgs.BatchGetOrgs(ctx, []string{org.ID})
		wantOneOf(t, "BatchGetOrgs", m, err, org.ID, want)
		created, err := (&store.Audit{DB: f.DB}).OrgCreatedAt(ctx, org.ID)
		must(t, err)
		if !created.Equal(want.CreatedAt) {
			t.Errorf("OrgCreatedAt: got %v, want %v", created, want.CreatedAt)
		}
		// A user's orgs come without the org's name: the service reads
		// the names with BatchGetOrgs (one call per page).
		mine := tenant.OrgMembership{OrgID: org.ID, Name: want.Name, UserName: owner.Name, Role: owner.Role, JoinedAt: owner.JoinedAt}
		mustFull(t, mine)
		r, err := f.Orgs.ListOrgs(ctx, owner.UserID, fieldsPage)
		wantOne(t, "ListOrgs", r.Items, err, zeroed(t, mine, "Name"))
	}

	t.Run("create", func(t *testing.T) { read(t, org) })

	t.Run("update", func(t *testing.T) {
		prev := org
		next := tenant.Org{ID: org.ID, Name: "Fields Org Renamed", Version: 4, UpdatedAt: f.at(12),
			CreatedAt: f.at(13)} // an update must leave it: see kept
		mustFull(t, next)
		mustChangeAll(t, prev, next, "ID") // ID: the org's key
		must(t, f.Orgs.UpdateOrg(ctx, prev, next, ev(next)))
		// Kept: CreatedAt is when the org was made; UpdateOrg does not
		// write it.
		read(t, copied(t, next, prev, "CreatedAt"))
	})
}

func TestOrgUserFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	org := f.newOrg(t, "Fields", "u_owner")
	u := tenant.User{OrgID: org.ID, UserID: "u_fields", Email: "Fields.User@Example.com", Name: "Fiona Fields", Role: authz.Admin,
		JoinedAt: f.at(1), UpdatedAt: f.at(2), Version: 3, AddedBy: "res-fields"}
	mustFull(t, u)
	must(t, f.Orgs.AddOrgUser(ctx, u, ev(u)))

	read := func(t *testing.T, want tenant.User) {
		t.Helper()
		got, err := f.Orgs.GetOrgUser(ctx, org.ID, u.UserID)
		must(t, err)
		wantSame(t, "GetOrgUser", got, want)
		r, err := f.Orgs.ListOrgUsers(ctx, org.ID, fieldsPage)
		must(t, err)
		var listed []tenant.User
		for _, x := range r.Items {
			if x.UserID == u.UserID {
				listed = append(listed, x)
			}
		}
		wantOne(t, "ListOrgUsers", listed, nil, want)
		m, err := f.Orgs.BatchGetOrgUsers(ctx, org.ID, []string{u.UserID})
		wantOneOf(t, "BatchGetOrgUsers", m, err, u.UserID, want)
		_, users, err := f.Orgs.GetOrgWithUsers(ctx, org.ID, 10)
		must(t, err)
		listed = listed[:0]
		for _, x := range users {
			if x.UserID == u.UserID {
				listed = append(listed, x)
			}
		}
		wantOne(t, "GetOrgWithUsers", listed, nil, want)
		found, err := f.Orgs.OrgAccess(ctx, org.ID, u.UserID, access.Target{Kind: access.User, UserID: u.UserID})
		must(t, err)
		if found.User == nil {
			t.Errorf("OrgAccess(user target): no user")
		} else {
			wantSame(t, "OrgAccess(user target)", *found.User, want)
		}
		if c := f.claim(t, org.ID, tenant.NormalizeEmail(want.Email)); c == nil || c["userId"] != want.UserID {
			t.Errorf("the claim of %s: got %v, want one for %s", want.Email, c, want.UserID)
		}
	}

	t.Run("create", func(t *testing.T) { read(t, u) })

	t.Run("update", func(t *testing.T) {
		prev := u
		next := tenant.User{OrgID: u.OrgID, UserID: u.UserID, Email: "fiona@example.org", Name: "Fiona Renamed", Role: authz.Member,
			UpdatedAt: f.at(12), Version: 4,
			JoinedAt: f.at(13), AddedBy: "res-other"} // an update must leave them: see kept
		mustFull(t, next)
		mustChangeAll(t, prev, next, "OrgID", "UserID") // the OrgUser's key
		must(t, f.Orgs.UpdateOrgUser(ctx, prev, next, ev(next)))
		// Kept: JoinedAt is when the user joined, AddedBy the request that
		// added them; UpdateOrgUser writes neither.
		read(t, copied(t, next, prev, "JoinedAt", "AddedBy"))
		if c := f.claim(t, org.ID, tenant.NormalizeEmail(prev.Email)); c != nil {
			t.Errorf("the old email's claim is still there: %v", c)
		}
	})
}

func TestTeamFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	org := f.newOrg(t, "Fields", "u_owner", "u_member")
	team := membership.Team{OrgID: org.ID, ID: f.ids.New(), Name: "Fields Team", Description: "Keeps every field",
		MemberCount: 9, OwnerCount: 8, // CreateTeam sets both to 1: the team is born with its owner edge alone
		Version: 7, CreatedAt: f.at(1), UpdatedAt: f.at(2)}
	mustFull(t, team)
	must(t, f.Teams.CreateTeam(ctx, team, f.member(team, "u_owner", authz.Owner), ev(team)))
	must(t, f.Teams.AddTeamMember(ctx, f.member(team, "u_member", authz.Member), ev(team)))
	team.MemberCount, team.OwnerCount = 2, 1 // two edges, one of them an owner's: distinct counts

	read := func(t *testing.T, want membership.Team) {
		t.Helper()
		got, err := f.Teams.GetTeam(ctx, org.ID, team.ID)
		must(t, err)
		wantSame(t, "GetTeam", got, want)
		got, members, err := f.Teams.GetTeamWithMembers(ctx, org.ID, team.ID, 10)
		must(t, err)
		wantSame(t, "GetTeamWithMembers", got, want)
		if len(members) != 2 {
			t.Errorf("GetTeamWithMembers: %d members, want 2", len(members))
		}
		r, err := f.Teams.ListTeams(ctx, org.ID, fieldsPage)
		wantOne(t, "ListTeams", r.Items, err, want)
		m, err := f.Teams.BatchGetTeams(ctx, org.ID, []string{team.ID})
		wantOneOf(t, "BatchGetTeams", m, err, team.ID, want)
	}

	t.Run("create", func(t *testing.T) { read(t, team) })

	t.Run("update", func(t *testing.T) {
		prev := team
		next := membership.Team{OrgID: team.OrgID, ID: team.ID, Name: "Fields Team Renamed", Description: "Another description",
			Version: 8, UpdatedAt: f.at(12),
			MemberCount: 5, OwnerCount: 4, CreatedAt: f.at(13)} // an update must leave them: see kept
		mustFull(t, next)
		mustChangeAll(t, prev, next, "OrgID", "ID") // the team's key
		must(t, f.Teams.UpdateTeam(ctx, prev, next, ev(next)))
		// Kept: the counts belong to the membership transactions (an
		// update that wrote them would undo a concurrent AddTeamMember);
		// CreatedAt is when the team was made.
		want := copied(t, next, prev, "MemberCount", "OwnerCount", "CreatedAt")
		read(t, want)

		// An empty description is removed, not stored empty.
		prev, next = want, want
		next.Description, next.Version, next.UpdatedAt = "", 9, f.at(14)
		must(t, f.Teams.UpdateTeam(ctx, prev, next, ev(next)))
		read(t, next)
	})
}

func TestTeamMemberFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	org := f.newOrg(t, "Fields", "u_owner", "u_member")
	team := f.team(org.ID, "Fields Team")
	owner := f.member(team, "u_owner", authz.Owner)
	must(t, f.Teams.CreateTeam(ctx, team, owner, ev(team)))
	someone := f.user(org.ID, "u_member", "u_member@example.com", "u_member", authz.Member)
	m := membership.Membership{OrgID: org.ID, TeamID: team.ID, UserID: "u_member", Role: authz.Admin,
		JoinedAt: f.at(1), UpdatedAt: f.at(2), Version: 3,
		TeamName: "Fields Team", User: &someone} // derived: see read
	mustFull(t, m)
	must(t, f.Teams.AddTeamMember(ctx, m, ev(m)))

	read := func(t *testing.T, want membership.Membership) {
		t.Helper()
		// Derived, not stored: TeamName and User are filled by the
		// service's listings that join them (BatchGetTeams,
		// BatchGetOrgUsers).
		want = zeroed(t, want, "TeamName", "User")
		got, err := f.Teams.GetTeamMember(ctx, org.ID, team.ID, m.UserID)
		must(t, err)
		wantSame(t, "GetTeamMember", got, want)
		r, err := f.Teams.ListTeamMembers(ctx, org.ID, team.ID, fieldsPage)
		must(t, err)
		var listed []membership.Membership
		for _, x := range r.Items {
			if x.UserID == m.UserID {
				listed = append(listed, x)
			}
		}
		wantOne(t, "ListTeamMembers", listed, nil, want)
		r, err = f.Teams.ListUserTeams(ctx, org.ID, m.UserID, fieldsPage)
		wantOne(t, "ListUserTeams", r.Items, err, want)
		_, members, err := f.Teams.GetTeamWithMembers(ctx, org.ID, team.ID, 10)
		must(t, err)
		listed = listed[:0]
		for _, x := range members {
			if x.UserID == m.UserID {
				listed = append(listed, x)
			}
		}
		wantOne(t, "GetTeamWithMembers", listed, nil, want)
	}

	t.Run("create", func(t *testing.T) { read(t, m) })

	t.Run("create the owner's edge", func(t *testing.T) {
		got, err := f.Teams.GetTeamMember(ctx, org.ID, team.ID, owner.UserID)
		must(t, err)
		wantSame(t, "GetTeamMember", got, owner)
	})

	t.Run("update", func(t *testing.T) {
		prev := zeroed(t, m, "TeamName", "User") // as read
		other := f.user(org.ID, "u_owner", "u_owner@example.com", "u_owner", authz.Owner)
		next := membership.Membership{OrgID: m.OrgID, TeamID: m.TeamID, UserID: m.UserID, Role: authz.Member,
			UpdatedAt: f.at(12), Version: 4,
			JoinedAt: f.at(13), TeamName: "Another name", User: &other} // an update must leave them: see kept
		mustFull(t, next)
		mustChangeAll(t, prev, next, "OrgID", "TeamID", "UserID") // the edge's key
		must(t, f.Teams.UpdateTeamMember(ctx, prev, next, ev(next)))
		// Kept: JoinedAt is when the user joined the team; the derived
		// fields are never stored.
		read(t, copied(t, next, prev, "JoinedAt"))
	})
}

func TestTicketFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	org := f.newOrg(t, "Fields", "u_requester", "u_assignee", "u_assignee2")
	teams := make([]membership.Team, 2)
	for i := range teams {
		teams[i] = f.team(org.ID, fmt.Sprint("Team ", i))
		must(t, f.Teams.CreateTeam(ctx, teams[i], f.member(teams[i], "u_requester", authz.Owner), ev(teams[i])))
	}
	requester := f.user(org.ID, "u_requester", "u_requester@example.com", "u_requester", authz.Owner)
	assignee := f.user(org.ID, "u_assignee", "u_assignee@example.com", "u_assignee", authz.Member)
	tk := ticket.Ticket{OrgID: org.ID, ID: f.ids.New(), Title: "Every field", Description: "A ticket with every field set",
		Status: ticket.StatusOpen, Priority: ticket.PriorityHigh, RequesterID: "u_requester", AssigneeID: "u_assignee",
		TeamID: teams[0].ID, Tags: []string{"billing", "login"}, CommentCount: 5, Version: 3, CreatedAt: f.at(1), UpdatedAt: f.at(2),
		Requester: &requester, Assignee: &assignee} // derived: see read
	mustFull(t, tk)
	must(t, f.Tickets.CreateTicket(ctx, tk, ev(tk)))

	// read reads want back through every getter and every index that
	// should hold it.
	read := func(t *testing.T, want ticket.Ticket) {
		t.Helper()
		// Derived, not stored: Requester and Assignee are filled by reads
		// that expand them (BatchGetOrgUsers, one call per page).
		want = zeroed(t, want, "Requester", "Assignee")
		got, err := f.Tickets.GetTicket(ctx, org.ID, want.ID)
		must(t, err)
		wantSame(t, "GetTicket", got, want)
		got, _, err = f.Tickets.GetTicketWithComments(ctx, org.ID, want.ID, 10)
		must(t, err)
		wantSame(t, "GetTicketWithComments", got, want)
		listings := map[string]ticket.Filter{
			"ListTickets (GSI1)":                    {},
			"ListTickets oldest first (GSI1)":       {Oldest: true},
			"ListTickets by status (GSI3)":          {Status: want.Status},
			"ListTickets by priority (GSI6)":        {Priority: want.Priority},
			"ListTickets by priority+status (GSI6)": {Priority: want.Priority, Status: want.Status},
		}
		if want.AssigneeID != "" {
			listings["ListTickets by assignee (GSI4)"] = ticket.Filter{AssigneeID: want.AssigneeID}
			listings["ListTickets by assignee+status (GSI7)"] = ticket.Filter{AssigneeID: want.AssigneeID, Status: want.Status}
		}
		for what, filter := range listings {
			r, err := f.Tickets.ListTickets(ctx, org.ID, filter, fieldsPage)
			wantOne(t, what, r.Items, err, want)
		}
		r, err := f.Tickets.ListUserTickets(ctx, org.ID, want.RequesterID, fieldsPage)
		wantOne(t, "ListUserTickets (GSI2)", r.Items, err, want)
		if want.AssigneeID != "" {
			r, err := f.Tickets.ListAssignedTickets(ctx, org.ID, want.AssigneeID, fieldsPage)
			wantOne(t, "ListAssignedTickets (GSI4)", r.Items, err, want)
		}
		if want.TeamID != "" {
			r, err := f.Tickets.ListTeamTickets(ctx, org.ID, want.TeamID, "", fieldsPage)
			wantOne(t, "ListTeamTickets (GSI5)", r.Items, err, want)
			r, err = f.Tickets.ListTeamTickets(ctx, org.ID, want.TeamID, want.Status, fieldsPage)
			wantOne(t, "ListTeamTickets by status (GSI5)", r.Items, err, want)
		}
	}
	// gone asserts no index still files the ticket under prev's keys.
	gone := func(t *testing.T, prev ticket.Ticket) {
		t.Helper()
		for what, filter := range map[string]ticket.Filter{
			"old status (GSI3)":                   {Status: prev.Status},
			"old priority (GSI6)":                 {Priority: prev.Priority},
			"old assignee (GSI4)":                 {AssigneeID: prev.AssigneeID},
			"old assignee and status (GSI7)":      {AssigneeID: prev.AssigneeID, Status: prev.Status},
			"old assignee and new status (GSI7)":  {AssigneeID: prev.AssigneeID, Status: ticket.StatusPending},
			"old priority and new status (GSI6)":  {Priority: prev.Priority, Status: ticket.StatusPending},
			"old priority and old status (GSI6)":  {Priority: prev.Priority, Status: prev.Status},
			"new priority and old status (GSI6)":  {Priority: ticket.PriorityLow, Status: prev.Status},
			"old status, oldest first (GSI3 asc)": {Status: prev.Status, Oldest: true},
		} {
			r, err := f.Tickets.ListTickets(ctx, org.ID, filter, fieldsPage)
			wantNone(t, "ListTickets by "+what, r.Items, err)
		}
		r, err := f.Tickets.ListAssignedTickets(ctx, org.ID, prev.AssigneeID, fieldsPage)
		wantNone(t, "ListAssignedTickets of the old assignee (GSI4)", r.Items, err)
		r, err = f.Tickets.ListTeamTickets(ctx, org.ID, prev.TeamID, "", fieldsPage)
		wantNone(t, "ListTeamTickets of the old team (GSI5)", r.Items, err)
	}

	t.Run("create", func(t *testing.T) { read(t, tk) })

	t.Run("update", func(t *testing.T) {
		prev := zeroed(t, tk, "Requester", "Assignee") // as read
		other := f.user(org.ID, "u_assignee2", "u_assignee2@example.com", "u_assignee2", authz.Member)
		next := ticket.Ticket{OrgID: tk.OrgID, ID: tk.ID, Title: "Every field, changed", Description: "Another description",
			Status: ticket.StatusPending, Priority: ticket.PriorityLow, AssigneeID: "u_assignee2", TeamID: teams[1].ID,
			Tags: []string{"refund"}, Version: 4, UpdatedAt: f.at(12),
			// An update must leave these: see kept.
			RequesterID: "u_assignee", CommentCount: 6, CreatedAt: f.at(13), Requester: &other, Assignee: &requester}
		mustFull(t, next)
		mustChangeAll(t, prev, next, "OrgID", "ID") // the ticket's key
		must(t, f.Tickets.UpdateTicket(ctx, prev, next, ev(next)))
		// Kept: CommentCount belongs to CreateComment's transaction (an
		// update that wrote it would undo a concurrent comment);
		// RequesterID is who raised the ticket, and UpdateTicket writes
		// neither it nor its GSI2 key; CreatedAt is when it was raised.
		want := copied(t, next, prev, "CommentCount", "RequesterID", "CreatedAt")
		read(t, want)
		gone(t, prev)

		// Empty values are removed, with the sparse index keys they make.
		prev, next = want, want
		next.Description, next.AssigneeID, next.TeamID, next.Tags = "", "", "", []string{}
		next.Version, next.UpdatedAt = 5, f.at(14)
		must(t, f.Tickets.UpdateTicket(ctx, prev, next, ev(next)))
		read(t, next)
		r, err := f.Tickets.ListAssignedTickets(ctx, org.ID, prev.AssigneeID, fieldsPage)
		wantNone(t, "ListAssignedTickets after unassigning (GSI4)", r.Items, err)
		r, err = f.Tickets.ListTickets(ctx, org.ID, ticket.Filter{AssigneeID: prev.AssigneeID, Status: prev.Status}, fieldsPage)
		wantNone(t, "ListTickets by assignee+status after unassigning (GSI7)", r.Items, err)
		r, err = f.Tickets.ListTeamTickets(ctx, org.ID, prev.TeamID, "", fieldsPage)
		wantNone(t, "ListTeamTickets after leaving the team (GSI5)", r.Items, err)
	})
}

func TestCommentFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	org := f.newOrg(t, "Fields", "u_requester", "u_author")
	tk := f.ticket(org.ID, "u_requester", "Commented", ticket.StatusOpen)
	must(t, f.Tickets.CreateTicket(ctx, tk, ev(tk)))
	c := ticket.Comment{OrgID: org.ID, TicketID: tk.ID, ID: f.ids.New(), AuthorID: "u_author", Body: "Every field of a comment",
		CreatedAt: f.at(1)}
	mustFull(t, c)
	must(t, f.Tickets.CreateComment(ctx, c, ev(c)))

	// Comments are immutable: there is no update to check.
	got, err := f.Tickets.GetComment(ctx, org.ID, tk.ID, c.ID)
	must(t, err)
	wantSame(t, "GetComment", got, c)
	r, err := f.Tickets.ListComments(ctx, org.ID, tk.ID, fieldsPage)
	wantOne(t, "ListComments", r.Items, err, c)
	parent, comments, err := f.Tickets.GetTicketWithComments(ctx, org.ID, tk.ID, 10)
	wantOne(t, "GetTicketWithComments", comments, err, c)
	// The comment's transaction counts it on the ticket and touches it.
	tk.CommentCount, tk.UpdatedAt = 1, c.CreatedAt
	wantSame(t, "the commented ticket", parent, tk)
}

func TestInvitationFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	org := f.newOrg(t, "Fields", "u_owner")
	teams := make([]string, 2)
	for i := range teams {
		tm := f.team(org.ID, fmt.Sprint("Team ", i))
		must(t, f.Teams.CreateTeam(ctx, tm, f.member(tm, "u_owner", authz.Owner), ev(tm)))
		teams[i] = tm.ID
	}
	inv := invitation.Invitation{OrgID: org.ID, ID: f.ids.New(), Email: "Invited@Example.com", Role: authz.Admin, TeamIDs: teams,
		InvitedBy: "u_owner", TokenHash: invitation.HashToken("a token"), CreatedAt: f.at(1),
		ExpiresAt: f.now.Add(7 * 24 * time.Hour)} // whole seconds: the TTL attribute keeps epoch seconds
	mustFull(t, inv)
	must(t, errOf(f.Invitations.CreateInvitation(ctx, inv, ev(inv))))

	t.Run("create", func(t *testing.T) {
		got, err := f.Invitations.GetInvitation(ctx, org.ID, inv.ID)
		must(t, err)
		wantSame(t, "GetInvitation", got, inv)
		r, err := f.Invitations.ListInvitations(ctx, org.ID, inv.CreatedAt, fieldsPage)
		wantOne(t, "ListInvitations", r.Items, err, inv)
	})

	// Accepting is the invitation's other write: it creates the OrgUser
	// (and the team edges) from the invitation and the caller.
	t.Run("accept", func(t *testing.T) {
		u := tenant.User{OrgID: org.ID, UserID: "u_invited", Email: inv.Email, Name: "Ivy Invited", Role: inv.Role,
			JoinedAt: f.at(2), UpdatedAt: f.at(3), Version: 4, AddedBy: "res-invited"}
		mustFull(t, u)
		joined, err := f.Invitations.AcceptInvitation(ctx, inv, u, evOrg(org.ID))
		must(t, err)
		if !reflect.DeepEqual(joined, teams) {
			t.Errorf("joined %v, want %v", joined, teams)
		}
		got, err := f.Orgs.GetOrgUser(ctx, org.ID, u.UserID)
		must(t, err)
		wantSame(t, "GetOrgUser", got, u)
		for _, team := range teams {
			// The store makes the edges: member role, joined when the user
			// joined the org.
			want := membership.Membership{OrgID: org.ID, TeamID: team, UserID: u.UserID, Role: authz.Member,
				JoinedAt: u.JoinedAt, UpdatedAt: u.JoinedAt, Version: 1}
			got, err := f.Teams.GetTeamMember(ctx, org.ID, team, u.UserID)
			must(t, err)
			wantSame(t, "GetTeamMember", got, want)
		}
		_, err = f.Invitations.GetInvitation(ctx, org.ID, inv.ID)
		wantErr(t, err, errs.NotFound, "invitation_not_found")
	})
}

func TestAuditEventFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	org := f.newOrg(t, "Fields", "u_owner")
	// The change is to team; the actor's team fence is on fenceTeam
	// (distinct IDs, so a field read into another shows).
	team, fenceTeam := f.team(org.ID, "Fields Team"), f.team(org.ID, "Fence Team")
	for _, tm := range []membership.Team{team, fenceTeam} {
		must(t, f.Teams.CreateTeam(ctx, tm, f.member(tm, "u_owner", authz.Owner), ev(tm)))
	}
	at := f.at(7)
	e := audit.Event{OrgID: org.ID, ID: eventIDs.NewAt(at), ActorID: "u_owner",
		ActorFloor: string(authz.Admin), ActorTeamID: fenceTeam.ID, ActorTeamFloor: string(authz.Member), // fence inputs: see below
		Action: "team.update", TargetType: "team", TargetID: team.ID, RequestID: "req-server", ClientRequestID: "req-client",
		At: at, Changes: []audit.Change{{Field: "name", Before: "Fields Team", After: "Renamed"}, {Field: "description", After: "New"}}}
	mustFull(t, e)
	next := team
	next.Name, next.Description, next.Version, next.UpdatedAt = "Renamed", "New", team.Version+1, at
	must(t, f.Teams.UpdateTeam(ctx, team, next, e))

	r, err := (&store.Audit{DB: f.DB}).ListAuditEvents(ctx, audit.Query{OrgID: org.ID, Since: at.Add(-time.Second), Until: at.Add(time.Second), Page: fieldsPage})
	must(t, err)
	var found []audit.Event
	for _, x := range r.Items {
		if x.ID == e.ID {
			found = append(found, x)
		}
	}
	// Not stored: the floors and the team of the fences are what the
	// write proves when it commits, not part of the record.
	wantOne(t, "ListAuditEvents", found, nil, zeroed(t, e, "ActorFloor", "ActorTeamID", "ActorTeamFloor"))
}

func TestIdempotencyRecordFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	org := f.newOrg(t, "Fields", "u_owner")
	ids := &store.Idempotency{DB: f.DB}
	rec := idempotency.Record{OrgID: org.ID, UserID: "u_owner", Key: "key-1", Role: string(authz.Owner),
		Fingerprint: "fp-1", Owner: "attempt-1", ResourceID: f.ids.New(), Released: true, Done: true, Status: 201,
		ContentType: "application/json", ETag: `"etag-1"`, Body: []byte(`{"sealed":true}`), CreatedAt: f.at(1),
		ExpiresAt: f.now.Add(24 * time.Hour)} // whole seconds: the TTL attribute keeps epoch seconds
	mustFull(t, rec)
	_, started, err := ids.Begin(ctx, rec)
	must(t, err)
	if !started {
		t.Fatal("Begin: not started on a new key")
	}
	// A second attempt meets the record as stored. OrgID, UserID, Key and
	// Role are the caller's (the key is their hash): the answer carries
	// the second attempt's own; every other field is read from the item.
	again := idempotency.Record{OrgID: rec.OrgID, UserID: rec.UserID, Key: rec.Key, Role: rec.Role, Owner: "attempt-2",
		CreatedAt: f.at(2), ExpiresAt: rec.ExpiresAt.Add(time.Hour)}
	got, started, err := ids.Begin(ctx, again)
	must(t, err)
	if started {
		t.Fatal("Begin: started on a held key")
	}
	wantSame(t, "Begin on a held key", got, rec)
}

// TestFieldsTestsCoverTheStore: every method of the store that creates or
// updates an entity (by its name: Create..., Update..., Add..., Accept...)
// has its round trip of every field above, and the list names real
// methods.
func TestFieldsTestsCoverTheStore(t *testing.T) {
	covered := map[string]bool{
		"Orgs.CreateOrg": true, "Orgs.UpdateOrg": true, "Orgs.AddOrgUser": true, "Orgs.UpdateOrgUser": true,
		"Teams.CreateTeam": true, "Teams.UpdateTeam": true, "Teams.AddTeamMember": true, "Teams.UpdateTeamMember": true,
		"Tickets.CreateTicket": true, "Tickets.UpdateTicket": true, "Tickets.CreateComment": true,
		"Invitations.CreateInvitation": true, "Invitations.AcceptInvitation": true,
		"Idempotency.Begin": true,
	}
	seen := map[string]bool{}
	for _, v := range []any{&store.Orgs{}, &store.Teams{}, &store.Tickets{}, &store.Invitations{}, &store.Idempotency{}} {
		rt := reflect.TypeOf(v)
		for i := range rt.NumMethod() {
			m := rt.Method(i).Name
			name := rt.Elem().Name() + "." + m
			seen[name] = true
			writes := false
			for _, p := range []string{"Create", "Update", "Add", "Accept"} {
				writes = writes || strings.HasPrefix(m, p)
			}
			if writes && !covered[name] {
				t.Errorf("%s writes an entity: give it a round trip of every field in fields_test.go", name)
			}
		}
	}
	for name := range covered {
		if !seen[name] {
			t.Errorf("%s is not a method of the store any more", name)
		}
	}
}
