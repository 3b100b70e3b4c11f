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
	"crypto/subtle"
	"time"

	"github.com/tenantd/tenantd/internal/apikey"
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
	APIKey             // the org's API key KeyID
)

// Target is the one item a route names, read beside the caller's edge.
type Target struct {
	Kind                            Kind
	TeamID, UserID, TicketID, KeyID string
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
	APIKey *apikey.Key
	// Missing is the target's not-found error, or the error of an ID that
	// may not reach a key (then nothing of the target was read).
	Missing error
	// TeamRole is the caller's role on the target's team, when
	// Target.TeamRole asked for it ("": no edge).
	TeamRole authz.Role
	// CallerKey is the calling API key as stored (its role is Role), when
	// the caller is one and it exists in the org.
	CallerKey *apikey.Key
}

// Reader makes the authorization read.
type Reader interface {
	// OrgAccess reads the org item, the caller's OrgUser edge (or, for
	// an API key's actor, the key) and what t names with ONE consistent
	// BatchGetItem. A caller with no edge, or an org with no item, gets a
	// Found with no role and nothing else decoded. The error is the read's (DynamoDB unavailable, say), or an
	// orgID or userID that may not reach a key.
	OrgAccess(ctx context.Context, orgID, userID string, t Target) (Found, error)
}

// Decision is a request's authorization in its org, decided once before
// the handler runs: the principal and what the read found of its target.
type Decision struct {
	authz.Principal
	Found
}

// Elsewhere reports whether id is an API key outside its own org, orgID:
// a stranger there, refused (authz.ErrOrgNotFound) without a read.
func Elsewhere(id authz.Identity, orgID string) bool { return id.Key != nil && id.Key.OrgID != orgID }

// Authorize makes the authorization read of id acting in orgID (read: the
// Reader's OrgAccess of t, as the transport calls it) and decides it with
// Decide. An API key the read verifies has its use recorded (keys, which
// may be nil: apikey.Recent.Verified). A key's token reaches the read only
// with the server key's MAC (apikey.Service.ParseToken): one the service
// minted, so its reads are bounded by real keys and their callers' budget.
func Authorize(id authz.Identity, orgID string, t Target, offboarding bool, now time.Time, keys *apikey.Recent, read func() (Found, error)) (Decision, error) {
	if Elsewhere(id, orgID) {
		return Decision{}, authz.ErrOrgNotFound // no read
	}
	f, err := read()
	if err != nil {
		return Decision{}, err
	}
	d, err := Decide(id, orgID, t, f, offboarding, now)
	switch {
	case err == nil && d.CallerKey != nil:
		keys.Verified(*d.CallerKey, now)
	case id.Key != nil && (f.CallerKey == nil || err == errKeyExpired):
		keys.Refused(*id.Key) // final: its next tokens are refused before the read (apikey.Recent.Gone)
	}
	return d, err
}

// Decide is the decision on id acting in orgID from what the read found
// of t: an API key's own checks first (checkKey), then authz.Admit's, then
// a missing target's 404 (or its ID's 400), so that a stranger learns
// nothing and a member's request for a missing item costs the one read.
// offboarding: the request follows the org's offboarding (authz.Admit).
func Decide(id authz.Identity, orgID string, t Target, f Found, offboarding bool, now time.Time) (Decision, error) {
	if id.Key != nil {
		if err := checkKey(*id.Key, orgID, f, now); err != nil {
			return Decision{}, err
		}
	}
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

// errKeyExpired refuses an expired API key. A missing key or a wrong
// secret is authz.ErrKeyRevoked; a key of another org is a stranger there
// (authz.ErrOrgNotFound), like a person who is not a member.
var errKeyExpired = errs.E(errs.Unauthenticated, "api_key_expired", "the API key has expired")

// checkKey decides an API key's bearer in orgID: a stranger outside the
// key's org; in it, the key must exist, its stored hash equal the token's
// (compared in constant time, so a wrong secret costs what a right one
// does: the same one read, the same compare) and not have expired.
func checkKey(k authz.APIKey, orgID string, f Found, now time.Time) error {
	switch {
	case k.OrgID != orgID:
		return authz.ErrOrgNotFound
	case f.CallerKey == nil:
		return authz.ErrKeyRevoked
	case subtle.ConstantTimeCompare(f.CallerKey.Hash[:], k.Hash[:]) != 1:
		return authz.ErrKeyRevoked
	case !f.CallerKey.ExpiresAt.IsZero() && !now.Before(f.CallerKey.ExpiresAt):
		return errKeyExpired
	}
	return nil
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
