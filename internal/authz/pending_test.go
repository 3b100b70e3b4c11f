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

// TestWrite: a create's write goes out before the decision, on a grant
// decided from the action alone (at the action's floor); when it fails,
// the decision's refusal is the answer; when it commits, or may have, it
// stands (save for an org being offboarded), and the Gate learns it
// committed. A decided caller is refused before anything is written.
func TestWrite(t *testing.T) {
	id := authz.Identity{UserID: "u_1"}
	member := authz.Principal{Identity: id, OrgID: "org", OrgRole: authz.Member}
	refused := errs.E(errs.NotFound, "org_not_found", "organization not found")
	failed := errs.E(errs.Conflict, "team_not_found", "no such team")
	unknown := errs.E(errs.Unavailable, errs.CodeWriteOutcomeUnknown, "the write may still be applied")
	timeout := errs.E(errs.Unavailable, "timeout", "retry later")
	decided := func(p authz.Principal, err error) authz.Pending {
		return authz.NewPending(id, "org", func() (authz.Principal, error) { return p, err })
	}
	write := func(err error, got *authz.Grant) func(context.Context, authz.Principal, authz.Grant) (string, error) {
		return func(_ context.Context, p authz.Principal, g authz.Grant) (string, error) {
			*got = g
			if p.OrgRole != "" {
				return "", errors.New("the write saw a role before the decision")
			}
			return "written", err
		}
	}
	cases := []struct {
		name      string
		p         authz.Pending
		a         authz.Action
		writeErr  error
		want      error // nil: the write's value
		forbidden bool  // instead of want: a Forbidden error (the rule's)
		committed bool  // the Gate is told the write committed
	}{
		{"ErrRefused/the decision over the write's error", decided(authz.Principal{}, refused), authz.TicketCreate, failed, refused, false, false},
		{"ErrForbidden/a role below the action's", decided(member, nil), authz.TeamCreate, failed, nil, true, false},
		{"ErrFailed/the write's error for an allowed caller", decided(member, nil), authz.TicketCreate, failed, failed, false, false},
		{"OK/a committed write stands, whatever the decision", decided(authz.Principal{}, refused), authz.CommentCreate, nil, nil, false, false},
		{"ErrOffboarding/over a committed write", decided(authz.Principal{}, authz.ErrOffboarding), authz.CommentCreate, nil, authz.ErrOffboarding, false, false},
		{"ErrOutcomeUnknown/over the decision's timeout", decided(authz.Principal{}, timeout), authz.TicketCreate, unknown, unknown, false, false},
		{"ErrOutcomeUnknown/told the gate it committed", decided(member, nil), authz.TicketCreate, unknown, unknown, false, true},
		{"OK/told the gate it committed", decided(member, nil), authz.TicketCreate, nil, nil, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var g authz.Grant
			var told []bool
			// The gate refuses (an empty bucket) only where a refusal
			// would be the answer: never a write that committed.
			p := c.p.Gate(func(_ authz.Principal, committed bool) error {
				told = append(told, committed)
				if committed || c.writeErr != nil {
					return nil
				}
				return errors.New("no tokens")
			})
			v, err := authz.Write(context.Background(), p, c.a, authz.Facts{}, write(c.writeErr, &g))
			switch {
			case c.forbidden:
				if errs.KindOf(err) != errs.Forbidden {
					t.Errorf("err %v, want forbidden", err)
				}
			case c.want == nil && (err != nil || v != "written"):
				t.Errorf("Write: %q, %v; want the committed write's value", v, err)
			case c.want != nil && !errors.Is(err, c.want):
				t.Errorf("err %v, want %v", err, c.want)
			}
			if g.Floor != authz.Matrix[c.a].Min {
				t.Errorf("grant %+v, want the floor %s of %s", g, authz.Matrix[c.a].Min, c.a)
			}
			if c.committed && (len(told) != 1 || !told[0]) {
				t.Errorf("gate calls %v, want one, told committed", told)
			}
		})
	}
	t.Run("OK/a committed write stands past a refusing gate", func(t *testing.T) {
		var g authz.Grant
		p := decided(member, nil).Gate(func(authz.Principal, bool) error { return errors.New("no tokens") })
		if v, err := authz.Write(context.Background(), p, authz.TicketCreate, authz.Facts{}, write(nil, &g)); err != nil || v != "written" {
			t.Errorf("Write: %q, %v; want the committed write's value", v, err)
		}
	})
	t.Run("ErrRefused/decided first when known", func(t *testing.T) {
		called := false
		_, err := authz.Write(context.Background(), authz.Known(member), authz.TeamCreate, authz.Facts{}, func(context.Context, authz.Principal, authz.Grant) (string, error) {
			called = true
			return "", nil
		})
		if errs.KindOf(err) != errs.Forbidden || called {
			t.Errorf("err %v, write called %v; want forbidden before any write", err, called)
		}
	})
}
