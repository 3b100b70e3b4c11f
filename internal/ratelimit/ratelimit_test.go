package ratelimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ratelimit"
)

// serve runs one request for org through the limiter.
func serve(t *testing.T, l *ratelimit.Limiter, org string) (http.Header, error) {
	t.Helper()
	e := echo.New()
	req := httptest.NewRequest(http.MethodGet, "/v1/orgs/"+org, nil)
	req = req.WithContext(authz.WithIdentity(context.Background(), authz.Identity{UserID: "u1"}))
	rec := httptest.NewRecorder()
	c := e.NewContext(req, rec)
	c.SetParamNames("orgId")
	c.SetParamValues(org)
	err := l.Middleware()(func(echo.Context) error { return nil })(c)
	return rec.Header(), err
}

func TestLimiter(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	l := ratelimit.New(ratelimit.Options{PerSecond: 2, Burst: 3, Now: func() time.Time { return now }})

	t.Run("OK burst then 429", func(t *testing.T) {
		for i := range 3 {
			if _, err := serve(t, l, "A"); err != nil {
				t.Fatalf("request %d refused: %v", i, err)
			}
		}
		h, err := serve(t, l, "A")
		if got, want := errs.KindOf(err), errs.TooManyRequests; got != want {
			t.Fatalf("4th request: got %v, want %v", got, want)
		}
		if got, want := h.Get("Retry-After"), "1"; got != want {
			t.Errorf("Retry-After: got %q, want %q", got, want)
		}
		if got, want := h.Get("RateLimit-Remaining"), "0"; got != want {
			t.Errorf("RateLimit-Remaining: got %q, want %q", got, want)
		}
	})
	t.Run("OK another tenant is unaffected", func(t *testing.T) {
		if h, err := serve(t, l, "B"); err != nil || h.Get("RateLimit-Remaining") != "2" {
			t.Errorf("org B: err %v, remaining %q", err, h.Get("RateLimit-Remaining"))
		}
	})
	t.Run("OK refills with time", func(t *testing.T) {
		now = now.Add(time.Second) // 2 tokens back
		for i := range 2 {
			if _, err := serve(t, l, "A"); err != nil {
				t.Fatalf("request %d after refill refused: %v", i, err)
			}
		}
		if _, err := serve(t, l, "A"); errs.KindOf(err) != errs.TooManyRequests {
			t.Errorf("third request after a 2-token refill: got %v, want 429", err)
		}
	})
	t.Run("OK zero rate is no limit", func(t *testing.T) {
		off := ratelimit.New(ratelimit.Options{})
		for range 100 {
			if _, err := serve(t, off, "A"); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestPerCaller: the per-caller bucket is keyed by the token's subject
// alone, whatever org the request names, and leaves other callers alone.
func TestPerCaller(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	l := ratelimit.New(ratelimit.Options{PerSecond: 1, Burst: 2, Now: func() time.Time { return now }})
	run := func(user, org string) error {
		e := echo.New()
		req := httptest.NewRequest(http.MethodGet, "/v1/orgs/"+org, nil)
		req = req.WithContext(authz.WithIdentity(context.Background(), authz.Identity{UserID: user}))
		c := e.NewContext(req, httptest.NewRecorder())
		c.SetParamNames("orgId")
		c.SetParamValues(org)
		return l.PerCaller()(func(echo.Context) error { return nil })(c)
	}
	if err := run("u1", "A"); err != nil {
		t.Fatal(err)
	}
	if err := run("u1", "B"); err != nil {
		t.Fatal(err)
	}
	if err := run("u1", "C"); errs.KindOf(err) != errs.TooManyRequests {
		t.Errorf("third request of u1, on a third org: got %v, want 429", err)
	}
	if err := run("u2", "C"); err != nil {
		t.Errorf("another caller: %v", err)
	}
}
