// Package invitation invites people, by email, to join an org (and some of
// its teams) with a role: the one-time token, its expiry, its binding to the
// invited email, and the Service the HTTP layer calls.
package invitation

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/clock"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/validate"
)

// Invitation asks someone, by email, to join an org (and some of its teams).
// Only a hash of its one-time token is stored.
type Invitation struct {
	OrgID     string
	ID        string
	Email     string
	Role      authz.Role
	TeamIDs   []string
	InvitedBy string
	TokenHash string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Limits of invitations.
const (
	DefaultDays = 7
	MaxDays     = 30
	MaxTeams    = 20
)

// Storer is what invitations need from persistence. Every write takes the
// audit event of the change, written in the same transaction.
type Storer interface {
	// CreateInvitation writes inv, replacing a pending invitation for the
	// same email, whose ID it returns ("" if none). Returns NotFound
	// (org_not_found) or Conflict (email_taken, team_not_found).
	CreateInvitation(ctx context.Context, inv Invitation, ev audit.Event) (replaced string, err error)
	// GetInvitation reads one invitation consistently. Returns NotFound.
	GetInvitation(ctx context.Context, orgID, invitationID string) (Invitation, error)
	// ListInvitations pages through the org's invitations, oldest first,
	// leaving out those expired at now.
	ListInvitations(ctx context.Context, orgID string, now time.Time, p page.Request) (page.Result[Invitation], error)
	// RevokeInvitation deletes a pending invitation, as read by
	// GetInvitation. Returns NotFound if it is gone.
	RevokeInvitation(ctx context.Context, inv Invitation, ev audit.Event) error
	// AcceptInvitation turns inv into u (and memberships of the teams that
	// still exist) in one transaction that consumes inv, so it succeeds
	// once. Returns the teams joined; NotFound (invitation_not_found) if
	// inv is gone, expired at u.JoinedAt or its token changed; Conflict
	// (user_exists, email_taken).
	AcceptInvitation(ctx context.Context, inv Invitation, u tenant.User, ev audit.Event) ([]string, error)
	// GetAcceptedInvitation reads the membership userID got by accepting
	// the invitation of orgID whose token hashes to tokenHash, and their
	// teams in the org now. Returns NotFound unless they joined by it.
	GetAcceptedInvitation(ctx context.Context, orgID, userID, tokenHash string) (tenant.User, []string, error)
}

// New is what an admin supplies.
type New struct {
	Email         string
	Role          authz.Role
	TeamIDs       []string
	ExpiresInDays int // 0 = default
}

var errNotFound = errs.E(errs.NotFound, "invitation_not_found", "no pending invitation matches this token")

// HashToken is how a token is stored and compared.
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// parseToken splits "<orgId>.<invitationId>.<secret>" and validates the IDs
// before they get anywhere near a key.
func parseToken(token string) (orgID, invitationID string, err error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || !ids.ValidResource(parts[0]) || !ids.ValidResource(parts[1]) || len(parts[2]) < 32 {
		return "", "", errNotFound
	}
	return parts[0], parts[1], nil
}

// Service applies the rules of invitations on top of a Storer.
type Service struct {
	store Storer
	ids   *ids.Generator
	now   clock.Clock
	// anyEmail lets a caller accept an invitation whatever the email in
	// their token (by default the token's email must be the invited one).
	anyEmail bool
}

// NewService returns a Service; now may be nil for the system clock. With
// anyEmail, an invitation is not bound to its email.
func NewService(s Storer, anyEmail bool, now clock.Clock) *Service {
	now = clock.Or(now)
	return &Service{store: s, ids: ids.NewGenerator(now), now: now, anyEmail: anyEmail}
}

// CreateInvitation invites in.Email (admin+; an owner to invite an owner)
// and returns the invitation, its one-time token and the ID of the pending
// invitation for the same email it replaced, if any, whose token no longer
// works: the caller is told, never silently.
func (s *Service) CreateInvitation(ctx context.Context, p authz.Principal, in New) (inv Invitation, token, replaced string, err error) {
	g, err := authz.Permit(p, authz.InvitationManage, authz.Facts{OwnerRole: in.Role == authz.Owner})
	if err != nil {
		return Invitation{}, "", "", err
	}
	if err := validate.Email("email", in.Email, tenant.MaxEmailLen); err != nil {
		return Invitation{}, "", "", err
	}
	if err := in.Role.Check("role"); err != nil {
		return Invitation{}, "", "", err
	}
	in.ExpiresInDays = cmp.Or(in.ExpiresInDays, DefaultDays)
	if in.ExpiresInDays < 1 || in.ExpiresInDays > MaxDays {
		return Invitation{}, "", "", errs.InvalidField("expiresInDays", "invalid_expiry", "must be between 1 and %d", MaxDays)
	}
	if len(in.TeamIDs) > MaxTeams {
		return Invitation{}, "", "", errs.InvalidField("teamIds", "too_many_teams", "at most %d teams", MaxTeams)
	}
	var teams []string // without repeats, in order
	for _, t := range in.TeamIDs {
		if !slices.Contains(teams, t) {
			teams = append(teams, t)
		}
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return Invitation{}, "", "", err
	}
	// Whole seconds, as the TTL attribute stores the expiry: the lifetime
	// is then exactly the days asked for (the audit event keeps the precise
	// time, which orders it among the others).
	at := s.now()
	now := at.Truncate(time.Second)
	inv = Invitation{OrgID: p.OrgID, ID: s.ids.New(), Email: in.Email, Role: in.Role, TeamIDs: teams, InvitedBy: p.UserID,
		CreatedAt: now, ExpiresAt: now.Add(time.Duration(in.ExpiresInDays) * 24 * time.Hour)}
	token = inv.OrgID + "." + inv.ID + "." + base64.RawURLEncoding.EncodeToString(secret)
	inv.TokenHash = HashToken(token)
	ev := audit.NewEvent(ctx, s.ids, audit.By(p, g), "invitation.create", "invitation", inv.ID, at, audit.Diff(
		audit.F("email", nil, inv.Email), audit.F("role", nil, string(inv.Role)), audit.F("teamIds", nil, inv.TeamIDs),
		audit.F("expiresAt", nil, inv.ExpiresAt.UTC().Format(time.RFC3339))))
	if replaced, err = s.store.CreateInvitation(ctx, inv, ev); err != nil {
		return Invitation{}, "", "", err
	}
	return inv, token, replaced, nil
}

// ListInvitations pages through pending invitations (admin+).
func (s *Service) ListInvitations(ctx context.Context, p authz.Principal, pr page.Request) (page.Result[Invitation], error) {
	if err := authz.Authorize(p, authz.InvitationManage, authz.Facts{}); err != nil {
		return page.Result[Invitation]{}, err
	}
	return s.store.ListInvitations(ctx, p.OrgID, s.now(), pr)
}

// RevokeInvitation deletes a pending invitation (admin+).
func (s *Service) RevokeInvitation(ctx context.Context, p authz.Principal, invitationID string) error {
	g, err := authz.Permit(p, authz.InvitationManage, authz.Facts{})
	if err != nil {
		return err
	}
	inv, err := s.store.GetInvitation(ctx, p.OrgID, invitationID)
	if err != nil {
		return err
	}
	ev := audit.NewEvent(ctx, s.ids, audit.By(p, g), "invitation.revoke", "invitation", invitationID, s.now(), audit.Diff(
		audit.F("email", inv.Email, nil), audit.F("role", string(inv.Role), nil)))
	return s.store.RevokeInvitation(ctx, inv, ev)
}

// AcceptInvitation adds the caller to the invitation's org and teams. Any
// failure to match the token (unknown, expired, revoked, replaced, used by
// someone else) is the same 404. A retry by the user who accepted finds the
// invitation used and answers their membership as it is now, with again set.
func (s *Service) AcceptInvitation(ctx context.Context, id authz.Identity, token string) (u tenant.User, teams []string, again bool, err error) {
	orgID, invID, err := parseToken(token)
	if err != nil {
		return tenant.User{}, nil, false, err
	}
	inv, err := s.store.GetInvitation(ctx, orgID, invID)
	if errs.Is(err, errs.NotFound) {
		return s.accepted(ctx, id, orgID, token)
	}
	if err != nil {
		return tenant.User{}, nil, false, err
	}
	now := s.now()
	if inv.TokenHash != HashToken(token) || !now.Before(inv.ExpiresAt) {
		return tenant.User{}, nil, false, errNotFound
	}
	// An invitation is for its email: a token forwarded to, or stolen by,
	// someone else is worth nothing to them.
	if !s.anyEmail && id.EmailUnverified {
		return tenant.User{}, nil, false, errs.E(errs.Forbidden, "invitation_email_unverified",
			"your token says its email is not verified (email_verified: false): it cannot accept an invitation")
	}
	if !s.anyEmail && tenant.NormalizeEmail(id.Email) != tenant.NormalizeEmail(inv.Email) {
		return tenant.User{}, nil, false, errs.E(errs.Forbidden, "invitation_email_mismatch",
			"this invitation is for another email address than your token's")
	}
	u = tenant.User{OrgID: orgID, UserID: id.UserID, Email: inv.Email, Name: cmp.Or(id.Name, id.UserID), Role: inv.Role,
		JoinedAt: now, UpdatedAt: now, Version: 1}
	if err := tenant.Validate(u); err != nil {
		return tenant.User{}, nil, false, err
	}
	ev := audit.NewEvent(ctx, s.ids, audit.Outsider(orgID, id.UserID), "invitation.accept", "user", id.UserID, now, audit.Diff(
		audit.F("invitationId", nil, inv.ID), audit.F("email", nil, u.Email), audit.F("name", nil, u.Name), audit.F("role", nil, string(u.Role))))
	teams, err = s.store.AcceptInvitation(ctx, inv, u, ev)
	if errs.CodeOf(err) == "invitation_not_found" { // used meanwhile: by a retry of ours?
		return s.accepted(ctx, id, orgID, token)
	}
	if err != nil {
		return tenant.User{}, nil, false, err
	}
	return u, teams, false, nil
}

// accepted answers a token whose invitation is gone: the caller's
// membership if they joined with it, otherwise the 404 of any token that
// matches nothing.
func (s *Service) accepted(ctx context.Context, id authz.Identity, orgID, token string) (tenant.User, []string, bool, error) {
	u, teams, err := s.store.GetAcceptedInvitation(ctx, orgID, id.UserID, HashToken(token))
	if errs.Is(err, errs.NotFound) {
		return tenant.User{}, nil, false, errNotFound
	}
	if err != nil {
		return tenant.User{}, nil, false, err
	}
	return u, teams, true, nil
}
