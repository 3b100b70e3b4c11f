package testkit

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
)

// OrgID is the org the domain packages' tests work in.
const OrgID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"

// T0 and T1: the seed's time, and the services' now.
var (
	T0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	T1 = time.Date(2026, 3, 2, 10, 30, 0, 0, time.UTC)
)

// Now is the services' clock: always T1.
func Now() time.Time { return T1 }

// As is userID acting in OrgID with org role.
func As(userID string, role authz.Role) authz.Principal {
	return authz.Principal{Identity: authz.Identity{UserID: userID}, OrgID: OrgID, OrgRole: role}
}

// Recorder is what every domain package's fake store embeds beside its
// own store methods: it counts the calls it serves (Calls, by method),
// fails the methods told to (Fail), plays a concurrent writer just before
// each write (BeforeWrite), refuses an incomplete audit event as the real
// store does, and keeps the event of every write that committed (Events).
type Recorder struct {
	Calls       map[string]int
	Fail        map[string]error
	BeforeWrite func()
	Events      []audit.Event
}

// NewRecorder returns empty bookkeeping.
func NewRecorder() Recorder {
	return Recorder{Calls: map[string]int{}, Fail: map[string]error{}}
}

// Op counts a call of method and returns the error it was told to fail
// with.
func (r *Recorder) Op(method string) error {
	r.Calls[method]++
	return r.Fail[method]
}

// Write is Op for a write: then the concurrent writer, if any, and the
// check of ev.
func (r *Recorder) Write(method string, ev audit.Event) error {
	if err := r.Op(method); err != nil {
		return err
	}
	if r.BeforeWrite != nil {
		r.BeforeWrite()
	}
	if err := ev.Check(); err != nil {
		return &errs.Error{Kind: errs.Internal, Code: "bad_event", Message: "incomplete audit event", Err: err}
	}
	return nil
}

// Commit keeps ev, the event of a write that committed; it returns nil,
// the write's answer.
func (r *Recorder) Commit(ev audit.Event) error {
	r.Events = append(r.Events, ev)
	return nil
}

// Grant is the authority an event records (its fences): the actor's org
// floor and, when a team role decided, the team and the floor there.
type Grant struct {
	Floor     authz.Role
	TeamID    string
	TeamFloor authz.Role
}

// ByOrg is a grant of the org role alone.
func ByOrg(floor authz.Role) Grant { return Grant{Floor: floor} }

// ByTeam is a grant of an org member's role on teamID.
func ByTeam(teamID string, floor authz.Role) Grant {
	return Grant{Floor: authz.Member, TeamID: teamID, TeamFloor: floor}
}

// WantEvent fails t unless exactly one event was kept: for action on
// targetType/targetID by actor in OrgID, on the authority g, at T1, with
// changes to fields (in order).
func (r *Recorder) WantEvent(t testing.TB, action, targetType, targetID, actor string, g Grant, fields ...string) {
	t.Helper()
	if len(r.Events) != 1 {
		t.Fatalf("events: got %d (%+v), want 1", len(r.Events), r.Events)
	}
	ev := r.Events[0]
	const form = "%s %s/%s by %s (floor %q, team %q) in %s at %v"
	got := fmt.Sprintf(form, ev.Action, ev.TargetType, ev.TargetID, ev.ActorID, ev.ActorFloor,
		strings.Trim(ev.ActorTeamID+":"+ev.ActorTeamFloor, ":"), ev.OrgID, ev.At)
	want := fmt.Sprintf(form, action, targetType, targetID, actor, g.Floor, strings.Trim(g.TeamID+":"+string(g.TeamFloor), ":"), OrgID, T1)
	if got != want {
		t.Errorf("event: got %s, want %s", got, want)
	}
	var changed []string
	for _, c := range ev.Changes {
		changed = append(changed, c.Field)
	}
	if !slices.Equal(changed, fields) {
		t.Errorf("changed fields: got %v, want %v", changed, fields)
	}
}

// WantNoEvent fails t if an event was kept.
func (r *Recorder) WantNoEvent(t testing.TB) {
	t.Helper()
	if len(r.Events) != 0 {
		t.Errorf("events: got %+v, want none", r.Events)
	}
}
