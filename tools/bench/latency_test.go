package main

import (
	"testing"
	"time"
)

func TestRoundTrips(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	sp := func(a, b int) span { return span{at(a), at(b)} }
	reqs := []span{sp(0, 10), sp(20, 30), sp(40, 50), sp(60, 70)}
	calls := []span{
		// request 1: two sequential calls.
		sp(1, 3), sp(4, 6),
		// request 2: two calls in flight together, then one.
		sp(21, 24), sp(22, 23), sp(25, 27),
		// request 3: one call.
		sp(41, 43),
		// request 4 makes none; a call between requests counts for none.
		sp(55, 56),
	}
	mean, most := roundTrips(reqs, calls)
	if want := (2.0 + 2 + 1) / 3; mean != want || most != 2 {
		t.Errorf("roundTrips = %.3f, %d; want %.3f, 2", mean, most, want)
	}
}
