package page_test

import (
	"testing"

	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/page"
)

func TestCheck(t *testing.T) {
	cases := []struct {
		name      string
		in        page.Request
		wantLimit int
		wantCode  string
	}{
		{"zero means default", page.Request{}, page.DefaultLimit, ""},
		{"one", page.Request{Limit: 1}, 1, ""},
		{"default", page.Request{Limit: 25}, 25, ""},
		{"max", page.Request{Limit: page.MaxLimit}, page.MaxLimit, ""},
		{"max+1", page.Request{Limit: page.MaxLimit + 1}, 0, "invalid_limit"},
		{"huge", page.Request{Limit: 1 << 30}, 0, "invalid_limit"},
		{"negative", page.Request{Limit: -1}, 0, "invalid_limit"},
		{"after is kept", page.Request{Limit: 5, After: "abc"}, 5, ""},
		{"after with default limit", page.Request{After: "abc"}, page.DefaultLimit, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.in.Check()
			if c.wantCode != "" {
				e, ok := errs.As(err)
				if !ok {
					t.Fatalf("got %v, want an *errs.Error", err)
				}
				if got, want := e.Kind, errs.Invalid; got != want {
					t.Errorf("kind: got %v, want %v", got, want)
				}
				if got, want := e.Code, c.wantCode; got != want {
					t.Errorf("code: got %q, want %q", got, want)
				}
				if got, want := e.Field, "limit"; got != want {
					t.Errorf("field: got %q, want %q", got, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := got.Limit, c.wantLimit; got != want {
				t.Errorf("limit: got %d, want %d", got, want)
			}
			if got, want := got.After, c.in.After; got != want {
				t.Errorf("after: got %q, want %q", got, want)
			}
		})
	}
}

func TestCheckDoesNotModifyReceiver(t *testing.T) {
	r := page.Request{}
	if _, err := r.Check(); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Limit, 0; got != want {
		t.Errorf("receiver limit: got %d, want %d", got, want)
	}
}

func TestLimits(t *testing.T) {
	if !(1 <= page.DefaultLimit && page.DefaultLimit <= page.MaxLimit) {
		t.Errorf("DefaultLimit %d outside 1..MaxLimit %d", page.DefaultLimit, page.MaxLimit)
	}
	// A store query asks for one item more than the page; DynamoDB's
	// transaction and batch limits are 100, the page size must stay sane.
	if got, want := page.MaxLimit, 100; got != want {
		t.Errorf("MaxLimit: got %d, want %d", got, want)
	}
}
