package store_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/invitation"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
)

// TestListInvitationsPositions: the listing leaves out the invitations
// that expired (TTL lags), and the position after each item it keeps is
// that item's own: following any of them goes on right after its item
// (an export resumes from them, GraphQL's edges are them).
func TestListInvitationsPositions(t *testing.T) {
	f, s := MustSampled(t)
	ctx := context.Background()
	org := s.Org.ID
	var live []string
	for i, ttl := range []time.Duration{time.Hour, -time.Hour, time.Hour, -time.Hour, time.Hour} {
		inv := invitation.Invitation{OrgID: org, ID: f.ids.New(), Email: string(rune('a'+i)) + "@example.com", Role: authz.Member,
			InvitedBy: "u_alice", TokenHash: "h", CreatedAt: f.now, ExpiresAt: f.now.Add(ttl).Truncate(time.Second)}
		must(t, errOf(f.Invitations.CreateInvitation(ctx, inv, ev(inv))))
		if ttl > 0 {
			live = append(live, inv.ID)
		}
	}
	r, err := f.Invitations.ListInvitations(ctx, org, f.now, page.Request{Limit: 100})
	must(t, err)
	if len(r.Items) != len(live) || len(r.After) != len(r.Items) {
		t.Fatalf("%d items and %d positions, want %d of each", len(r.Items), len(r.After), len(live))
	}
	for i, inv := range r.Items {
		if inv.ID != live[i] {
			t.Fatalf("item %d is %s, want %s", i, inv.ID, live[i])
		}
		rest, err := f.Invitations.ListInvitations(ctx, org, f.now, page.Request{Limit: 100, After: r.After[i]})
		must(t, err)
		var got []string
		for _, inv := range rest.Items {
			got = append(got, inv.ID)
		}
		if want := live[i+1:]; len(got) != len(want) || (len(want) > 0 && got[0] != want[0]) {
			t.Errorf("after item %d: %v, want %v", i, got, want)
		}
	}
}

// Every field's round trip through the store: the guard described in
// fields_test.go.

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
