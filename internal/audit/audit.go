// Package audit records who did what in an org: every mutating operation
// writes an Event in the same DynamoDB transaction as the change itself, so
// the log can neither miss a change nor record one that did not happen.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"time"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/clock"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/page"
)

// Event is one audited change.
type Event struct {
	OrgID   string
	ID      string // ULID: time-ordered
	ActorID string
	// ActorFloor, ActorTeamID and ActorTeamFloor are the actor's Floor,
	// TeamID and TeamFloor, on which the store fences the write (not
	// stored).
	ActorFloor                  string
	ActorTeamID, ActorTeamFloor string
	Action                      string // e.g. "ticket.update"
	TargetType                  string // "org", "user", "team", "member", "ticket", "comment", "invitation"
	TargetID                    string
	RequestID                   string // the server's id of the request that made the change
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

// Diff lists the fields whose values differ, in the order given.
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

// Actor is who makes a change, and on what authority: Floor is the lowest
// org role with which they would still be allowed it ("" for a user acting
// from outside the org: creating it, accepting an invitation); TeamID and
// TeamFloor the team edge the grant rested on, if any (authz.Grant). The
// change commits only while the actor's edges still have those roles.
type Actor struct {
	OrgID, UserID string
	Floor         authz.Role
	TeamID        string
	TeamFloor     authz.Role
}

// By is p making a change that g allowed.
func By(p authz.Principal, g authz.Grant) Actor {
	return Actor{OrgID: p.OrgID, UserID: p.UserID, Floor: g.Floor, TeamID: g.TeamID, TeamFloor: g.TeamFloor}
}

// Outsider is userID making a change to orgID without being a member of
// it yet: creating it, accepting an invitation to it.
func Outsider(orgID, userID string) Actor { return Actor{OrgID: orgID, UserID: userID} }

// NewEvent is the one constructor of events: the change action (e.g.
// "ticket.update") that actor made to the target at time at, with its
// changes, an ID of gen for at (so events sort by time), and the ids of the
// request making it (which ctx carries: see WithRequestID).
func NewEvent(ctx context.Context, gen *ids.Generator, actor Actor, action, targetType, targetID string, at time.Time, changes []Change) Event {
	return Event{OrgID: actor.OrgID, ID: gen.NewAt(at), ActorID: actor.UserID, ActorFloor: string(actor.Floor),
		ActorTeamID: actor.TeamID, ActorTeamFloor: string(actor.TeamFloor), Action: action,
		TargetType: targetType, TargetID: targetID, RequestID: RequestID(ctx), ClientRequestID: ClientRequestID(ctx),
		At: at, Changes: changes}
}

// Update is the tail every update shares: a change that records no
// difference writes nothing and returns prev; any other is written by
// write, returning next.
func Update[T any](ctx context.Context, write func(context.Context, T, T, Event) error, prev, next T, ev Event) (T, error) {
	if len(ev.Changes) == 0 {
		return prev, nil
	}
	if err := write(ctx, prev, next, ev); err != nil {
		var zero T
		return zero, err
	}
	return next, nil
}

var errIncomplete = errors.New("audit: the event lacks its org, ID, actor, action, target or time")

// Check reports an event a store must refuse: one not made by NewEvent
// (a zero Event, say), which would record nothing of the change.
func (e Event) Check() error {
	if e.OrgID == "" || e.ID == "" || e.ActorID == "" || e.Action == "" || e.TargetType == "" || e.At.IsZero() {
		return errIncomplete
	}
	return nil
}

type requestIDKey struct{}
type clientRequestIDKey struct{}

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

// Storer reads the log (events are written by the other stores, each in
// the transaction of the change it records).
type Storer interface {
	// ListAuditEvents returns one page of events newest first. A page may
	// hold fewer events than the limit: follow Next until it is empty.
	ListAuditEvents(ctx context.Context, q Query) (page.Result[Event], error)
	// OrgCreatedAt is when the org was created. Returns NotFound.
	OrgCreatedAt(ctx context.Context, orgID string) (time.Time, error)
}

// Service reads an org's audit log.
type Service struct {
	store Storer
	now   clock.Clock
}

// NewService returns a Service; now may be nil for the system clock.
func NewService(s Storer, now clock.Clock) *Service { return &Service{store: s, now: clock.Or(now)} }

// ListAuditEvents reads the org's audit log, newest first, between since
// and until (zero: now) (admin+).
func (s *Service) ListAuditEvents(ctx context.Context, p authz.Principal, since, until time.Time, pr page.Request) (page.Result[Event], error) {
	if err := authz.Authorize(p, authz.AuditRead, authz.Facts{}); err != nil {
		return page.Result[Event]{}, err
	}
	if !since.IsZero() && !until.IsZero() && since.After(until) {
		return page.Result[Event]{}, errs.InvalidParams("invalid_range", "since is after until: the range holds nothing", "since", "until")
	}
	// Nothing happened before the org existed: clamping the range to its
	// creation keeps a young org's listing to one Query per month it lived.
	created, err := s.store.OrgCreatedAt(ctx, p.OrgID)
	if err != nil {
		return page.Result[Event]{}, err
	}
	if since.Before(created) {
		since = created.Truncate(time.Millisecond)
	}
	// Nothing happened after now either: a far future until would make the
	// listing walk empty months (a Query each) before it met an event.
	if now := s.now(); until.IsZero() || until.After(now) {
		until = now
	}
	if since.After(until) {
		return page.Result[Event]{Items: []Event{}}, nil
	}
	return s.store.ListAuditEvents(ctx, Query{OrgID: p.OrgID, Since: since, Until: until, Page: pr})
}
