// Package org holds organizations (the tenants of tenantd) and the users
// that belong to them, each user's membership of an org carrying their org
// role: the types, the rules that keep them valid, and the Service the HTTP
// layer calls. An org's offboarding (its deletion) lives here too.
package tenant

import (
	"context"
	"strings"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/deletion"
	"github.com/tenantd/tenantd/internal/page"
)

// Org is a tenant.
type Org struct {
	ID        string
	Name      string
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// User is an identity's membership in one org: the role lives on this edge,
// so the same person can be an owner in one org and a member in another.
type User struct {
	OrgID     string
	UserID    string
	Email     string
	Name      string
	Role      authz.Role
	JoinedAt  time.Time
	UpdatedAt time.Time
	Version   int64
	// AddedBy is the ID the idempotent request that added the user gave it
	// (idempotency.Record.ResourceID), if any: a retry of that request
	// finds the user it added instead of answering user_exists.
	AddedBy string
}

// Membership is one of a user's orgs, as "my orgs" lists them (the API's
// OrgMembership).
type Membership struct {
	OrgID    string
	Name     string // the org's
	UserName string // the user's name in the org
	Role     authz.Role
	JoinedAt time.Time
}

// Limits of text fields.
const (
	MaxNameLen  = 200
	MaxEmailLen = 254
)

// NormalizeEmail is the form an email is compared and claimed in.
//
// Only ASCII letters are folded: strings.ToLower would also turn other
// characters into ASCII ones (the Kelvin sign U+212A into "k"), so that
// "\u212aate@example.com" would pass for kate@example.com.
func NormalizeEmail(s string) string {
	b := []byte(strings.TrimSpace(s))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Storer is what the org service needs from persistence. Every write takes
// the audit event of the change, written in the same transaction.
type Storer interface {
	// CreateOrg writes the org, its owner and the owner's email claim
	// atomically. Returns Conflict if the org ID is taken.
	CreateOrg(ctx context.Context, o Org, owner User, ev audit.Event) error
	// GetOrg returns NotFound if the org does not exist (or is being
	// offboarded).
	GetOrg(ctx context.Context, orgID string) (Org, error)
	// GetOrgWithUsers reads the org and up to limit of its users in one
	// Query. Returns NotFound if the org does not exist.
	GetOrgWithUsers(ctx context.Context, orgID string, limit int) (Org, []User, error)
	// UpdateOrg replaces the org's mutable fields if its version is still
	// prev.Version. Returns NotFound or PreconditionFailed.
	UpdateOrg(ctx context.Context, prev, next Org, ev audit.Event) error
	// ListOrgs pages through the orgs userID belongs to, without their
	// names (Membership.Name is empty).
	ListOrgs(ctx context.Context, userID string, p page.Request) (page.Result[Membership], error)
	// BatchGetOrgs reads many orgs; absent ones (and ones being
	// offboarded) are left out.
	BatchGetOrgs(ctx context.Context, orgIDs []string) (map[string]Org, error)

	// GetOrgUser returns NotFound if the user is not in the org.
	GetOrgUser(ctx context.Context, orgID, userID string) (User, error)
	// ListOrgUsers pages through an org's users, ordered by user ID.
	ListOrgUsers(ctx context.Context, orgID string, p page.Request) (page.Result[User], error)
	// BatchGetOrgUsers reads many of an org's users with BatchGetItem (100
	// keys a call); users not in the org are left out.
	BatchGetOrgUsers(ctx context.Context, orgID string, userIDs []string) (map[string]User, error)
	// AddOrgUser writes the user and their email claim atomically. Returns
	// NotFound if the org does not exist or is being offboarded, Conflict
	// (code user_exists or email_taken) if either clashes.
	AddOrgUser(ctx context.Context, u User, ev audit.Event) error
	// UpdateOrgUser replaces prev by next if prev.Version is current,
	// swapping the email claim and the org's owner count as needed. Returns
	// NotFound, PreconditionFailed, Conflict (email_taken, last_owner).
	UpdateOrgUser(ctx context.Context, prev, next User, ev audit.Event) error
	// RemoveOrgUser deletes the user, their claim and their team
	// memberships in the org (with the teams' counts). Returns NotFound,
	// PreconditionFailed or Conflict (last_owner, last_team_owner). A team
	// that no longer exists never blocks it.
	RemoveOrgUser(ctx context.Context, u User, ev audit.Event) error

	// StartOffboarding marks the org as being offboarded by actorID (an
	// owner, who alone keeps access, to repeat the DELETE or read its
	// progress) and takes the job's lease for owner: from then on every
	// other member gets 404, no user can join, and no member's write
	// commits. On an org already being offboarded it returns that job, with
	// started true only if its lease had expired and owner took it over.
	// Returns NotFound, PreconditionFailed (ifVersion > 0).
	StartOffboarding(ctx context.Context, orgID, actorID string, ifVersion int64, owner string, now time.Time) (j deletion.Job, started bool, err error)
	// CutOff deletes every member's edge but the actor's, if owner's run
	// has not done it yet. Returns Conflict (lease_lost).
	CutOff(ctx context.Context, orgID, owner string) error
	// ReleaseOffboarding gives up owner's lease on the offboarding.
	ReleaseOffboarding(ctx context.Context, orgID, owner string) error
	// GetOffboarding reads an org's offboarding. Returns NotFound
	// (offboarding_not_found) if the org is not being offboarded.
	GetOffboarding(ctx context.Context, orgID string) (deletion.Job, error)
}
