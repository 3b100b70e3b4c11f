package ratelimit_test

import (
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/ratelimit"
)

func TestLimiter(t *testing.T) {
	ctx := t.Context()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	l := ratelimit.New(ratelimit.Options{PerSecond: 2, Burst: 3, Now: func() time.Time { return now }})

	t.Run("OK burst then refused", func(t *testing.T) {
		for i := range 3 {
			if d := l.Take(ctx, "A"); !d.Allowed {
				t.Fatalf("request %d refused: %+v", i, d)
			}
		}
		d := l.Take(ctx, "A")
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
		if d := l.Take(ctx, "B"); !d.Allowed || d.Remaining != 2 {
			t.Errorf("key B: %+v, want allowed with 2 remaining", d)
		}
	})
	t.Run("OK refills with time", func(t *testing.T) {
		now = now.Add(time.Second) // 2 tokens back
		for i := range 2 {
			if d := l.Take(ctx, "A"); !d.Allowed {
				t.Fatalf("request %d after refill refused", i)
			}
		}
		if d := l.Take(ctx, "A"); d.Allowed {
			t.Errorf("third request after a 2-token refill allowed")
		}
	})
	t.Run("OK zero rate is no limit", func(t *testing.T) {
		off := ratelimit.New(ratelimit.Options{})
		if !off.Off() {
			t.Fatal("a zero rate is not off")
		}
		for range 100 {
			if d := off.Take(ctx, "A"); !d.Allowed {
				t.Fatal("refused without a limit")
			}
		}
	})
	t.Run("OK a nil limiter is off", func(t *testing.T) {
		var none *ratelimit.Limiter
		if d := none.Take(ctx, "A"); !none.Off() || !d.Allowed {
			t.Errorf("nil limiter: off %v, %+v", none.Off(), d)
		}
	})
}

func TestClockSteppedBack(t *testing.T) {
	ctx := t.Context()
	now := time.Unix(1_000_000, 0)
	l := ratelimit.New(ratelimit.Options{PerSecond: 1, Burst: 1, Now: func() time.Time { return now }})
	l.Take(ctx, "k")
	now = now.Add(-time.Hour) // NTP steps the clock back
	l.Take(ctx, "k")
	now = now.Add(2 * time.Second)
	if d := l.Take(ctx, "k"); !d.Allowed {
		t.Errorf("2 s after a step back: refused (%+v); the bucket froze until the old time", d)
	}
}
