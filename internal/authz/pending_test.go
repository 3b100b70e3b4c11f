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

func TestPrefetch(t *testing.T) {
	id := authz.Identity{UserID: "u_1"}
	member := authz.Principal{Identity: id, OrgID: "org", OrgRole: authz.Member}
	refused := errs.E(errs.NotFound, "org_not_found", "organization not found")
	t.Run("ErrRefused/answered without waiting for the read", func(t *testing.T) {
		p := authz.NewPending(id, "org", func() (authz.Principal, error) { return authz.Principal{}, refused })
		cancelled := make(chan struct{})
		_, get, err := authz.Prefetch(context.Background(), p, func(ctx context.Context) (string, error) {
			<-ctx.Done() // a read that would never end by itself
			close(cancelled)
			return "", ctx.Err()
		})
		if !errors.Is(err, refused) || get != nil {
			t.Fatalf("err %v, get %v: want the decision's error and nothing to read", err, get != nil)
		}
		<-cancelled
	})
	t.Run("OK/the read went out before the decision; later reads read again", func(t *testing.T) {
		started, decide := make(chan struct{}), make(chan struct{})
		p := authz.NewPending(id, "org", func() (authz.Principal, error) {
			<-started // the decision waits for the read to start: Prefetch must not wait for the decision first
			<-decide
			return member, nil
		})
		reads := 0
		go func() { close(decide) }()
		pr, get, err := authz.Prefetch(context.Background(), p, func(context.Context) (int, error) {
			reads++
			if reads == 1 {
				close(started)
			}
			return reads, nil
		})
		if err != nil || pr != member {
			t.Fatalf("Prefetch: %+v, %v", pr, err)
		}
		for want := 1; want <= 2; want++ {
			if got, err := get(context.Background()); got != want || err != nil {
				t.Errorf("read %d: got %d, %v", want, got, err)
			}
		}
	})
	t.Run("OK/known: nothing in flight, the read is the caller's", func(t *testing.T) {
		pr, get, err := authz.Prefetch(context.Background(), authz.Known(member), func(context.Context) (string, error) { return "read", nil })
		if err != nil || pr != member {
			t.Fatalf("Prefetch: %+v, %v", pr, err)
		}
		if got, _ := get(context.Background()); got != "read" {
			t.Errorf("read %q", got)
		}
	})
}
