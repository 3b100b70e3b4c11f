// Package export reads out everything an org holds, for its owners to take
// with them: the org, its users, teams with their members, tickets with
// their comments, invitations, webhooks (never their secrets) and its audit
// log, as one stream of records read page by page from the org's own
// partitions and indexes, memory flat however large the org.
//
// An export is resumable and consistent. Every record carries the Position
// right after it, from which a new export goes on. Every export has an
// audit position, taken before its first read: every change whose audit
// event is older was committed before the export read anything, so the
// export shows it; a change since may or may not show. The export's own
// audit events are those before the position, and a client that applies
// the audit log from the position on (oldest first: each event sets its
// changes' `after` values) holds the org as it is now, whatever was written
// while it read.
package export

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/clock"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/invitation"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
	"github.com/tenantd/tenantd/internal/webhook"
)

// The types of an export's records, in the order they come: each team is
// followed by its members, each ticket by its comments. The summary ends
// an export.
const (
	TypeOrg        = "org"
	TypeUser       = "user"
	TypeTeam       = "team"
	TypeTeamMember = "teamMember"
	TypeTicket     = "ticket"
	TypeComment    = "comment"
	TypeInvitation = "invitation"
	TypeWebhook    = "webhook"
	TypeAuditEvent = "auditEvent"
	TypeSummary    = "summary"
)

// Types are the types of the objects an export sends, in the order of
// Counts.
var Types = [...]string{TypeOrg, TypeUser, TypeTeam, TypeTeamMember, TypeTicket, TypeComment, TypeInvitation, TypeWebhook, TypeAuditEvent}

// Counts is how many objects of each of Types an export has sent.
type Counts [len(Types)]int64

// Storer is what an export reads: the listings of the org's own partitions
// and indexes, one page a call (the store's). Each returns, beside a
// page's items, the position after each of them (page.Result.After).
type Storer interface {
	ListOrgUsers(ctx context.Context, orgID string, p page.Request) (page.Result[tenant.User], error)
	ListTeams(ctx context.Context, orgID string, p page.Request) (page.Result[membership.Team], error)
	ListTeamMembers(ctx context.Context, orgID, teamID string, p page.Request) (page.Result[membership.Membership], error)
	ListTickets(ctx context.Context, orgID string, f ticket.Filter, p page.Request) (page.Result[ticket.Ticket], error)
	ListComments(ctx context.Context, orgID, ticketID string, p page.Request) (page.Result[ticket.Comment], error)
	// ListInvitations leaves out the invitations expired at now.
	ListInvitations(ctx context.Context, orgID string, now time.Time, p page.Request) (page.Result[invitation.Invitation], error)
	ListWebhooks(ctx context.Context, orgID string, p page.Request) (page.Result[webhook.Subscription], error)
	ListAuditEvents(ctx context.Context, q audit.Query) (page.Result[audit.Event], error)
}

// Record is one object of an export: Value is a tenant.Org, tenant.User,
// membership.Team, membership.Membership, ticket.Ticket, ticket.Comment,
// invitation.Invitation, webhook.Subscription, audit.Event or, last,
// Summary.
type Record struct {
	Type  string
	Value any
	// After is the position right after this record.
	After Position
}

// Summary ends an export: how many objects of each type it sent (those of
// the exports it resumed included), and its audit position.
type Summary struct {
	Counts Counts
	Audit  time.Time
}

// Sink takes an export as it is read.
type Sink interface {
	// Read is called before each page is read: the export waits for it
	// (the sink sends what it has, paces the reads) and ends with its
	// error.
	Read(ctx context.Context) error
	// Write takes the next record.
	Write(Record) error
}

// Service exports orgs.
type Service struct {
	store Storer
	now   clock.Clock
}

// NewService returns a Service over s; now may be nil for the system clock.
func NewService(s Storer, now clock.Clock) *Service { return &Service{store: s, now: clock.Or(now)} }

// Export is one export, authorized and ready to run (once); pos is the
// position after the last record written.
type Export struct {
	s    *Service
	org  tenant.Org
	pos  Position
	ctx  context.Context
	sink Sink
}

// ExportOrg authorizes p to export its org (owners only) and returns the
// export from its start, whose audit position is now less inFlight: the
// longest a change may take from its audit event's time to its commit (a
// request's deadline, and a margin).
func (s *Service) ExportOrg(p authz.Principal, org tenant.Org, inFlight time.Duration) (*Export, error) {
	if err := authz.Authorize(p, authz.OrgExport, authz.Facts{}); err != nil {
		return nil, err
	}
	return &Export{s: s, org: org, pos: Position{Audit: s.now().Add(-inFlight).Truncate(time.Millisecond)}}, nil
}

// Resume makes x go on right after the record whose position is at (a
// Position's String, which the caller got back signed): with that
// export's audit position and counts.
func (x *Export) Resume(at string) error {
	pos, err := parsePosition(at)
	if err != nil {
		return err
	}
	x.pos = pos
	return nil
}

// phases read the export in order; Position.Phase indexes them.
var phases = []func(*Export) error{(*Export).orgItem, (*Export).users, (*Export).teams, (*Export).tickets, (*Export).invitations, (*Export).webhooks, (*Export).auditEvents}

// Run reads the export into sink, from its position to its summary.
func (x *Export) Run(ctx context.Context, sink Sink) error {
	x.ctx, x.sink = ctx, sink
	for x.pos.Phase < len(phases) {
		phase := x.pos.Phase
		if err := phases[phase](x); err != nil {
			return err
		}
		x.pos = Position{Phase: phase + 1, Audit: x.pos.Audit, Counts: x.pos.Counts}
	}
	return sink.Write(Record{Type: TypeSummary, Value: Summary{Counts: x.pos.Counts, Audit: x.pos.Audit}, After: x.pos})
}

func (x *Export) write(typ string, v any) error {
	for i, t := range Types {
		if t == typ {
			x.pos.Counts[i]++
		}
	}
	return x.sink.Write(Record{Type: typ, Value: v, After: x.pos})
}

// pages reads a listing from after, page by page, and hands item each of
// its items with the position after it.
func pages[T any](x *Export, after string, list listing[T], item func(T, string) error) error {
	for {
		if err := x.sink.Read(x.ctx); err != nil {
			return err
		}
		res, err := list(x.ctx, page.Request{Limit: page.MaxLimit, After: after})
		if err != nil {
			return err
		}
		for i, v := range res.Items {
			if err := item(v, res.After[i]); err != nil {
				return err
			}
		}
		if res.Next == "" {
			return nil
		}
		after = res.Next
	}
}

// flat reads a listing without children: each item is a record of typ.
func flat[T any](x *Export, typ string, list listing[T]) error {
	return pages(x, x.pos.After, list, func(v T, after string) error {
		x.pos.After = after
		return x.write(typ, v)
	})
}

// listing is one page of a listing, from the position p.After.
type listing[T any] func(ctx context.Context, p page.Request) (page.Result[T], error)

// nested reads a listing of parents of typ (id names one), each followed
// by its children of childTyp (children lists a parent's), unless none says
// it has none; a position inside a parent's children goes on with them
// first.
func nested[P, C any](x *Export, typ, childTyp string, parents listing[P], id func(P) string, none func(P) bool, children func(parentID string) listing[C]) error {
	readChildren := func(parentID, after string) error {
		return pages(x, after, children(parentID), func(c C, after string) error {
			x.pos.Child = after
			return x.write(childTyp, c)
		})
	}
	if x.pos.Parent != "" {
		if err := readChildren(x.pos.Parent, x.pos.Child); err != nil {
			return err
		}
	}
	return pages(x, x.pos.After, parents, func(p P, after string) error {
		x.pos.After, x.pos.Parent, x.pos.Child = after, id(p), ""
		if err := x.write(typ, p); err != nil || none(p) {
			return err
		}
		return readChildren(id(p), "")
	})
}

// orgItem is the org as the request's authorization read found it; the
// position after it is the users' start.
func (x *Export) orgItem() error {
	x.pos.Phase = 1
	return x.write(TypeOrg, x.org)
}

func (x *Export) users() error {
	return flat(x, TypeUser, func(ctx context.Context, p page.Request) (page.Result[tenant.User], error) {
		return x.s.store.ListOrgUsers(ctx, x.org.ID, p)
	})
}

// teams come each with its members.
func (x *Export) teams() error {
	return nested(x, TypeTeam, TypeTeamMember, func(ctx context.Context, p page.Request) (page.Result[membership.Team], error) {
		return x.s.store.ListTeams(ctx, x.org.ID, p)
	}, func(t membership.Team) string { return t.ID }, func(membership.Team) bool { return false },
		func(teamID string) listing[membership.Membership] {
			return func(ctx context.Context, p page.Request) (page.Result[membership.Membership], error) {
				return x.s.store.ListTeamMembers(ctx, x.org.ID, teamID, p)
			}
		})
}

// tickets come oldest first (by ID, which never changes: a ticket created
// meanwhile comes last, none is skipped or sent twice), each with its
// comments; a ticket without comments costs no Query for them.
func (x *Export) tickets() error {
	return nested(x, TypeTicket, TypeComment, func(ctx context.Context, p page.Request) (page.Result[ticket.Ticket], error) {
		return x.s.store.ListTickets(ctx, x.org.ID, ticket.Filter{Oldest: true}, p)
	}, func(t ticket.Ticket) string { return t.ID }, func(t ticket.Ticket) bool { return t.CommentCount == 0 },
		func(ticketID string) listing[ticket.Comment] {
			return func(ctx context.Context, p page.Request) (page.Result[ticket.Comment], error) {
				return x.s.store.ListComments(ctx, x.org.ID, ticketID, p)
			}
		})
}

func (x *Export) invitations() error {
	now := x.s.now()
	return flat(x, TypeInvitation, func(ctx context.Context, p page.Request) (page.Result[invitation.Invitation], error) {
		return x.s.store.ListInvitations(ctx, x.org.ID, now, p)
	})
}

func (x *Export) webhooks() error {
	return flat(x, TypeWebhook, func(ctx context.Context, p page.Request) (page.Result[webhook.Subscription], error) {
		return x.s.store.ListWebhooks(ctx, x.org.ID, p)
	})
}

// auditEvents are the log before the audit position, newest first (as the
// audit log lists them); the log from the position on is the client's
// catch-up.
func (x *Export) auditEvents() error {
	since, until := x.org.CreatedAt.Truncate(time.Millisecond), x.pos.Audit.Add(-time.Millisecond)
	if until.Before(since) {
		return nil // the org is younger than the position: nothing before it
	}
	return flat(x, TypeAuditEvent, func(ctx context.Context, p page.Request) (page.Result[audit.Event], error) {
		return x.s.store.ListAuditEvents(ctx, audit.Query{OrgID: x.org.ID, Since: since, Until: until, Page: p})
	})
}

// Position is where an export stands: the phase it reads, the position
// after the last item of the phase's listing it sent (and, inside a team's
// members or a ticket's comments, that parent and the position after its
// last child sent), its audit position and what it sent so far.
type Position struct {
	Phase         int
	After         string
	Parent, Child string
	Audit         time.Time
	Counts        Counts
}

// String renders p for a cursor: fields that are store positions
// (base64url), IDs and numbers, separated by "|".
func (p Position) String() string {
	counts := make([]string, len(p.Counts))
	for i, n := range p.Counts {
		counts[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join([]string{"1", strconv.Itoa(p.Phase), p.After, p.Parent, p.Child,
		strconv.FormatInt(p.Audit.UnixMilli(), 10), strings.Join(counts, ",")}, "|")
}

var errPosition = fmt.Errorf("export: malformed position")

// parsePosition reads a Position's String. The store checks its store
// positions when it reads from them.
func parsePosition(s string) (Position, error) {
	f := strings.Split(s, "|")
	if len(f) != 7 || f[0] != "1" {
		return Position{}, errPosition
	}
	phase, err := strconv.Atoi(f[1])
	if err != nil || phase < 0 || phase > len(phases) || (f[3] != "" && !ids.ValidResource(f[3])) {
		return Position{}, errPosition
	}
	ms, err := strconv.ParseInt(f[5], 10, 64)
	if err != nil || ms <= 0 {
		return Position{}, errPosition
	}
	p := Position{Phase: phase, After: f[2], Parent: f[3], Child: f[4], Audit: time.UnixMilli(ms).UTC()}
	counts := strings.Split(f[6], ",")
	if len(counts) != len(p.Counts) {
		return Position{}, errPosition
	}
	for i, c := range counts {
		if p.Counts[i], err = strconv.ParseInt(c, 10, 64); err != nil || p.Counts[i] < 0 {
			return Position{}, errPosition
		}
	}
	return p, nil
}
