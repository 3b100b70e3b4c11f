package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tenantd/tenantd/internal/access"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/store/storetest"
	orgpkg "github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
)

// The write rules of orgs and their users: every conditional write, its
// error kind and code, and that a refused write changes nothing.

func TestCreateOrg(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	org := orgpkg.Org{ID: f.ids.New(), Name: "Acme", Version: 1, CreatedAt: f.now, UpdatedAt: f.now}
	alice := f.user(org.ID, "u_alice", "Alice@Example.com", "Alice Chen", authz.Owner)

	t.Run("OK", func(t *testing.T) {
		must(t, f.Orgs.CreateOrg(ctx, org, alice, ev(org)))
		got, err := f.Orgs.GetOrg(ctx, org.ID)
		must(t, err)
		if got, want := got, org; !reflect.DeepEqual(got, want) {
			t.Errorf("org: got %+v, want %+v", got, want)
		}
		u, err := f.Orgs.GetOrgUser(ctx, org.ID, "u_alice")
		must(t, err)
		if got, want := u, alice; !reflect.DeepEqual(got, want) {
			t.Errorf("owner: got %+v, want %+v", got, want)
		}
		c := f.claim(t, org.ID, "alice@example.com") // claimed in normalized form
		if c == nil {
			t.Fatalf("no email claim for alice@example.com")
		}
		if got, want := c["userId"], any("u_alice"); got != want {
			t.Errorf("claim userId: got %v, want %v", got, want)
		}
		r, err := f.Orgs.ListOrgs(ctx, "u_alice", page.Request{})
		must(t, err)
		if got, want := len(r.Items), 1; got != want {
			t.Fatalf("user orgs: got %d, want %d", got, want)
		}
		if got, want := r.Items[0].OrgID+" "+string(r.Items[0].Role), org.ID+" owner"; got != want {
			t.Errorf("user org: got %q, want %q", got, want)
		}
	})

	t.Run("OK ownerCount not exposed", func(t *testing.T) {
		for _, typ := range []reflect.Type{reflect.TypeOf(orgpkg.Org{}), reflect.TypeOf(orgpkg.User{})} {
			for i := range typ.NumField() {
				if name := typ.Field(i).Name; strings.Contains(strings.ToLower(name), "ownercount") {
					t.Errorf("%s exposes %s", typ, name)
				}
			}
		}
	})

	t.Run("OK last-owner rule holds for the creator", func(t *testing.T) {
		next := alice
		next.Role, next.Version = authz.Admin, 2
		err := f.mustUnchanged(t, func() error { return f.Orgs.UpdateOrgUser(ctx, alice, next, ev(next)) })
		wantErr(t, err, errs.Conflict, "last_owner")
	})

	t.Run("ErrOrgExists", func(t *testing.T) {
		other := f.user(org.ID, "u_mallory", "mallory@example.com", "Mallory", authz.Owner)
		err := f.mustUnchanged(t, func() error {
			return f.Orgs.CreateOrg(ctx, orgpkg.Org{ID: org.ID, Name: "Evil", Version: 1}, other, evOrg(org.ID))
		})
		wantErr(t, err, errs.Conflict, "org_exists")
	})

	t.Run("ErrInvalidEmail", func(t *testing.T) {
		f.Rec.Reset()
		o := orgpkg.Org{ID: f.ids.New(), Name: "X", Version: 1}
		err := f.Orgs.CreateOrg(ctx, o, f.user(o.ID, "u_x", "x#y@example.com", "X", authz.Owner), ev(o))
		wantErr(t, err, errs.Invalid, "invalid_email")
		f.wantNoCalls(t)
	})
}

// TestCreateOrgQuota: creating an org counts it against its creator, in
// the create's own transaction, so a concurrent burst cannot overshoot the
// quota; only the org's deletion gives it back, to its creator, whoever
// owns it by then.
func TestCreateOrgQuota(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	const quota = 3
	f.DB.SetMaxOwnedOrgs(quota)
	create := func(userID string) (orgpkg.Org, error) {
		o := orgpkg.Org{ID: f.ids.New(), Name: "Burst", Version: 1, CreatedAt: f.now, UpdatedAt: f.now}
		return o, f.Orgs.CreateOrg(ctx, o, f.user(o.ID, userID, userID+"@example.com", userID, authz.Owner), ev(o))
	}
	owned := func(t *testing.T, userID string, want int) {
		t.Helper()
		got, err := f.Orgs.OwnedOrgs(ctx, userID)
		must(t, err)
		if got != want {
			t.Errorf("%s owns %d orgs by the count, want %d", userID, got, want)
		}
		vs, err := storetest.CheckInvariants(ctx, f.raw, f.DB.TableName(), storetest.CheckOptions{})
		must(t, err)
		sameViolations(t, vs, nil)
	}

	var mine []orgpkg.Org
	t.Run("403/createOrg/quota/concurrent burst", func(t *testing.T) {
		const burst = 4 * quota
		var wg sync.WaitGroup
		orgs, failures := make([]orgpkg.Org, burst), make([]error, burst)
		for i := range burst {
			wg.Go(func() { orgs[i], failures[i] = create("u_burst") })
		}
		wg.Wait()
		refused := 0
		for i, err := range failures {
			switch {
			case err == nil:
				mine = append(mine, orgs[i])
			case errs.CodeOf(err) == "org_quota_exceeded":
				refused++
				if errs.KindOf(err) != errs.Forbidden {
					t.Errorf("quota error kind: got %v, want Forbidden", errs.KindOf(err))
				}
			case errs.KindOf(err) == errs.Unavailable: // transaction conflicts past the SDK's retries: nothing written
			default:
				t.Errorf("create %d: %v", i, err)
			}
		}
		// Creates the burst's conflicts turned away may leave room: fill
		// it, one at a time, until the quota refuses.
		for len(mine) < quota+1 {
			o, err := create("u_burst")
			if err != nil {
				wantErr(t, err, errs.Forbidden, "org_quota_exceeded")
				break
			}
			mine = append(mine, o)
		}
		if len(mine) != quota || refused == 0 {
			t.Fatalf("created %d orgs (%d refused by the quota in the burst), want exactly %d", len(mine), refused, quota)
		}
		r, err := f.Orgs.ListOrgs(ctx, "u_burst", page.Request{Limit: 100})
		must(t, err)
		if len(r.Items) != quota {
			t.Errorf("the user's orgs: %d, want %d", len(r.Items), quota)
		}
		owned(t, "u_burst", quota)
	})

	t.Run("OK/createOrg/quota/a keyed retry of a created org is not refused", func(t *testing.T) {
		o := mine[0]
		err := f.Orgs.CreateOrg(ctx, o, f.user(o.ID, "u_burst", "u_burst@example.com", "u_burst", authz.Owner), ev(o))
		wantErr(t, err, errs.Conflict, "org_exists") // the service answers the org it finds
		owned(t, "u_burst", quota)
	})

	t.Run("OK/quota/roles, removals and ownership never move it", func(t *testing.T) {
		other, err := create("u_other")
		must(t, err)
		u := f.user(other.ID, "u_burst", "burst@other.example", "Burst", authz.Member)
		must(t, f.Orgs.AddOrgUser(ctx, u, evOrg(other.ID)))
		promoted := u
		promoted.Role, promoted.Version = authz.Owner, 2
		must(t, f.Orgs.UpdateOrgUser(ctx, u, promoted, evOrg(other.ID)))
		owned(t, "u_burst", quota) // made an owner of another's org: not charged
		// The creator steps down and leaves: the org still counts as theirs.
		creator, err := f.Orgs.GetOrgUser(ctx, other.ID, "u_other")
		must(t, err)
		demoted := creator
		demoted.Role, demoted.Version = authz.Admin, creator.Version+1
		must(t, f.Orgs.UpdateOrgUser(ctx, creator, demoted, evOrg(other.ID)))
		owned(t, "u_other", 1)
		must(t, f.Orgs.RemoveOrgUser(ctx, demoted, evOrg(other.ID)))
		owned(t, "u_other", 1)
		_, err = create("u_burst")
		wantErr(t, err, errs.Forbidden, "org_quota_exceeded")
	})

	t.Run("OK/quota/deleting an org refunds its creator only", func(t *testing.T) {
		o := mine[1]
		co := f.user(o.ID, "u_coowner", "co@example.com", "Co", authz.Owner)
		must(t, f.Orgs.AddOrgUser(ctx, co, evOrg(o.ID)))
		owned(t, "u_coowner", 0)
		f.offboard(t, o.ID, "u_coowner") // another owner deletes it: the creator is refunded
		owned(t, "u_burst", quota-1)
		owned(t, "u_coowner", 0)
		_, err := create("u_burst")
		must(t, err)
		owned(t, "u_burst", quota)
	})
}

func TestAddOrgUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, s := MustSampled(t)

	t.Run("OK", func(t *testing.T) {
		carol := f.user(s.Org.ID, "u_carol", "carol@example.com", "Carol", authz.Admin)
		must(t, f.Orgs.AddOrgUser(ctx, carol, ev(carol)))
		got, err := f.Orgs.GetOrgUser(ctx, s.Org.ID, "u_carol")
		must(t, err)
		if got, want := got, carol; !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v, want %+v", got, want)
		}
		if f.claim(t, s.Org.ID, "carol@example.com") == nil {
			t.Error("no email claim")
		}
	})

	t.Run("ErrUserExists", func(t *testing.T) {
		again := f.user(s.Org.ID, "u_bob", "bob2@example.com", "Bob Again", authz.Admin)
		err := f.mustUnchanged(t, func() error { return f.Orgs.AddOrgUser(ctx, again, ev(again)) })
		wantErr(t, err, errs.Conflict, "user_exists")
	})

	t.Run("ErrEmailTaken", func(t *testing.T) {
		for _, email := range []string{"bob@example.com", "BOB@example.com", "Bob@Example.COM"} {
			u := f.user(s.Org.ID, "u_bobby", email, "Bobby", authz.Member)
			err := f.mustUnchanged(t, func() error { return f.Orgs.AddOrgUser(ctx, u, ev(u)) })
			wantErr(t, err, errs.Conflict, "email_taken")
		}
	})

	t.Run("ErrEmailTaken by an owner does not count an owner", func(t *testing.T) {
		u := f.user(s.Org.ID, "u_bobby", "ALICE@example.com", "Bobby", authz.Owner)
		err := f.mustUnchanged(t, func() error { return f.Orgs.AddOrgUser(ctx, u, ev(u)) })
		wantErr(t, err, errs.Conflict, "email_taken")
	})

	t.Run("ErrOrgNotFound", func(t *testing.T) {
		u := f.user(f.ids.New(), "u_dave", "dave@example.com", "Dave", authz.Member)
		err := f.mustUnchanged(t, func() error { return f.Orgs.AddOrgUser(ctx, u, ev(u)) })
		wantErr(t, err, errs.NotFound, "org_not_found")
		owner := f.user(f.ids.New(), "u_dave", "dave@example.com", "Dave", authz.Owner) // the owner-count path
		err = f.mustUnchanged(t, func() error { return f.Orgs.AddOrgUser(ctx, owner, ev(owner)) })
		wantErr(t, err, errs.NotFound, "org_not_found")
	})

	t.Run("OK same email in another org", func(t *testing.T) {
		other := f.newOrg(t, "Other", "u_zed")
		must(t, f.Orgs.AddOrgUser(ctx, f.user(other.ID, "u_bob", "bob@example.com", "Bob", authz.Member), evOrg(other.ID)))
	})
}

func TestUpdateOrgUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, s := MustSampled(t)
	org := s.Org.ID

	current := func(t *testing.T, id string) orgpkg.User {
		t.Helper()
		u, err := f.Orgs.GetOrgUser(ctx, org, id)
		must(t, err)
		return u
	}

	t.Run("OK change email swaps claims", func(t *testing.T) {
		next := s.Bob
		next.Email, next.Name, next.Version = "Robert@example.com", "Robert Park", 2
		must(t, f.Orgs.UpdateOrgUser(ctx, s.Bob, next, ev(next)))
		if got, want := current(t, "u_bob"), next; !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v, want %+v", got, want)
		}
		if f.claim(t, org, "bob@example.com") != nil {
			t.Error("the old email is still claimed")
		}
		if c := f.claim(t, org, "robert@example.com"); c == nil || c["userId"] != "u_bob" {
			t.Errorf("new claim: got %v, want one for u_bob", c)
		}
		// The old email is free: another user can take it.
		must(t, f.Orgs.AddOrgUser(ctx, f.user(org, "u_dave", "bob@example.com", "Dave", authz.Member), evOrg(org)))
		// The new one is taken, in any case.
		err := f.mustUnchanged(t, func() error {
			return f.Orgs.AddOrgUser(ctx, f.user(org, "u_erin", "ROBERT@example.com", "Erin", authz.Member), evOrg(org))
		})
		wantErr(t, err, errs.Conflict, "email_taken")
	})

	t.Run("OK case-only email change keeps the claim", func(t *testing.T) {
		prev := current(t, "u_dave")
		next := prev
		next.Email, next.Version = "BOB@EXAMPLE.COM", prev.Version+1
		must(t, f.Orgs.UpdateOrgUser(ctx, prev, next, ev(next)))
		if c := f.claim(t, org, "bob@example.com"); c == nil || c["userId"] != "u_dave" {
			t.Errorf("claim: got %v, want one for u_dave", c)
		}
	})

	t.Run("ErrStaleVersion", func(t *testing.T) {
		stale := s.Bob // version 1; Bob is at 2 now
		next := stale
		next.Name, next.Version = "Stale Bob", 2
		err := f.mustUnchanged(t, func() error { return f.Orgs.UpdateOrgUser(ctx, stale, next, ev(next)) })
		wantErr(t, err, errs.PreconditionFailed, "version_mismatch")
		// The same with an email change and a role change in the transaction.
		next.Email, next.Role = "stale@example.com", authz.Owner
		err = f.mustUnchanged(t, func() error { return f.Orgs.UpdateOrgUser(ctx, stale, next, ev(next)) })
		wantErr(t, err, errs.PreconditionFailed, "version_mismatch")
	})

	t.Run("ErrUserNotFound", func(t *testing.T) {
		ghost := f.user(org, "u_ghost", "ghost@example.com", "Ghost", authz.Member)
		next := ghost
		next.Version = 2
		err := f.mustUnchanged(t, func() error { return f.Orgs.UpdateOrgUser(ctx, ghost, next, ev(next)) })
		wantErr(t, err, errs.NotFound, "user_not_found")
	})

	t.Run("ErrEmailTaken", func(t *testing.T) {
		prev := current(t, "u_bob")
		next := prev
		next.Email, next.Version = "ALICE@example.com", prev.Version+1
		err := f.mustUnchanged(t, func() error { return f.Orgs.UpdateOrgUser(ctx, prev, next, ev(next)) })
		wantErr(t, err, errs.Conflict, "email_taken")
	})

	t.Run("ErrLastOwner", func(t *testing.T) {
		prev := current(t, "u_alice")
		next := prev
		next.Role, next.Version = authz.Member, prev.Version+1
		err := f.mustUnchanged(t, func() error { return f.Orgs.UpdateOrgUser(ctx, prev, next, ev(next)) })
		wantErr(t, err, errs.Conflict, "last_owner")
	})

	t.Run("OK promote Bob then demote Alice", func(t *testing.T) {
		bob := current(t, "u_bob")
		next := bob
		next.Role, next.Version = authz.Owner, bob.Version+1
		must(t, f.Orgs.UpdateOrgUser(ctx, bob, next, ev(next)))
		alice := current(t, "u_alice")
		demoted := alice
		demoted.Role, demoted.Version = authz.Member, alice.Version+1
		must(t, f.Orgs.UpdateOrgUser(ctx, alice, demoted, ev(demoted)))
		if got, want := current(t, "u_alice").Role, authz.Member; got != want {
			t.Errorf("alice: got %s, want %s", got, want)
		}
		// Now Bob is the last owner.
		bob = current(t, "u_bob")
		next = bob
		next.Role, next.Version = authz.Admin, bob.Version+1
		err := f.mustUnchanged(t, func() error { return f.Orgs.UpdateOrgUser(ctx, bob, next, ev(next)) })
		wantErr(t, err, errs.Conflict, "last_owner")
	})

	t.Run("OK owner to owner keeps the count", func(t *testing.T) {
		bob := current(t, "u_bob")
		next := bob
		next.Name, next.Version = "Bob the Owner", bob.Version+1
		must(t, f.Orgs.UpdateOrgUser(ctx, bob, next, ev(next)))
		next2 := next
		next2.Role, next2.Version = authz.Member, next.Version+1
		err := f.mustUnchanged(t, func() error { return f.Orgs.UpdateOrgUser(ctx, next, next2, ev(next2)) })
		wantErr(t, err, errs.Conflict, "last_owner")
	})
}

func TestRemoveOrgUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, s := MustSampled(t)
	org := s.Org.ID

	t.Run("OK", func(t *testing.T) {
		must(t, f.Teams.AddTeamMember(ctx, f.member(s.Design, "u_bob", authz.Member), ev(s.Design)))
		must(t, f.Orgs.RemoveOrgUser(ctx, s.Bob, ev(s.Bob)))
		_, err := f.Orgs.GetOrgUser(ctx, org, "u_bob")
		wantErr(t, err, errs.NotFound, "user_not_found")
		if f.claim(t, org, "bob@example.com") != nil {
			t.Error("the email claim is still there")
		}
		if got := userTeamIDs(t, f, org, "u_bob"); len(got) != 0 {
			t.Errorf("ListUserTeams: got %v, want none", got)
		}
		// Engineering keeps Alice; Design keeps Dana and Alice.
		for tm, want := range map[membership.Team]int{s.Eng: 1, s.Design: 2} {
			_, err := f.Teams.GetTeamMember(ctx, org, tm.ID, "u_bob")
			wantErr(t, err, errs.NotFound, "member_not_found")
			if got := teamCount(t, f, org, tm.ID); got != want {
				t.Errorf("%s memberCount: got %d, want %d", tm.Name, got, want)
			}
		}
		r, err := f.Orgs.ListOrgs(ctx, "u_bob", page.Request{})
		must(t, err)
		if got, want := len(r.Items), 0; got != want {
			t.Errorf("ListUserOrgs: got %d, want %d", got, want)
		}
		if keys := f.keysWithPrefix(t, "ORG#"+org); slices.ContainsFunc(keys, func(k rawKey) bool {
			return strings.Contains(k.PK+k.SK, "u_bob") || strings.Contains(k.PK, "bob@")
		}) {
			t.Errorf("items of Bob left: %v", keys)
		}
		// The email is free again.
		must(t, f.Orgs.AddOrgUser(ctx, f.user(org, "u_bob2", "bob@example.com", "Bob 2", authz.Member), evOrg(org)))
	})

	t.Run("ErrLastOwner", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error { return f.Orgs.RemoveOrgUser(ctx, s.Alice, ev(s.Alice)) })
		wantErr(t, err, errs.Conflict, "last_owner")
	})

	t.Run("ErrStaleVersion", func(t *testing.T) {
		stale := f.user(org, "u_bob2", "bob@example.com", "Bob 2", authz.Member)
		stale.Version = 2
		err := f.mustUnchanged(t, func() error { return f.Orgs.RemoveOrgUser(ctx, stale, ev(stale)) })
		wantErr(t, err, errs.PreconditionFailed, "version_mismatch")
	})

	t.Run("ErrUserNotFound", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error { return f.Orgs.RemoveOrgUser(ctx, s.Bob, ev(s.Bob)) })
		wantErr(t, err, errs.NotFound, "user_not_found")
	})

	t.Run("ErrLastTeamOwner", func(t *testing.T) {
		second := f.user(org, "u_owner2", "owner2@example.com", "Owner 2", authz.Owner)
		must(t, f.Orgs.AddOrgUser(ctx, second, ev(second))) // counts a second owner
		// Alice is still the only owner of Engineering.
		err := f.mustUnchanged(t, func() error { return f.Orgs.RemoveOrgUser(ctx, s.Alice, ev(s.Alice)) })
		wantErr(t, err, errs.Conflict, "last_team_owner")
	})

	t.Run("OK an owner when another owner remains", func(t *testing.T) {
		second := f.user(org, "u_owner2", "owner2@example.com", "Owner 2", authz.Owner)
		// Engineering gets a second owner, so Alice may go.
		must(t, f.Teams.AddTeamMember(ctx, f.member(s.Eng, second.UserID, authz.Owner), ev(s.Eng)))
		must(t, f.Orgs.RemoveOrgUser(ctx, s.Alice, ev(s.Alice)))
		err := f.mustUnchanged(t, func() error { return f.Orgs.RemoveOrgUser(ctx, second, ev(second)) })
		wantErr(t, err, errs.Conflict, "last_owner")
		// Alice's edges went with her; the teams she was alone in are empty.
		if got := userTeamIDs(t, f, org, "u_alice"); len(got) != 0 {
			t.Errorf("ListUserTeams(alice): got %v, want none", got)
		}
		if got, want := teamCount(t, f, org, s.Design.ID), 1; got != want { // Dana
			t.Errorf("Design memberCount: got %d, want %d", got, want)
		}
		if got, want := teamCount(t, f, org, s.Eng.ID), 1; got != want {
			t.Errorf("Engineering memberCount: got %d, want %d", got, want)
		}
	})
}

// TestRemoveOrgUserInManyTeams covers the chunked path: a user in more teams
// than one transaction can hold loses every membership and every team's
// memberCount stays exact.
func TestRemoveOrgUserInManyTeams(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	org := f.newOrg(t, "Many", "u_alice", "u_many").ID
	const n = 60
	// One team made by the store (Alice its owner, u_many a member:
	// memberCount 2), then 59 copies of it.
	tm := f.team(org, "Team")
	must(t, f.Teams.CreateTeam(ctx, tm, f.member(tm, "u_alice", authz.Owner), ev(tm)))
	must(t, f.Teams.AddTeamMember(ctx, f.member(tm, "u_many", authz.Member), ev(tm)))
	teams := []string{tm.ID}
	for range n - 1 {
		teams = append(teams, f.ids.New())
	}
	pk := "ORG#" + org + "#TEAM#" + tm.ID
	f.seedClones(t, []rawKey{{pk, "#METADATA"}, {pk, "MEMBER#u_alice"}, {pk, "MEMBER#u_many"}}, tm.ID, teams[1:])
	f.addUserTeams(t, org, "u_many", teams[1:])
	slices.Sort(teams)
	if got, want := userTeamIDs(t, f, org, "u_many"), teams; !slices.Equal(got, want) {
		t.Fatalf("before: user teams got %d, want %d", len(got), len(want))
	}
	u, err := f.Orgs.GetOrgUser(ctx, org, "u_many")
	must(t, err)

	t.Run("OK", func(t *testing.T) {
		f.Rec.Reset()
		must(t, f.Orgs.RemoveOrgUser(ctx, u, ev(u)))
		// 60 edges: one transaction of 49 edges guarded by a check of the
		// user's version (99 items), then the user, claim, org check and the
		// remaining 11 edges, and the audit event (26 items).
		if got, want := f.txSizes(), []int{99, 26}; !slices.Equal(got, want) {
			t.Errorf("transactions: got %v, want %v", got, want)
		}
		if got := userTeamIDs(t, f, org, "u_many"); len(got) != 0 {
			t.Errorf("ListUserTeams: got %d teams, want none", len(got))
		}
		got, err := f.Teams.BatchGetTeams(ctx, org, teams)
		must(t, err)
		if len(got) != n {
			t.Fatalf("teams: got %d, want %d", len(got), n)
		}
		for id, tm := range got {
			if got, want := tm.MemberCount, 1; got != want {
				t.Errorf("team %s memberCount: got %d, want %d", id, got, want)
			}
		}
		_, err = f.Orgs.GetOrgUser(ctx, org, "u_many")
		wantErr(t, err, errs.NotFound, "user_not_found")
		for _, k := range f.scanKeys(t) {
			if strings.Contains(k.SK, "u_many") || strings.Contains(k.PK, "u_many") {
				t.Errorf("item left: %+v", k)
			}
		}
	})
}

// TestRemoveUserInManyTeamsRefused: a refused removal (the last owner, or a
// stale version) must leave the table unchanged on the chunked path too,
// as it does on the single-transaction path (TestRemoveUser).
func TestRemoveOrgUserInManyTeamsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// soloOwner makes an org whose only owner, u_solo, owns 50 teams: 50
	// edges need 103 transaction items, more than one transaction holds.
	soloOwner := func(t *testing.T) (*fixture, orgpkg.User) {
		f := MustFixture(t)
		org := f.newOrg(t, "Solo", "u_solo", "u_other").ID
		tm := f.team(org, "Team")
		must(t, f.Teams.CreateTeam(ctx, tm, f.member(tm, "u_solo", authz.Owner), ev(tm)))
		var more []string
		for range 49 {
			more = append(more, f.ids.New())
		}
		pk := "ORG#" + org + "#TEAM#" + tm.ID
		f.seedClones(t, []rawKey{{pk, "#METADATA"}, {pk, "MEMBER#u_solo"}}, tm.ID, more)
		f.addUserTeams(t, org, "u_solo", more)
		if got, want := len(userTeamIDs(t, f, org, "u_solo")), 50; got != want {
			t.Fatalf("teams: got %d, want %d", got, want)
		}
		solo, err := f.Orgs.GetOrgUser(ctx, org, "u_solo")
		must(t, err)
		return f, solo
	}

	t.Run("ErrLastOwner", func(t *testing.T) {
		t.Parallel()
		f, solo := soloOwner(t)
		err := f.mustUnchanged(t, func() error { return f.Orgs.RemoveOrgUser(ctx, solo, ev(solo)) })
		wantErr(t, err, errs.Conflict, "last_owner")
	})
	t.Run("ErrStaleVersion", func(t *testing.T) {
		t.Parallel()
		f, solo := soloOwner(t)
		stale := solo
		stale.Version = 9
		err := f.mustUnchanged(t, func() error { return f.Orgs.RemoveOrgUser(ctx, stale, ev(stale)) })
		wantErr(t, err, errs.PreconditionFailed, "version_mismatch")
	})
}

// populateOrg fills org with users (u_alice owner, u_bob and extra), two
// teams with members, and tickets with comments.
func (f *fixture) populateOrg(tb testing.TB, name string, extra int) orgpkg.Org {
	tb.Helper()
	ctx := context.Background()
	org := f.newOrg(tb, name, "u_alice", "u_bob")
	if extra > 0 {
		f.seedUsers(tb, org.ID, seqIDs("u_x", extra))
	}
	eng, design := f.team(org.ID, "Engineering"), f.team(org.ID, "Design")
	must(tb, f.Teams.CreateTeam(ctx, eng, f.member(eng, "u_alice", authz.Owner), ev(eng)))
	must(tb, f.Teams.AddTeamMember(ctx, f.member(eng, "u_bob", authz.Member), ev(eng)))
	must(tb, f.Teams.CreateTeam(ctx, design, f.member(design, "u_bob", authz.Owner), ev(design)))
	for i := range 3 {
		tk := f.ticket(org.ID, "u_alice", fmt.Sprint("Ticket ", i), ticket.StatusNew)
		if i%2 == 0 {
			tk.TeamID, tk.AssigneeID = eng.ID, "u_bob"
		}
		must(tb, f.Tickets.CreateTicket(ctx, tk, ev(tk)))
		for j := range 2 {
			must(tb, f.Tickets.CreateComment(ctx, ticket.Comment{OrgID: org.ID, TicketID: tk.ID, ID: f.ids.New(),
				AuthorID: "u_bob", Body: fmt.Sprint("c", j), CreatedAt: f.now}, evOrg(org.ID)))
		}
	}
	return org
}

// splitSnapshot splits a snapshot by whether an item's pk starts with prefix.
func splitSnapshot(tb testing.TB, snap []string, prefix string) (in, out []string) {
	tb.Helper()
	for _, s := range snap {
		var it struct {
			PK string `json:"pk"`
		}
		if err := json.Unmarshal([]byte(s), &it); err != nil || it.PK == "" {
			tb.Fatalf("snapshot item without pk: %s", s)
		}
		if strings.HasPrefix(it.PK, prefix) {
			in = append(in, s)
		} else {
			out = append(out, s)
		}
	}
	return in, out
}

func TestDeleteOrg(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	doomed := f.populateOrg(t, "Doomed", 30) // 32 users + 32 claims: more than one BatchWriteItem
	kept := f.populateOrg(t, "Kept", 2)      // the same people (u_alice, u_bob) in another tenant

	before := f.snapshot(t)
	doomedItems, keptItems := splitSnapshot(t, before, "ORG#"+doomed.ID)
	if len(doomedItems) < 70 || len(keptItems) < 20 {
		t.Fatalf("sample too small: %d doomed items, %d kept", len(doomedItems), len(keptItems))
	}

	t.Run("OK", func(t *testing.T) {
		f.Rec.Reset()
		f.offboard(t, doomed.ID, "u_alice")
		for _, op := range f.Rec.Ops() {
			if op.Name == "Scan" {
				t.Errorf("DeleteOrg made a Scan")
			}
		}
		after := f.snapshot(t)
		left, others := splitSnapshot(t, after, "ORG#"+doomed.ID)
		if len(left) != 0 {
			t.Errorf("%d items of the deleted org left, e.g. %s", len(left), left[0])
		}
		// Beside the other tenant, only the count of the doomed org's
		// creator may change: by one.
		notOwned := func(items []string) []string {
			return slices.DeleteFunc(slices.Clone(items), func(s string) bool { return strings.Contains(s, `"type":"OwnedOrgs"`) })
		}
		if got, want := notOwned(others), notOwned(keptItems); !slices.Equal(got, want) {
			t.Errorf("the other tenant changed: %d items before, %d after", len(want), len(got))
		}
		if n, err := f.Orgs.OwnedOrgs(ctx, "u_alice"); err != nil || n != 1 {
			t.Errorf("alice owns %d orgs by the count (%v), want 1: the kept one", n, err)
		}
		_, err := f.Orgs.GetOrg(ctx, doomed.ID)
		wantErr(t, err, errs.NotFound, "org_not_found")
		r, err := f.Orgs.ListOrgs(ctx, "u_alice", page.Request{})
		must(t, err)
		if got := len(r.Items); got != 1 || r.Items[0].OrgID != kept.ID {
			t.Errorf("alice's orgs: got %+v, want only %s", r.Items, kept.ID)
		}
		if got := userTeamIDs(t, f, doomed.ID, "u_bob"); len(got) != 0 {
			t.Errorf("bob's teams in the deleted org: got %v", got)
		}
		if got := userTeamIDs(t, f, kept.ID, "u_bob"); len(got) != 2 {
			t.Errorf("bob's teams in the kept org: got %v, want 2", got)
		}
	})

	t.Run("ErrOrgNotFound", func(t *testing.T) {
		err := f.mustUnchanged(t, func() error {
			_, _, err := f.Orgs.StartOffboarding(ctx, doomed.ID, "u_alice", 0, "me", f.now)
			return err
		})
		wantErr(t, err, errs.NotFound, "org_not_found")
	})
}

func TestBatchGetOrgUsers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	users := seqIDs("u_", 250)
	org := f.newOrg(t, "Crowd", users[0]).ID
	f.seedUsers(t, org, users[1:])

	t.Run("OK 250 users in 3 requests", func(t *testing.T) {
		asked := append(slices.Clone(users), users[:10]...) // duplicates are asked once
		asked = append(asked, "")                           // and empty IDs not at all
		f.Rec.Reset()
		got, err := f.Orgs.BatchGetOrgUsers(ctx, org, asked)
		must(t, err)
		var sizes []int
		for _, op := range f.Rec.Ops() {
			if op.Name != "BatchGetItem" {
				t.Errorf("unexpected operation %s", op)
			}
			sizes = append(sizes, op.Items)
		}
		slices.Sort(sizes)
		if got, want := sizes, []int{50, 100, 100}; !slices.Equal(got, want) {
			t.Errorf("BatchGetItem keys: got %v, want %v", got, want)
		}
		if got, want := len(got), 250; got != want {
			t.Errorf("found: got %d, want %d", got, want)
		}
		for _, id := range users {
			if u, ok := got[id]; !ok || u.UserID != id || u.OrgID != org {
				t.Errorf("user %s: got %+v", id, u)
			}
		}
	})

	t.Run("OK absent users are left out", func(t *testing.T) {
		got, err := f.Orgs.BatchGetOrgUsers(ctx, org, []string{"u_000", "u_nobody"})
		must(t, err)
		if got, want := len(got), 1; got != want {
			t.Errorf("found: got %d, want %d", got, want)
		}
	})

	t.Run("OK none asked, no call", func(t *testing.T) {
		f.Rec.Reset()
		got, err := f.Orgs.BatchGetOrgUsers(ctx, org, nil)
		must(t, err)
		if len(got) != 0 {
			t.Errorf("got %v", got)
		}
		f.wantNoCalls(t)
	})
}

// Every field's round trip through the store: the guard described in
// fields_test.go.

func TestOrgFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	org := orgpkg.Org{ID: f.ids.New(), Name: "Fields Org", Version: 3, CreatedAt: f.at(1), UpdatedAt: f.at(2)}
	mustFull(t, org)
	owner := orgpkg.User{OrgID: org.ID, UserID: "u_owner", Email: "owner@example.com", Name: "Olive Owner", Role: authz.Owner,
		JoinedAt: f.at(3), UpdatedAt: f.at(4), Version: 5, AddedBy: "res-owner"}
	mustFull(t, owner)
	must(t, f.Orgs.CreateOrg(ctx, org, owner, ev(org)))

	read := func(t *testing.T, want orgpkg.Org) {
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
		mine := orgpkg.OrgMembership{OrgID: org.ID, Name: want.Name, UserName: owner.Name, Role: owner.Role, JoinedAt: owner.JoinedAt}
		mustFull(t, mine)
		r, err := f.Orgs.ListOrgs(ctx, owner.UserID, fieldsPage)
		wantOne(t, "ListOrgs", r.Items, err, zeroed(t, mine, "Name"))
	}

	t.Run("create", func(t *testing.T) { read(t, org) })

	t.Run("update", func(t *testing.T) {
		prev := org
		next := orgpkg.Org{ID: org.ID, Name: "Fields Org Renamed", Version: 4, UpdatedAt: f.at(12),
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
	u := orgpkg.User{OrgID: org.ID, UserID: "u_fields", Email: "Fields.User@Example.com", Name: "Fiona Fields", Role: authz.Admin,
		JoinedAt: f.at(1), UpdatedAt: f.at(2), Version: 3, AddedBy: "res-fields"}
	mustFull(t, u)
	must(t, f.Orgs.AddOrgUser(ctx, u, ev(u)))

	read := func(t *testing.T, want orgpkg.User) {
		t.Helper()
		got, err := f.Orgs.GetOrgUser(ctx, org.ID, u.UserID)
		must(t, err)
		wantSame(t, "GetOrgUser", got, want)
		r, err := f.Orgs.ListOrgUsers(ctx, org.ID, fieldsPage)
		must(t, err)
		wantOne(t, "ListOrgUsers", slices.DeleteFunc(r.Items, func(x orgpkg.User) bool { return x.UserID != u.UserID }), nil, want)
		m, err := f.Orgs.BatchGetOrgUsers(ctx, org.ID, []string{u.UserID})
		wantOneOf(t, "BatchGetOrgUsers", m, err, u.UserID, want)
		_, users, err := f.Orgs.GetOrgWithUsers(ctx, org.ID, 10)
		must(t, err)
		wantOne(t, "GetOrgWithUsers", slices.DeleteFunc(users, func(x orgpkg.User) bool { return x.UserID != u.UserID }), nil, want)
		found, err := f.Orgs.OrgAccess(ctx, org.ID, u.UserID, access.Target{Kind: access.User, UserID: u.UserID})
		must(t, err)
		if found.User == nil {
			t.Errorf("OrgAccess(user target): no user")
		} else {
			wantSame(t, "OrgAccess(user target)", *found.User, want)
		}
		if c := f.claim(t, org.ID, orgpkg.NormalizeEmail(want.Email)); c == nil || c["userId"] != want.UserID {
			t.Errorf("the claim of %s: got %v, want one for %s", want.Email, c, want.UserID)
		}
	}

	t.Run("create", func(t *testing.T) { read(t, u) })

	t.Run("update", func(t *testing.T) {
		prev := u
		next := orgpkg.User{OrgID: u.OrgID, UserID: u.UserID, Email: "fiona@example.org", Name: "Fiona Renamed", Role: authz.Member,
			UpdatedAt: f.at(12), Version: 4,
			JoinedAt: f.at(13), AddedBy: "res-other"} // an update must leave them: see kept
		mustFull(t, next)
		mustChangeAll(t, prev, next, "OrgID", "UserID") // the OrgUser's key
		must(t, f.Orgs.UpdateOrgUser(ctx, prev, next, ev(next)))
		// Kept: JoinedAt is when the user joined, AddedBy the request that
		// added them; UpdateOrgUser writes neither.
		read(t, copied(t, next, prev, "JoinedAt", "AddedBy"))
		if c := f.claim(t, org.ID, orgpkg.NormalizeEmail(prev.Email)); c != nil {
			t.Errorf("the old email's claim is still there: %v", c)
		}
	})
}
