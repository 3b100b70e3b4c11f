// Package access is the authorization read and its decision, between the
// domain and the transports: before anything else, a request in an org
// reads, in one consistent BatchGetItem (Reader, which the store
// implements), the org item, the caller's OrgUser edge and the item its
// route names (Target), and Decide turns what it found into the request's
// Decision: the caller's principal and the loaded target, handed to the
// service, or the 404 of a stranger or of a missing target. Both transports
// make this read and this decision (REST in its middleware, GraphQL once
// per org per request); neither reads the store for it.
package access

import (
	"context"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
)

// Kind is the kind of item a Target names.
type Kind int

// The kinds of target.
const (
	None   Kind = iota // no item beyond the org and the caller's edge
	Org                // the org item itself
	User               // the org's user UserID (their OrgUser edge)
	Team               // the team TeamID
	Member             // UserID's edge under the team TeamID
	Ticket             // the ticket TicketID
)

// Target is the one item a route names, read beside the caller's edge.
type Target struct {
	Kind                     Kind
	TeamID, UserID, TicketID string
	// Optional: a missing item is no error (a PUT that creates it).
	Optional bool
	// TeamRole also reads the caller's edge of the target's team, for a
	// team-scoped write whose rule may need their team role.
	TeamRole bool
}

// Found is what the authorization read found.
type Found struct {
	authz.Access
	// Org is the org item, when the caller has an edge in it.
	Org *tenant.Org
	// The target's item, in the field of its kind; nil when it is missing
	// (or being deleted) and Missing says so.
	User   *tenant.User
	Team   *membership.Team
	Member *membership.Membership
	Ticket *ticket.Ticket
	// Missing is the target's not-found error, or the error of an ID that
	// may not reach a key (then nothing of the target was read).
	Missing error
	// TeamRole is the caller's role on the target's team, when
	// Target.TeamRole asked for it ("": no edge).
	TeamRole authz.Role
}

// Reader makes the authorization read.
type Reader interface {
	// OrgAccess reads the org item, the caller's OrgUser edge and what t
	// names with ONE consistent BatchGetItem. A caller with no edge, or
	// an org with no item, gets a Found with no role and nothing else
	// decoded. The error is the read's (DynamoDB unavailable, say), or an
	// orgID or userID that may not reach a key.
	OrgAccess(ctx context.Context, orgID, userID string, t Target) (Found, error)
}

// Decision is a request's authorization in its org, decided once before
// the handler runs: the principal and what the read found of its target.
type Decision struct {
	authz.Principal
	Found
}

// Decide is the decision on id acting in orgID from what the read found
// of t: authz.Admit's, then a missing target's 404 (or its ID's 400), so
// that a stranger learns nothing and a member's request for a missing item
// costs the one read. offboarding: the request follows the org's
// offboarding (authz.Admit).
func Decide(id authz.Identity, orgID string, t Target, f Found, offboarding bool) (Decision, error) {
	p, err := authz.Admit(id, orgID, f.Access, offboarding)
	if err != nil {
		return Decision{}, err
	}
	if f.Missing != nil && !(t.Optional && errs.Is(f.Missing, errs.NotFound)) {
		return Decision{}, f.Missing
	}
	if t.TeamRole {
		p.Team = &authz.TeamRole{TeamID: t.TeamID, Role: f.TeamRole}
	}
	return Decision{Principal: p, Found: f}, nil
}

type decisionKey struct{}

// WithDecision stores d in ctx.
func WithDecision(ctx context.Context, d Decision) context.Context {
	return context.WithValue(ctx, decisionKey{}, d)
}

// Decided is the decision WithDecision stored in ctx.
func Decided(ctx context.Context) (Decision, bool) {
	d, ok := ctx.Value(decisionKey{}).(Decision)
	return d, ok
}
