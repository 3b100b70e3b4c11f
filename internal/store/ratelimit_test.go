package store_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
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

// faultyLedger is a replica's way to the ledger, which the test makes
// fail or answer late.
type faultyLedger struct {
	ratelimit.Ledger
	fail  atomic.Bool
	delay atomic.Int64 // added to each lease, in ns
}

func (f *faultyLedger) Lease(ctx context.Context, key string, q ratelimit.Lease) (ratelimit.Grant, error) {
	if f.fail.Load() {
		return ratelimit.Grant{}, errors.New("the ledger is down")
	}
	select {
	case <-time.After(time.Duration(f.delay.Load())):
	case <-ctx.Done():
		return ratelimit.Grant{}, ctx.Err()
	}
	return f.Ledger.Lease(ctx, key, q)
}

// TestRateLimitReplicas: three limiters on one table, as three replicas
// are. One tenant hammering them round-robin gets over any window T at
// most burst + rate·T + a block per replica, with every ledger answering,
// with one replica's failing and with one's answering late (their
// fallback); tenants sending at half their limit, down to 1/s, are never
// refused.
func TestRateLimitReplicas(t *testing.T) {
	f := MustFixture(t)
	const rate, burst, block = 20, 40, 10
	replicas := func(rate float64, burst int) ([]*ratelimit.Limiter, []*faultyLedger) {
		var ls []*ratelimit.Limiter
		var fs []*faultyLedger
		for range 3 {
			fl := &faultyLedger{Ledger: &store.Limits{DB: f.DB}}
			fs = append(fs, fl)
			ls = append(ls, ratelimit.New(ratelimit.Options{PerSecond: rate, Burst: burst,
				Global: ratelimit.Global{Ledger: fl, Block: block, Replicas: 3, Timeout: 300 * time.Millisecond}}))
		}
		return ls, fs
	}

	t.Run("429/the global bound holds in and out of the fallback", func(t *testing.T) {
		ls, fs := replicas(rate, burst)
		key := "org:" + f.ids.New()
		var mu sync.Mutex
		var admitted []time.Time
		var n atomic.Int64
		var wg sync.WaitGroup
		end := time.Now().Add(3 * time.Second)
		for range 6 {
			wg.Go(func() {
				for time.Now().Before(end) {
					if ls[n.Add(1)%3].Take(context.Background(), key).Allowed {
						mu.Lock()
						admitted = append(admitted, time.Now())
						mu.Unlock()
					}
					time.Sleep(2 * time.Millisecond)
				}
			})
		}
		time.Sleep(time.Second)
		fs[2].fail.Store(true) // one replica's ledger fails
		time.Sleep(time.Second)
		fs[2].fail.Store(false)
		fs[1].delay.Store(int64(450 * time.Millisecond)) // another's answers late
		wg.Wait()
		slices.SortFunc(admitted, func(a, b time.Time) int { return a.Compare(b) })
		worst, at := math.Inf(-1), ""
		for i := range admitted {
			for j := i; j < len(admitted); j++ {
				w := admitted[j].Sub(admitted[i])
				if slack := float64(j-i+1) - (burst + rate*w.Seconds() + 3*block); slack > worst {
					worst, at = slack, fmt.Sprintf("%d admitted within %v", j-i+1, w)
				}
			}
		}
		if worst > 0 {
			t.Errorf("over burst + rate·T + 3 blocks: %s", at)
		}
		var fallback int64
		for _, l := range ls {
			fallback += l.Stats().Fallback.Load()
		}
		if fallback == 0 {
			t.Error("no decision was taken in a fallback episode: the faults did not bite")
		}
		t.Logf("%d admitted in 3 s (bound %d); tightest window: %s; %d decisions in fallback episodes", len(admitted), burst+3*rate+3*block, at, fallback)
	})
	t.Run("OK tenants at half their limit are never refused, down to 1/s", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, plan := range []struct{ rate, burst int }{{1, 1}, {2, 4}, {5, 10}} {
			ls, _ := replicas(float64(plan.rate), plan.burst)
			key := "org:" + f.ids.New()
			wg.Go(func() {
				gap := time.Duration(float64(2*time.Second) / float64(plan.rate))
				for i := 0; time.Duration(i)*gap < 4*time.Second; i++ {
					if d := ls[i%3].Take(context.Background(), key); !d.Allowed {
						t.Errorf("%d/s, burst %d: request %d (one every %v, round-robin over 3 replicas) refused: %+v", plan.rate, plan.burst, i, gap, d)
					}
					time.Sleep(gap)
				}
			})
		}
		wg.Wait()
	})
}
