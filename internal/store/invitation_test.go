package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/invitation"
	"github.com/tenantd/tenantd/internal/page"
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
