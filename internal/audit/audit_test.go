package audit_test

import (
	"context"
	"testing"

	"github.com/tenantd/tenantd/internal/audit"
)

func TestDiff(t *testing.T) {
	got := audit.Diff(
		audit.F("name", "Acme", "Acme Inc"),
		audit.F("description", "", nil),         // empty both ways: no change
		audit.F("tags", []string{}, []string{}), // same
		audit.F("role", "member", "admin"),
		audit.F("teamId", nil, "T1"),
	)
	want := []string{"name", "role", "teamId"}
	if len(got) != len(want) {
		t.Fatalf("got %d changes %+v, want fields %v", len(got), got, want)
	}
	for i, c := range got {
		if c.Field != want[i] {
			t.Errorf("change %d: got field %q, want %q", i, c.Field, want[i])
		}
	}
	if got[2].Before != nil || got[2].After != "T1" {
		t.Errorf("teamId change: got %+v", got[2])
	}
}

func TestWithCarriesRequestID(t *testing.T) {
	ctx := audit.WithRequestID(context.Background(), "req-1")
	ev, ok := audit.From(audit.With(ctx, audit.Event{Action: "x"}))
	if !ok || ev.RequestID != "req-1" {
		t.Errorf("got %+v, %v; want the request id filled in", ev, ok)
	}
	if _, ok := audit.From(context.Background()); ok {
		t.Error("an event came from an empty context")
	}
}
