package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/tenantd/tenantd/internal/audit"
)

// batch is a stream batch as Lambda delivers it: an audit event, an
// item that is none, a removal, and another audit event.
const batch = `{"Records":[
 {"eventName":"INSERT","dynamodb":{"SequenceNumber":"100","NewImage":{"type":{"S":"AuditEvent"},"orgId":{"S":"01KJPWD6MCH66BQCJZTYJEZQ3D"},
  "eventId":{"S":"01KJPWD6N71DKBPF3H8SB3YPND"},"action":{"S":"ticket.create"},"actorId":{"S":"u_ada"},"targetType":{"S":"ticket"},
  "targetId":{"S":"01KJPWD6N71DKBPF3H8SB3YPNE"},"at":{"S":"2026-12-03T16:20:15.373Z"},"changes":{"S":"[{\"field\":\"title\",\"after\":\"x\"}]"}}}},
 {"eventName":"INSERT","dynamodb":{"SequenceNumber":"200","NewImage":{"type":{"S":"Ticket"},"orgId":{"S":"01KJPWD6MCH66BQCJZTYJEZQ3D"},"commentCount":{"N":"0"}}}},
 {"eventName":"REMOVE","dynamodb":{"SequenceNumber":"300","OldImage":{"type":{"S":"AuditEvent"}}}},
 {"eventName":"INSERT","dynamodb":{"SequenceNumber":"400","NewImage":{"type":{"S":"AuditEvent"},"orgId":{"S":"01KJPWD6MCH66BQCJZTYJEZQ3D"},
  "eventId":{"S":"01KJPWD6N71DKBPF3H8SB3YPNF"},"action":{"S":"ticket.update"},"actorId":{"S":"u_ada"},"targetType":{"S":"ticket"},
  "targetId":{"S":"01KJPWD6N71DKBPF3H8SB3YPNE"},"at":{"S":"2026-12-03T16:20:16Z"}}}}
]}`

func TestHandle(t *testing.T) {
	var e events.DynamoDBEvent
	if err := json.Unmarshal([]byte(batch), &e); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	t.Run("dispatches the audit events, in order", func(t *testing.T) {
		var got []audit.Event
		resp, err := handle(context.Background(), e, func(_ context.Context, evs []audit.Event) (int, error) {
			got = evs
			return len(evs), nil
		}, log)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("resp %+v, err %v", resp, err)
		}
		var actions []string
		for _, ev := range got {
			actions = append(actions, ev.Action)
		}
		if !slices.Equal(actions, []string{"ticket.create", "ticket.update"}) {
			t.Fatalf("dispatched %q", actions)
		}
		if ev := got[0]; ev.ActorID != "u_ada" || len(ev.Changes) != 1 || ev.Changes[0].After != "x" || ev.At.IsZero() {
			t.Errorf("first event: %+v", ev)
		}
	})
	t.Run("a failure reports the record of the first event that failed", func(t *testing.T) {
		resp, err := handle(context.Background(), e, func(context.Context, []audit.Event) (int, error) {
			return 1, errors.New("throttled")
		}, log)
		if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "400" {
			t.Errorf("resp %+v, err %v, want the second event's record (400)", resp, err)
		}
	})
}
