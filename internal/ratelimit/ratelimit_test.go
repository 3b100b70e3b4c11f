package ratelimit_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/ratelimit"
)

func TestLimiter(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	l := ratelimit.New(ratelimit.Options{PerSecond: 2, Burst: 3, Now: func() time.Time { return now }})

	t.Run("OK burst then refused", func(t *testing.T) {
		for i := range 3 {
			if d := l.Take("A"); !d.Allowed {
				t.Fatalf("request %d refused: %+v", i, d)
			}
		}
		d := l.Take("A")
		if d.Allowed {
			t.Fatalf("4th request allowed: %+v", d)
		}
		if d.RetryAfter <= 0 || d.RetryAfter > time.Second/2 {
			t.Errorf("RetryAfter: got %v, want (0, 500ms]", d.RetryAfter)
		}
		if d.Remaining != 0 || d.Limit != 2 || d.Burst != 3 {
			t.Errorf("decision: got %+v, want 0 remaining of a 2/s, burst 3 limit", d)
		}
	})
	t.Run("OK another key is unaffected", func(t *testing.T) {
		if d := l.Take("B"); !d.Allowed || d.Remaining != 2 {
			t.Errorf("key B: %+v, want allowed with 2 remaining", d)
		}
	})
	t.Run("OK refills with time", func(t *testing.T) {
		now = now.Add(time.Second) // 2 tokens back
		for i := range 2 {
			if d := l.Take("A"); !d.Allowed {
				t.Fatalf("request %d after refill refused", i)
			}
		}
		if d := l.Take("A"); d.Allowed {
			t.Errorf("third request after a 2-token refill allowed")
		}
	})
	t.Run("OK zero rate is no limit", func(t *testing.T) {
		off := ratelimit.New(ratelimit.Options{})
		if !off.Off() {
			t.Fatal("a zero rate is not off")
		}
		for range 100 {
			if d := off.Take("A"); !d.Allowed {
				t.Fatal("refused without a limit")
			}
		}
	})
	t.Run("OK a nil limiter is off", func(t *testing.T) {
		var none *ratelimit.Limiter
		if d := none.Take("A"); !none.Off() || !d.Allowed {
			t.Errorf("nil limiter: off %v, %+v", none.Off(), d)
		}
	})
}

func TestAvailableSpendsNothing(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	l := ratelimit.New(ratelimit.Options{PerSecond: 1, Burst: 2, Now: func() time.Time { return now }})
	for range 5 {
		if !l.Available("org:a") {
			t.Fatal("a full bucket: not available")
		}
	}
	l.Take("org:a")
	l.Take("org:a")
	if l.Available("org:a") {
		t.Error("an empty bucket: available")
	}
	now = now.Add(time.Second)
	if !l.Available("org:a") || !l.Take("org:a").Allowed {
		t.Error("a second later: not available")
	}
}

func TestClockSteppedBack(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	l := ratelimit.New(ratelimit.Options{PerSecond: 1, Burst: 1, Now: func() time.Time { return now }})
	l.Take("k")
	now = now.Add(-time.Hour) // NTP steps the clock back
	l.Take("k")
	now = now.Add(2 * time.Second)
	if d := l.Take("k"); !d.Allowed {
		t.Errorf("2 s after a step back: refused (%+v); the bucket froze until the old time", d)
	}
}

func TestAvailableMakesNoBucket(t *testing.T) {
	l := ratelimit.New(ratelimit.Options{PerSecond: 1, Burst: 1, MaxTenants: 2})
	for i := range 100 {
		if !l.Available(fmt.Sprint("org:", i)) {
			t.Fatal("an unknown key: not available")
		}
	}
	if n := l.Buckets(); n != 0 {
		t.Errorf("%d buckets after peeks only, want 0", n)
	}
}

// TestHold: holds spend nothing, refuse nobody's Take, and are at most what
// the bucket holds; a release (once, however often called) gives the room
// back. A bucket with a hold is not dropped as idle.
func TestHold(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	l := ratelimit.New(ratelimit.Options{PerSecond: 1, Burst: 2, MaxTenants: 1, Now: func() time.Time { return now }})
	r1, ok1 := l.Hold("org:a")
	r2, ok2 := l.Hold("org:a")
	if _, ok3 := l.Hold("org:a"); !ok1 || !ok2 || ok3 {
		t.Fatalf("holds on a bucket of 2: %v %v %v, want true true false", ok1, ok2, ok3)
	}
	if l.Available("org:a") {
		t.Error("a bucket held whole: available")
	}
	l.Take("b") // MaxTenants 1: makes room by dropping idle full buckets
	r1()
	r1() // a second release gives nothing more back
	if _, ok := l.Hold("org:a"); !ok {
		t.Fatal("after a release: no room (the held bucket was dropped, or the release lost)")
	}
	if _, ok := l.Hold("org:a"); ok {
		t.Error("a double release gave two holds back")
	}
	if d := l.Take("org:a"); !d.Allowed || d.Remaining != 1 {
		t.Errorf("a Take beside holds: %+v, want allowed with 1 left (holds spend nothing)", d)
	}
	r2()
}

// TestSpendOwes: a spend on an empty bucket is never refused and is owed
// (down to one burst of debt): the bucket refuses until it has refilled
// past the debt, so the sustained rate holds.
func TestSpendOwes(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	l := ratelimit.New(ratelimit.Options{PerSecond: 1, Burst: 2, Now: func() time.Time { return now }})
	l.Take("k")
	l.Take("k")
	for i := range 3 {
		if d := l.Spend("k"); !d.Allowed {
			t.Fatalf("spend %d on an empty bucket: refused", i)
		}
	}
	now = now.Add(2 * time.Second) // refills 2: the debt, capped at one burst (2), is repaid, nothing more
	if d := l.Take("k"); d.Allowed {
		t.Errorf("a take 2 s after 3 spends owed on a bucket of 2: allowed (%+v), want refused", d)
	}
	now = now.Add(time.Second)
	if d := l.Take("k"); !d.Allowed {
		t.Errorf("3 s after: refused (%+v)", d)
	}
}
