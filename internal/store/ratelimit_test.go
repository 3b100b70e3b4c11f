package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ratelimit"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/store/storetest"
)

// TestRateLimitLease holds the global bucket of store.Limits to GCRA: a
// full bucket grants its burst and no more, refills at its rate, a
// partial grant gives what is there, and concurrent leases never spend
// more than the bucket holds.
func TestRateLimitLease(t *testing.T) {
	f := MustFixture(t)
	l := &store.Limits{DB: f.DB}
	ctx := t.Context()
	now := time.Now().Truncate(time.Millisecond)
	q := func(minN, maxN int, busy bool) ratelimit.Lease {
		return ratelimit.Lease{Min: minN, Max: maxN, Now: now, Interval: 10 * time.Millisecond, Burst: 25, Busy: busy}
	}
	org := "org:" + f.ids.New()

	t.Run("OK a full bucket grants a block, one write", func(t *testing.T) {
		f.Rec.Reset()
		g, err := l.Lease(ctx, org, q(1, 10, false))
		if err != nil || g.Granted != 10 {
			t.Fatalf("lease: %+v, %v; want 10 granted", g, err)
		}
		if got := f.Rec.Count(); got != 1 {
			t.Errorf("DynamoDB calls: %d (%s), want 1", got, f.Rec.Names())
		}
		if want := now.Add(100 * time.Millisecond); !g.TAT.Equal(want) {
			t.Errorf("TAT: got %v, want %v", g.TAT, want)
		}
	})
	t.Run("OK a replica that thinks it full retries with the state the failure returned", func(t *testing.T) {
		f.Rec.Reset()
		g, err := l.Lease(ctx, org, q(1, 10, false))
		if err != nil || g.Granted != 10 {
			t.Fatalf("lease: %+v, %v; want 10 granted", g, err)
		}
		if got := f.Rec.Count(); got != 2 {
			t.Errorf("DynamoDB calls: %d (%s), want 2", got, f.Rec.Names())
		}
	})
	t.Run("OK partial grant of what is left", func(t *testing.T) {
		g, err := l.Lease(ctx, org, q(1, 10, true))
		if err != nil || g.Granted != 5 {
			t.Fatalf("lease: %+v, %v; want the 5 left", g, err)
		}
	})
	t.Run("refused when the bucket is empty, with its TAT", func(t *testing.T) {
		g, err := l.Lease(ctx, org, q(1, 10, true))
		if err != nil || g.Granted != 0 {
			t.Fatalf("lease: %+v, %v; want none", g, err)
		}
		if want := now.Add(250 * time.Millisecond); !g.TAT.Equal(want) {
			t.Errorf("TAT: got %v, want %v", g.TAT, want)
		}
	})
	t.Run("OK refills at the rate", func(t *testing.T) {
		later := q(1, 10, true)
		later.Now = now.Add(30 * time.Millisecond) // 3 tokens back
		g, err := l.Lease(ctx, org, later)
		if err != nil || g.Granted != 3 {
			t.Fatalf("lease 30 ms later: %+v, %v; want 3", g, err)
		}
	})
	t.Run("OK another key is its own bucket", func(t *testing.T) {
		g, err := l.Lease(ctx, "org:"+f.ids.New(), q(1, 10, false))
		if err != nil || g.Granted != 10 {
			t.Fatalf("lease: %+v, %v; want 10", g, err)
		}
	})
	t.Run("OK concurrent replicas spend at most the burst", func(t *testing.T) {
		key := "caller:u_" + f.ids.New()
		var mu sync.Mutex
		total := 0
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for { // until the bucket refuses (a lease that lost every race retries)
					g, err := l.Lease(context.Background(), key, q(1, 4, false))
					if err != nil && errs.CodeOf(err) != "rate_limit_contended" {
						t.Errorf("lease: %v", err)
						return
					}
					mu.Lock()
					total += g.Granted
					mu.Unlock()
					if err == nil && g.Granted == 0 {
						return
					}
				}
			})
		}
		wg.Wait()
		if total != 25 {
			t.Errorf("granted %d in all, want the burst, 25", total)
		}
	})
	t.Run("400/bad keys never reach a key", func(t *testing.T) {
		f.Rec.Reset()
		for _, k := range []string{"org:not-a-ulid", "tenant:" + f.ids.New(), "caller:a#b", "user:"} {
			_, err := l.Lease(ctx, k, q(1, 10, false))
			if errs.KindOf(err) != errs.Invalid {
				t.Errorf("key %q: %v, want invalid", k, err)
			}
		}
		f.wantNoCalls(t)
	})
	t.Run("OK the buckets pass the invariant checker", func(t *testing.T) {
		v, err := storetest.CheckInvariants(ctx, f.raw, f.DB.TableName(), storetest.CheckOptions{})
		if err != nil || len(v) > 0 {
			t.Errorf("invariants: %v %v", v, err)
		}
	})
}
