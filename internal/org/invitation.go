package org

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/page"
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
	DefaultInvitationDays = 7
	MaxInvitationDays     = 30
	MaxInvitationTeams    = 20
)

// InvitationStorer is what invitations need from persistence.
type InvitationStorer interface {
	// CreateInvitation writes inv, replacing a pending invitation for the
	// same email. Returns NotFound (org_not_found) or Conflict
	// (email_taken, team_not_found).
	CreateInvitation(ctx context.Context, inv Invitation) error
	// GetInvitation reads one invitation consistently. Returns NotFound.
	GetInvitation(ctx context.Context, orgID, invitationID string) (Invitation, error)
	// ListInvitations pages through the org's invitations, oldest first,
	// leaving out those expired at now.
	ListInvitations(ctx context.Context, orgID string, now time.Time, p page.Request) (page.Result[Invitation], error)
	// RevokeInvitation deletes a pending invitation, as read by
	// GetInvitation. Returns NotFound if it is gone.
	RevokeInvitation(ctx context.Context, inv Invitation) error
	// AcceptInvitation turns inv into u (and memberships of the teams that
	// still exist) in one transaction that consumes inv, so it succeeds
	// once. Returns the teams joined; NotFound (invitation_not_found) if
	// inv is gone, expired at u.JoinedAt or its token changed; Conflict
	// (user_exists, email_taken).
	AcceptInvitation(ctx context.Context, inv Invitation, u User) ([]string, error)
}

// NewInvitation is what an admin supplies.
type NewInvitation struct {
	Email         string
	Role          authz.Role
	TeamIDs       []string
	ExpiresInDays int // 0 = default
}

var errInvitation = errs.E(errs.NotFound, "invitation_not_found", "no pending invitation matches this token")

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
		return "", "", errInvitation
	}
	return parts[0], parts[1], nil
}

// CreateInvitation invites in.Email (admin+; an owner to invite an owner)
// and returns the invitation and its one-time token.
func (s *Service) CreateInvitation(ctx context.Context, p authz.Principal, in NewInvitation) (Invitation, string, error) {
	g, err := authz.Permit(p, authz.InvitationManage, authz.Facts{OwnerRole: in.Role == authz.Owner})
	if err != nil {
		return Invitation{}, "", err
	}
	if s.invitations == nil {
		return Invitation{}, "", errs.E(errs.Internal, "no_invitations", "invitations are not configured")
	}
	if err := validate.Email("email", in.Email, MaxEmailLen); err != nil {
		return Invitation{}, "", err
	}
	if !in.Role.Valid() {
		return Invitation{}, "", errs.InvalidField("role", "invalid_role", "must be one of owner, admin, member")
	}
	if in.ExpiresInDays == 0 {
		in.ExpiresInDays = DefaultInvitationDays
	}
	if in.ExpiresInDays < 1 || in.ExpiresInDays > MaxInvitationDays {
		return Invitation{}, "", errs.InvalidField("expiresInDays", "invalid_expiry", "must be between 1 and %d", MaxInvitationDays)
	}
	if len(in.TeamIDs) > MaxInvitationTeams {
		return Invitation{}, "", errs.InvalidField("teamIds", "too_many_teams", "at most %d teams", MaxInvitationTeams)
	}
	var teams []string
	for _, t := range in.TeamIDs {
		if err := ids.Resource("teamIds", t); err != nil {
			return Invitation{}, "", err
		}
		if !containsStr(teams, t) {
			teams = append(teams, t)
		}
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return Invitation{}, "", err
	}
	// Whole seconds, as the TTL attribute stores the expiry: the lifetime
	// is then exactly the days asked for. (The audit event keeps the
	// precise time, which orders it among the others.)
	at := s.now()
	now := at.Truncate(time.Second)
	inv := Invitation{OrgID: p.OrgID, ID: s.ids.New(), Email: in.Email, Role: in.Role, TeamIDs: teams, InvitedBy: p.UserID,
		CreatedAt: now, ExpiresAt: now.Add(time.Duration(in.ExpiresInDays) * 24 * time.Hour)}
	token := inv.OrgID + "." + inv.ID + "." + base64.RawURLEncoding.EncodeToString(secret)
	inv.TokenHash = HashToken(token)
	ctx = s.event(ctx, p, g, "invitation.create", "invitation", inv.ID, at, audit.Diff(
		audit.F("email", nil, inv.Email), audit.F("role", nil, string(inv.Role)), audit.F("teamIds", nil, inv.TeamIDs)))
	if err := s.invitations.CreateInvitation(ctx, inv); err != nil {
		return Invitation{}, "", err
	}
	return inv, token, nil
}

func containsStr(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ListInvitations pages through pending invitations (admin+).
func (s *Service) ListInvitations(ctx context.Context, p authz.Principal, pr page.Request) (page.Result[Invitation], error) {
	if err := authz.Authorize(p, authz.InvitationManage, authz.Facts{}); err != nil {
		return page.Result[Invitation]{}, err
	}
	return s.invitations.ListInvitations(ctx, p.OrgID, s.now(), pr)
}

// RevokeInvitation deletes a pending invitation (admin+).
func (s *Service) RevokeInvitation(ctx context.Context, p authz.Principal, invitationID string) error {
	g, err := authz.Permit(p, authz.InvitationManage, authz.Facts{})
	if err != nil {
		return err
	}
	if err := ids.Resource("invitationId", invitationID); err != nil {
		return err
	}
	inv, err := s.invitations.GetInvitation(ctx, p.OrgID, invitationID)
	if err != nil {
		return err
	}
	ctx = s.event(ctx, p, g, "invitation.revoke", "invitation", invitationID, s.now(), audit.Diff(
		audit.F("email", inv.Email, nil), audit.F("role", string(inv.Role), nil)))
	return s.invitations.RevokeInvitation(ctx, inv)
}

// AcceptInvitation adds the caller to the invitation's org and teams. Any
// failure to match the token (unknown, expired, revoked, replaced, already
// used) is the same 404.
func (s *Service) AcceptInvitation(ctx context.Context, id authz.Identity, token string) (User, []string, error) {
	orgID, invID, err := parseToken(token)
	if err != nil {
		return User{}, nil, err
	}
	inv, err := s.invitations.GetInvitation(ctx, orgID, invID)
	if errs.Is(err, errs.NotFound) {
		return User{}, nil, errInvitation
	}
	if err != nil {
		return User{}, nil, err
	}
	now := s.now()
	if inv.TokenHash != HashToken(token) || !now.Before(inv.ExpiresAt) {
		return User{}, nil, errInvitation
	}
	// An invitation is for its email: a token forwarded to, or stolen by,
	// someone else is worth nothing to them.
	if !s.AnyEmailAccepts && NormalizeEmail(id.Email) != NormalizeEmail(inv.Email) {
		return User{}, nil, errs.E(errs.Forbidden, "invitation_email_mismatch",
			"this invitation is for another email address than your token's")
	}
	name := id.Name
	if name == "" {
		name = id.UserID
	}
	u := User{OrgID: orgID, UserID: id.UserID, Email: inv.Email, Name: name, Role: inv.Role, JoinedAt: now, UpdatedAt: now, Version: 1}
	if err := validateUser(u); err != nil {
		return User{}, nil, err
	}
	ctx = s.event(ctx, authz.Principal{Identity: id, OrgID: orgID}, authz.Grant{}, "invitation.accept", "user", id.UserID, now, audit.Diff(
		audit.F("invitationId", nil, inv.ID), audit.F("email", nil, u.Email), audit.F("role", nil, string(u.Role))))
	teams, err := s.invitations.AcceptInvitation(ctx, inv, u)
	if err != nil {
		return User{}, nil, err
	}
	return u, teams, nil
}
