package store_test

// The store keeps each entity in several hand-written parallel lists: the
// item struct, the to/from conversions, the SET list of each update, the
// hand decoders. A field missing from one of them is lost silently, and no
// test of behaviour notices: the Test<Entity>Fields tests are the guard.
// Each builds a value with every field of the domain struct set (checked
// by reflection, so a field added to the struct fails there until it is
// filled), writes it through the store's create, reads it back through
// every getter and listing, and compares field by field; then changes
// every field the update may change (checked by reflection too), updates,
// and reads it back again.
//
// Each entity's test stands in its entity's test file (TestTicketFields in
// ticket_test.go, ...), so a new field is tested where its entity is. This
// file holds the helpers they share, the tests of the entities without a
// test file (audit events, idempotency records), and the test that every
// write of the store has one.

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/idempotency"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/store"
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
// has its round trip of every field (a Test<Entity>Fields), and the list
// names real methods.
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
				t.Errorf("%s writes an entity: give it a round trip of every field (Test<Entity>Fields, in its entity's test file)", name)
			}
		}
	}
	for name := range covered {
		if !seen[name] {
			t.Errorf("%s is not a method of the store any more", name)
		}
	}
}
