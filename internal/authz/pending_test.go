package authz_test

import (
	"context"
	"errors"
	"testing"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
)

// TestOverlap: the read runs beside the decision; a refused caller gets
// the decision's error at once, whatever the read still does (it is
// cancelled), so the time of a 404 says nothing of the target; an allowed
// caller gets the read's result.
func TestOverlap(t *testing.T) {
	id := authz.Identity{UserID: "u_1"}
	refused := errs.E(errs.NotFound, "org_not_found", "organization not found")
	t.Run("ErrRefused/answered without waiting for the read", func(t *testing.T) {
		p := authz.NewPending(id, "org", func() (authz.Principal, error) { return authz.Principal{}, refused })
		cancelled := make(chan struct{})
		_, err := p.Overlap(context.Background(), authz.TicketRead, func(ctx context.Context) error {
			<-ctx.Done() // a read that would never end by itself
			close(cancelled)
			return ctx.Err()
		})
		if !errors.Is(err, refused) {
			t.Fatalf("err %v, want the decision's", err)
		}
		<-cancelled
	})
	t.Run("ErrRead/after an allowed decision", func(t *testing.T) {
		p := authz.NewPending(id, "org", func() (authz.Principal, error) {
			return authz.Principal{Identity: id, OrgID: "org", OrgRole: authz.Member}, nil
		})
		notFound := errs.E(errs.NotFound, "ticket_not_found", "ticket not found")
		if _, err := p.Overlap(context.Background(), authz.TicketRead, func(context.Context) error { return notFound }); !errors.Is(err, notFound) {
			t.Errorf("err %v, want the read's", err)
		}
	})
	t.Run("OK", func(t *testing.T) {
		p := authz.Known(authz.Principal{Identity: id, OrgID: "org", OrgRole: authz.Member})
		got := ""
		pr, err := p.Overlap(context.Background(), authz.TicketRead, func(context.Context) error { got = "read"; return nil })
		if err != nil || got != "read" || pr.OrgRole != authz.Member {
			t.Errorf("Overlap: %+v, %v, read %q", pr, err, got)
		}
	})
}
