package audit_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/ids"
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

func TestNewEvent(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	ctx := audit.WithClientRequestID(audit.WithRequestID(context.Background(), "req-1"), "client-1")
	actor := audit.By(authz.Principal{Identity: authz.Identity{UserID: "u_bob"}, OrgID: "01ORG"}, authz.Grant{Floor: authz.Admin})
	ev := audit.NewEvent(ctx, ids.NewGenerator(nil), actor, "ticket.update", "ticket", "01T", at, nil)
	t.Run("OK", func(t *testing.T) {
		if !ids.ValidResource(ev.ID) || ulid.MustParse(ev.ID).Time() != ulid.Timestamp(at) {
			t.Errorf("ID %q: want a ULID of the event's time", ev.ID)
		}
		want := audit.Event{OrgID: "01ORG", ID: ev.ID, ActorID: "u_bob", ActorFloor: "admin", Action: "ticket.update",
			TargetType: "ticket", TargetID: "01T", RequestID: "req-1", ClientRequestID: "client-1", At: at}
		if !reflect.DeepEqual(ev, want) {
			t.Errorf("got %+v, want %+v", ev, want)
		}
		if err := ev.Check(); err != nil {
			t.Errorf("Check: %v", err)
		}
	})
	t.Run("ErrIncomplete", func(t *testing.T) {
		// A write that forgets its event (the zero Event), or one missing
		// any part, is refused by the store through Check.
		for name, e := range map[string]audit.Event{
			"zero":      {},
			"no org":    func() audit.Event { e := ev; e.OrgID = ""; return e }(),
			"no ID":     func() audit.Event { e := ev; e.ID = ""; return e }(),
			"no actor":  func() audit.Event { e := ev; e.ActorID = ""; return e }(),
			"no action": func() audit.Event { e := ev; e.Action = ""; return e }(),
			"no target": func() audit.Event { e := ev; e.TargetType = ""; return e }(),
			"no time":   func() audit.Event { e := ev; e.At = time.Time{}; return e }(),
		} {
			if e.Check() == nil {
				t.Errorf("%s: Check accepted %+v", name, e)
			}
		}
	})
}
