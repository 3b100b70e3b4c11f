package ratelimit

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Ledger keeps one global token bucket per key for every replica
// (store.Limits: one item per key in DynamoDB). The bucket is a GCRA: its
// state is the theoretical arrival time TAT, from which on it is full; at
// time now it holds (now + Burst*Interval - max(TAT, now)) / Interval
// tokens.
type Ledger interface {
	// Lease spends between Min and Max tokens of key's bucket, as many as
	// it holds, and returns how many it spent (0 when it holds fewer than
	// Min) and its TAT after.
	Lease(ctx context.Context, key string, q Lease) (Grant, error)
}

// Lease is one request to a Ledger.
type Lease struct {
	Min, Max int
	Now      time.Time
	Interval time.Duration // one token's worth of time: 1/rate
	Burst    int
	// Busy says the replica last saw the bucket less than full (its TAT
	// after Now): the Ledger tries that case's write first.
	Busy bool
}

// Grant is what a Ledger spent.
type Grant struct {
	Granted int
	TAT     time.Time
}

// Global makes a Limiter's buckets global.
//
// As a doorman client does, a replica keeps, per key, a balance with the
// global bucket: the tokens it leased and has not spent yet, or, below
// zero, those it spent on credit and the Ledger has not charged yet. A
// request is decided from that balance alone, at once; a lease, one in
// flight per key at a time and never under a lock, brings the balance
// back in the background: it takes what the bucket holds (a partial
// grant), charging what was spent on credit and leasing ahead what the
// key's observed rate spends in a few seconds. The balance stays within
// one block: at most half of it held, at most the other half owed, so the
// replicas together admit over any window T at most burst + rate·T plus a
// block each, whatever the Ledger does.
type Global struct {
	Ledger Ledger
	// Block bounds how far a replica runs ahead of each global bucket
	// (default 1000, at most Burst/Replicas, at least 1: 100 for the
	// default burst of 200 on 2 replicas).
	Block int
	// Timeout is the longest a request waits for a lease (default 250 ms),
	// which it does only when the balance cannot pay for it; a lease that
	// fails or outlasts it starts a fallback episode, in which no request
	// waits: each is decided by its balance (so on credit, within the
	// block). A lease gets 10 times Timeout to finish; one that fails is
	// tried again for its key a second later.
	Timeout time.Duration
	// Replicas is how many replicas run at most (default 1): a replica's
	// block is at most Burst/Replicas, so the replicas together hold at
	// most half the burst unspent.
	Replicas int
	// Log hears of the fallback episodes: a WARN line when one starts and
	// one when the Ledger answers in time again.
	Log *slog.Logger
}

// Stats count what a global Limiter did.
type Stats struct {
	Writes, Refusals, Failures atomic.Int64 // Ledger writes: all, answered "the bucket is empty", failed
	Admitted, Fallback         atomic.Int64 // requests admitted; of them and the refused, decided in a fallback episode
	Waits                      atomic.Int64 // requests that waited for a lease (their balance could not pay)
}

// Stats returns the Limiter's counters (zero for a local Limiter).
func (l *Limiter) Stats() *Stats {
	if l == nil || l.g == nil {
		return &Stats{}
	}
	return &l.g.stats
}

// global is a Limiter's global mode.
type global struct {
	o            Options
	g            Global
	interval     time.Duration
	hold, credit int         // the two halves of the block: most tokens held, most owed
	failing      atomic.Bool // in a fallback episode
	emu          sync.Mutex
	changed      time.Time // when failing last changed (wall clock); emu held
	stats        Stats
	flights      sync.WaitGroup
	mu           sync.Mutex
	leases       map[string]*lease
}

// lease is what this replica knows of one key's global bucket.
type lease struct {
	mu      sync.Mutex
	balance int           // leased and not spent (> 0), or spent and not charged (< 0)
	tat     time.Time     // the bucket's TAT, as of the last lease
	next    time.Time     // no lease before then: the bucket was empty, or the Ledger failed
	flight  chan struct{} // closed when the lease in flight ends; nil when none is
	started time.Time     // when it started (wall clock)
	// The observed rate: tokens spent in the current second and the one
	// before.
	second    int64
	cur, prev int
}

func newGlobal(o Options) *global {
	g := o.Global
	if g.Timeout <= 0 {
		g.Timeout = 250 * time.Millisecond
	}
	g.Replicas = max(g.Replicas, 1)
	if g.Block <= 0 {
		g.Block = 1000
	}
	g.Block = max(1, min(g.Block, o.Burst/g.Replicas))
	if g.Log == nil {
		g.Log = slog.New(slog.DiscardHandler)
	}
	return &global{o: o, g: g, interval: time.Duration(float64(time.Second) / o.PerSecond),
		hold: g.Block / 2, credit: g.Block - g.Block/2, leases: map[string]*lease{}}
}

func (g *global) lease(key string, now time.Time) *lease {
	g.mu.Lock()
	defer g.mu.Unlock()
	s, ok := g.leases[key]
	if !ok {
		if len(g.leases) >= g.o.MaxTenants {
			for k, v := range g.leases { // drop idle keys (full global buckets, nothing owed); what they hold is forgotten
				if v.mu.TryLock() {
					if !v.tat.After(now) && v.balance >= 0 && v.flight == nil {
						delete(g.leases, k)
					}
					v.mu.Unlock()
				}
			}
		}
		s = &lease{}
		g.leases[key] = s
	}
	return s
}

// take spends n (1 to Burst) of key's tokens. It waits only when the
// balance cannot pay for them outside a fallback episode, for the lease in
// flight and at most Timeout from its start.
func (g *global) take(ctx context.Context, key string, n int) Decision {
	s := g.lease(key, g.o.Now())
	s.mu.Lock()
	d, wait := g.decide(key, s, n, g.o.Now(), true)
	started := s.started
	deadline := started.Add(g.g.Timeout)
	s.mu.Unlock()
	if wait == nil {
		return d
	}
	g.stats.Waits.Add(1)
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-wait:
	case <-t.C:
		g.episode(true, started)
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d, _ = g.decide(key, s, n, g.o.Now(), false)
	return d
}

// decide admits n from s's balance when it can pay (on credit down to
// -credit), and starts the lease that keeps the balance up. When it
// cannot, it starts a lease (unless the Ledger asked to wait) and, when
// canWait outside a fallback episode, returns it to wait for; else it
// refuses. s.mu is held.
func (g *global) decide(key string, s *lease, n int, now time.Time, canWait bool) (Decision, <-chan struct{}) {
	failing := g.failing.Load()
	if failing {
		g.stats.Fallback.Add(1)
	}
	if s.balance-n >= -g.credit {
		s.balance -= n
		s.rate(now)
		s.cur += n
		g.stats.Admitted.Add(1)
		g.refill(key, s, 0, now)
		return g.describe(s, true, n, now), nil
	}
	// A refused request starts the lease too: in a fallback episode, the
	// one that may end it for a key with nothing else to spend.
	if g.refill(key, s, n-g.credit-s.balance, now) && canWait && !failing {
		return Decision{}, s.flight
	}
	return g.describe(s, false, n, now), nil
}

// leaseDeadline is how many lease timeouts a lease gets to finish: one
// that answers late still lands in the balance.
const leaseDeadline = 10

// leaseAhead is how many seconds of its observed rate a key's lease takes
// ahead (within the held half of the block): a tenant at a few requests a
// second costs a write per few of them, not one per request.
const leaseAhead = 5

// rate is the key's observed rate at now: the most tokens spent in the
// current second or the one before.
func (s *lease) rate(now time.Time) int {
	switch sec := now.Unix(); {
	case sec == s.second+1:
		s.prev, s.cur = s.cur, 0
	case sec != s.second:
		s.prev, s.cur = 0, 0
	}
	s.second = now.Unix()
	return max(s.cur, s.prev)
}

// refill starts a lease for key, unless one is in flight or the bucket
// or the Ledger asked to wait, when the balance is spent (below zero: the
// credit pays while the lease is in flight) or short of need tokens for a
// request. The lease asks for what is owed and what the key spends in
// leaseAhead seconds (at most the held half of the block). It reports
// whether a lease is in flight. s.mu is held.
func (g *global) refill(key string, s *lease, need int, now time.Time) bool {
	if s.flight != nil {
		return true
	}
	target := min(g.hold, leaseAhead*s.rate(now))
	if now.Before(s.next) || need <= 0 && s.balance >= 0 {
		return false
	}
	q := Lease{Min: 1, Max: max(target-s.balance, need), Now: now, Interval: g.interval, Burst: g.o.Burst, Busy: s.tat.After(now)}
	s.flight, s.started = make(chan struct{}), time.Now()
	g.flights.Add(1)
	go g.fly(key, s, q)
	return true
}

// fly runs one lease and books what it brought.
func (g *global) fly(key string, s *lease, q Lease) {
	defer g.flights.Done()
	ctx, cancel := context.WithTimeout(context.Background(), leaseDeadline*g.g.Timeout)
	gr, err := g.g.Ledger.Lease(ctx, key, q)
	cancel()
	g.stats.Writes.Add(1)
	s.mu.Lock()
	started := s.started
	took := time.Since(started)
	switch {
	case err != nil:
		g.stats.Failures.Add(1)
		s.next = q.Now.Add(time.Second)
	case gr.Granted < q.Max:
		// The bucket gave all it held: ask again once it holds what was
		// still wanted (at most a second from now, at least when it
		// holds one token), so an overloaded key costs each replica
		// about one write a second, not one per request.
		if gr.Granted == 0 {
			g.stats.Refusals.Add(1)
		}
		s.tat = gr.TAT
		s.next = q.Now.Add(max(g.until(s, 1, q.Now), min(g.until(s, q.Max-gr.Granted, q.Now), time.Second)))
	default:
		s.tat = gr.TAT
	}
	s.balance += gr.Granted
	close(s.flight)
	s.flight = nil
	s.mu.Unlock()
	g.episode(err != nil || took >= g.g.Timeout, started)
}

// episode records whether the Ledger failed (or was slow) or answered in
// time, for a lease started at started, and logs the start and the end of
// a fallback episode once each. A lease started before the last change is
// old news: one that lands late after another answered in time starts no
// new episode.
func (g *global) episode(failing bool, started time.Time) {
	g.emu.Lock()
	defer g.emu.Unlock()
	if g.failing.Load() != failing && !started.Before(g.changed) {
		g.failing.Store(failing)
		g.changed = time.Now()
		if failing {
			g.g.Log.Warn("rate limit: the ledger fails or answers late; requests are decided without waiting for it, on credit within a block per key",
				"timeout", g.g.Timeout.String())
		} else {
			g.g.Log.Warn("rate limit: the ledger answers in time again")
		}
	}
}

// describe is the decision on n at now, as this replica can keep it:
// Remaining is what its balance still admits (held and credit), so a
// client is never promised a request this replica then refuses; Reset is
// when the global bucket, as last seen and with what is owed to it, is
// full; RetryAfter when the bucket, as last seen, holds what the balance
// lacks (not before the next lease may start).
func (g *global) describe(s *lease, allowed bool, n int, now time.Time) Decision {
	avail := s.balance + g.credit
	base := s.tat
	if base.Before(now) {
		base = now
	}
	d := Decision{Allowed: allowed, Limit: int(math.Ceil(g.o.PerSecond)), Burst: g.o.Burst, Rate: g.o.PerSecond,
		Reset: base.Sub(now) + time.Duration(max(0, -s.balance))*g.interval}
	want := n // a refused request's, or, once admitted, the next one's
	if allowed {
		d.Remaining, want = min(g.o.Burst, avail), 1
	}
	if avail < want {
		d.RetryAfter = max(g.until(s, want-avail, now), s.next.Sub(now))
	}
	return d
}

// until is how long until key's global bucket holds n tokens, as this
// replica last saw it.
func (g *global) until(s *lease, n int, now time.Time) time.Duration {
	return max(0, s.tat.Add(time.Duration(n-g.o.Burst)*g.interval).Sub(now))
}
