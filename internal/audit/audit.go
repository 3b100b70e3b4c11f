// Package audit records who did what in an org: every mutating operation
// writes an Event in the same DynamoDB transaction as the change itself, so
// the log can neither miss a change nor record one that did not happen.
package audit

import (
	"context"
	"encoding/json"
	"reflect"
	"time"

	"github.com/tenantd/tenantd/internal/page"
)

// Event is one audited change.
type Event struct {
	OrgID   string
	ID      string // ULID: time-ordered
	ActorID string
	// ActorFloor is the lowest org role with which the actor would still
	// be allowed the change ("" when the actor acted from outside the org:
	// creating it, accepting an invitation). The store fences the write on
	// it: the change commits only while the actor's membership still exists
	// with at least that role. Not stored.
	ActorFloor string
	Action     string // e.g. "ticket.update"
	TargetType string // "org", "user", "team", "member", "ticket", "comment", "invitation"
	TargetID   string
	RequestID  string // the server's id of the request that made the change
	// ClientRequestID is the X-Request-Id the client sent, when it was
	// well-formed (see httpapi); "" otherwise.
	ClientRequestID string
	At              time.Time
	Changes         []Change
}

// Change is one field's value before and after (nil when absent).
type Change struct {
	Field  string `json:"field"`
	Before any    `json:"before,omitempty"`
	After  any    `json:"after,omitempty"`
}

// Diff lists the fields whose values differ, in the order given. Pairs are
// (field, before, after).
func Diff(fields ...Field) []Change {
	var out []Change
	for _, f := range fields {
		f.Before, f.After = unsetIfEmpty(f.Before), unsetIfEmpty(f.After)
		if !reflect.DeepEqual(f.Before, f.After) {
			out = append(out, Change{Field: f.Name, Before: f.Before, After: f.After})
		}
	}
	return out
}

// unsetIfEmpty treats an empty string or list as absent, so "no
// description" before and after is no change.
func unsetIfEmpty(v any) any {
	switch x := v.(type) {
	case string:
		if x == "" {
			return nil
		}
	case []string:
		if len(x) == 0 {
			return nil
		}
	}
	return v
}

// Field is one field of a Diff.
type Field struct {
	Name          string
	Before, After any
}

// F makes a Field.
func F(name string, before, after any) Field { return Field{Name: name, Before: before, After: after} }

// MarshalChanges renders changes as JSON for storage.
func MarshalChanges(cs []Change) string {
	if len(cs) == 0 {
		return ""
	}
	b, _ := json.Marshal(cs)
	return string(b)
}

type eventKey struct{}
type requestIDKey struct{}
type clientRequestIDKey struct{}

// With returns ctx carrying ev for the store to write with the change. Its
// request ids default to the ones ctx carries.
func With(ctx context.Context, ev Event) context.Context {
	if ev.RequestID == "" {
		ev.RequestID = RequestID(ctx)
	}
	if ev.ClientRequestID == "" {
		ev.ClientRequestID = ClientRequestID(ctx)
	}
	return context.WithValue(ctx, eventKey{}, ev)
}

// From returns the event carried by ctx, if any.
func From(ctx context.Context) (Event, bool) {
	ev, ok := ctx.Value(eventKey{}).(Event)
	return ev, ok
}

// WithRequestID returns ctx carrying the request's ID for events.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the request ID carried by ctx, "" if none.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// WithClientRequestID returns ctx carrying the id the client gave the
// request (already checked by the caller) for events.
func WithClientRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, clientRequestIDKey{}, id)
}

// ClientRequestID returns the client's request ID carried by ctx, "" if none.
func ClientRequestID(ctx context.Context) string {
	id, _ := ctx.Value(clientRequestIDKey{}).(string)
	return id
}

// Query selects events of an org, newest first, between Since and Until
// (zero = open).
type Query struct {
	OrgID        string
	Since, Until time.Time
	Page         page.Request
}

// Storer reads the log.
type Storer interface {
	// ListEvents returns one page of events newest first. A page may hold
	// fewer events than the limit (it never spans two time buckets); keep
	// following Next until it is empty.
	ListEvents(ctx context.Context, q Query) (page.Result[Event], error)
}
