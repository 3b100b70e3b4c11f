package store

import (
	"context"
	"fmt"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/invitation"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
)

// Invitations stores invitations, each in its own partition, and a pointer
// from its email, so a new invitation for an email replaces the pending one.
type Invitations struct{ *DB }

var _ invitation.Storer = (*Invitations)(nil)

var (
	errInvitationNotFound = errs.E(errs.NotFound, "invitation_not_found", "no pending invitation matches")
	errInvitationRace     = errs.E(errs.Conflict, "invitation_conflict", "another invitation for this email was created at the same time; retry")
)

type invitationItem struct {
	PK        string    `dynamo:"pk,hash"`
	SK        string    `dynamo:"sk,range"`
	Type      string    `dynamo:"type"`
	GSI1PK    string    `dynamo:"gsi1pk"` // ORG#<orgId>: pending invitations, and found by offboarding
	GSI1SK    string    `dynamo:"gsi1sk"` // INVITE#<invitationId>
	OrgID     string    `dynamo:"orgId"`
	ID        string    `dynamo:"invitationId"`
	Email     string    `dynamo:"email"`
	Role      string    `dynamo:"role"`
	TeamIDs   []string  `dynamo:"teamIds"`
	InvitedBy string    `dynamo:"invitedBy"`
	TokenHash string    `dynamo:"tokenHash"`
	CreatedAt time.Time `dynamo:"createdAt"`
	ExpiresAt int64     `dynamo:"expiresAt"` // TTL attribute, epoch seconds
}

type invitationEmailItem struct {
	PK           string `dynamo:"pk,hash"`
	SK           string `dynamo:"sk,range"`
	Type         string `dynamo:"type"`
	GSI1PK       string `dynamo:"gsi1pk"` // ORG#<orgId>, so offboarding finds it
	GSI1SK       string `dynamo:"gsi1sk"` // EMAILINVITE#<email>
	OrgID        string `dynamo:"orgId"`
	InvitationID string `dynamo:"invitationId"`
	ExpiresAt    int64  `dynamo:"expiresAt"`
}

func toInvitationItem(inv invitation.Invitation) invitationItem {
	k := invitationKey(inv.OrgID, inv.ID)
	return invitationItem{PK: k.PK, SK: k.SK, Type: typeInvitation, GSI1PK: orgPK(inv.OrgID), GSI1SK: prefixInvite + inv.ID,
		OrgID: inv.OrgID, ID: inv.ID, Email: inv.Email, Role: string(inv.Role), TeamIDs: inv.TeamIDs, InvitedBy: inv.InvitedBy,
		TokenHash: inv.TokenHash, CreatedAt: inv.CreatedAt, ExpiresAt: inv.ExpiresAt.Unix()}
}

func fromInvitationItem(it invitationItem) invitation.Invitation {
	teams := it.TeamIDs
	if teams == nil {
		teams = []string{}
	}
	return invitation.Invitation{OrgID: it.OrgID, ID: it.ID, Email: it.Email, Role: authz.Role(it.Role), TeamIDs: teams,
		InvitedBy: it.InvitedBy, TokenHash: it.TokenHash, CreatedAt: it.CreatedAt, ExpiresAt: time.Unix(it.ExpiresAt, 0).UTC()}
}

func checkInvitation(inv invitation.Invitation) error {
	if err := checkIDs(ids.Resource("orgId", inv.OrgID), ids.Resource("invitationId", inv.ID)); err != nil {
		return err
	}
	for _, t := range inv.TeamIDs {
		if err := checkIDs(ids.Resource("teamId", t)); err != nil {
			return err
		}
	}
	return checkUser(tenant.User{OrgID: inv.OrgID, UserID: "x", Email: inv.Email})
}

// CreateInvitation writes the invitation and points its email at it,
// removing the one it replaces (whose ID it returns), in one transaction.
func (s *Invitations) CreateInvitation(ctx context.Context, inv invitation.Invitation, ev audit.Event) (replaced string, err error) {
	email := tenant.NormalizeEmail(inv.Email)
	ek := invitationEmailKey(inv.OrgID, email)
	old, err := getItem[invitationEmailItem](ctx, s.DB, ek, true, nil, "create invitation", checkInvitation(inv)) // none: a zero item
	if err != nil {
		return "", err
	}
	t := s.newTx().put(invitationKey(inv.OrgID, inv.ID), s.table.Put(toInvitationItem(inv)).If(notExists),
		failWith(errs.E(errs.Conflict, "invitation_exists", "invitation ID already taken")))
	ptr := invitationEmailItem{PK: ek.PK, SK: ek.SK, Type: typeInviteMail, GSI1PK: orgPK(inv.OrgID), GSI1SK: invitationEmailGSI1SK(email),
		OrgID: inv.OrgID, InvitationID: inv.ID, ExpiresAt: inv.ExpiresAt.Unix()}
	if old.InvitationID == "" {
		t.put(ek, s.table.Put(ptr).If(notExists), failWith(errInvitationRace))
	} else {
		t.put(ek, s.table.Put(ptr).If("invitationId = ?", old.InvitationID), failWith(errInvitationRace))
		ok := invitationKey(inv.OrgID, old.InvitationID)
		t.delete(ok, s.deleteAt(ok), nil)
	}
	ck := claimKey(inv.OrgID, email)
	t.check(ck, s.checkAt(ck).If(notExists), failWith(errEmailTaken))
	s.orgGuard(t, inv.OrgID, 0)
	for _, team := range inv.TeamIDs {
		s.teamCheck(t, inv.OrgID, team, errTicketTeam)
	}
	if err := s.audited(ev, t).run(ctx, "create invitation"); err != nil {
		return "", err
	}
	return old.InvitationID, nil
}

// GetInvitation reads one invitation with a consistent GetItem.
func (s *Invitations) GetInvitation(ctx context.Context, orgID, invitationID string) (invitation.Invitation, error) {
	it, err := getItem[invitationItem](ctx, s.DB, invitationKey(orgID, invitationID), true, errInvitationNotFound, "get invitation",
		ids.Resource("orgId", orgID), ids.Resource("invitationId", invitationID))
	return fromInvitationItem(it), err
}

// ListInvitations pages through GSI1 ORG#<orgId>, begins_with INVITE#,
// leaving out invitations that expired but TTL has not removed yet.
func (s *Invitations) ListInvitations(ctx context.Context, orgID string, now time.Time, p page.Request) (page.Result[invitation.Invitation], error) {
	r, err := list(ctx, s.DB, listing{op: "list invitations", index: gsi1, partition: orgPK(orgID), prefix: prefixInvite}, p, fromInvitationItem,
		ids.Resource("orgId", orgID))
	if err != nil {
		return r, err
	}
	kept, after := r.Items[:0], r.After[:0]
	for i, inv := range r.Items {
		if now.Before(inv.ExpiresAt) {
			kept, after = append(kept, inv), append(after, r.After[i])
		}
	}
	r.Items, r.After = kept, after
	return r, nil
}

// RevokeInvitation deletes the invitation and its email pointer.
func (s *Invitations) RevokeInvitation(ctx context.Context, inv invitation.Invitation, ev audit.Event) error {
	k, ek := invitationKey(inv.OrgID, inv.ID), invitationEmailKey(inv.OrgID, tenant.NormalizeEmail(inv.Email))
	t := s.newTx(checkInvitation(inv)).
		delete(k, s.deleteAt(k).If(exists), failWith(errInvitationNotFound)).
		delete(ek, s.deleteAt(ek).If("invitationId = ?", inv.ID), failWith(errInvitationNotFound))
	return s.audited(ev, t).run(ctx, "revoke invitation")
}

// GetAcceptedInvitation reads (consistently) the membership and teams userID
// got by the invitation whose token hashes to tokenHash, or NotFound.
func (s *Invitations) GetAcceptedInvitation(ctx context.Context, orgID, userID, tokenHash string) (tenant.User, []string, error) {
	it, err := getItem[orgUserItem](ctx, s.DB, orgUserKey(orgID, userID), true, errInvitationNotFound, "get accepted invitation",
		ids.Resource("orgId", orgID), ids.User("userId", userID))
	if err != nil {
		return tenant.User{}, nil, err
	}
	if it.AcceptedToken == "" || it.AcceptedToken != tokenHash || it.Deleting {
		return tenant.User{}, nil, errInvitationNotFound
	}
	return fromOrgUserItem(it), it.TeamIDs, nil
}

// errInviterLost: the inviter may no longer grant the invitation.
var errInviterLost = errs.E(errs.Forbidden, "inviter_lost_access", "the person who invited you can no longer grant this role; ask for a new invitation")

// AcceptInvitation consumes the invitation exactly once and writes the
// OrgUser, its claim and its teams' edges, in one transaction fenced on the
// inviter's edge.
func (s *Invitations) AcceptInvitation(ctx context.Context, inv invitation.Invitation, u tenant.User, ev audit.Event) ([]string, error) {
	if err := checkInvitation(inv); err != nil {
		return nil, err
	}
	if err := checkUser(u); err != nil {
		return nil, err
	}
	existing, err := s.batchGetTeams(ctx, inv.OrgID, inv.TeamIDs, true)
	if err != nil {
		return nil, fmt.Errorf("accept invitation: %w", err)
	}
	joined := []string{} // the invited teams that still exist
	for _, team := range inv.TeamIDs {
		if _, ok := existing[team]; ok {
			joined = append(joined, team)
		}
	}
	// The user's team set holds the teams joined here, with their edges.
	userItem := toOrgUserItem(u)
	userItem.AcceptedToken, userItem.TeamIDs = inv.TokenHash, joined
	k, ek := invitationKey(inv.OrgID, inv.ID), invitationEmailKey(inv.OrgID, tenant.NormalizeEmail(inv.Email))
	c := toClaimItem(u)
	t := s.newTx().
		delete(k, s.deleteAt(k).If("tokenHash = ? AND expiresAt > ?", inv.TokenHash, u.JoinedAt.Unix()), failWith(errInvitationNotFound)).
		delete(ek, s.deleteAt(ek).If("invitationId = ?", inv.ID), failWith(errInvitationNotFound)).
		put(orgUserKey(u.OrgID, u.UserID), s.table.Put(userItem).If(notExists), failWith(errUserExists)).
		put(c.key(), s.table.Put(c).If(notExists), failWith(errEmailTaken))
	s.orgGuard(t, u.OrgID, ownerDelta("", u.Role))
	// The inviter's grant still stands (admin+, owner for an owner): a removed
	// or demoted admin cannot come back, as someone else, by their invitations.
	floor := string(authz.Admin)
	if inv.Role == authz.Owner {
		floor = string(authz.Owner)
	}
	s.fenceEdge(t, actorKey(inv.OrgID, inv.InvitedBy), floor, errInviterLost, errInviterLost)
	for _, teamID := range joined {
		m := membership.Membership{OrgID: u.OrgID, TeamID: teamID, UserID: u.UserID, Role: authz.Member,
			JoinedAt: u.JoinedAt, UpdatedAt: u.JoinedAt, Version: 1}
		tk, mi := teamKey(u.OrgID, teamID), toMemberItem(m)
		t.put(key{mi.PK, mi.SK}, s.table.Put(mi).If(notExists), failWith(errAlreadyMember)).
			update(tk, s.updateAt(tk).Add("memberCount", 1).If(liveItem), failWith(errTicketTeam))
	}
	if err := s.audited(ev, t).run(ctx, "accept invitation"); err != nil {
		return nil, err
	}
	return joined, nil
}
