package store

import (
	"context"
	"fmt"

	"github.com/guregu/dynamo/v2"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
)

// Target is the one item a route names, which the authorization read
// (OrgAccess) loads in the same BatchGetItem as the caller's edge and the
// org item. OrgTarget, OrgUserTarget, TeamTarget, TeamMemberTarget and
// TicketTarget build one. After OrgAccess the field of its kind holds the
// item as a getter of that kind would return it, or is nil and Err says
// why: the item's not-found error, or an ID that may not reach a key.
type Target struct {
	Org    *tenant.Org
	User   *tenant.User
	Team   *membership.Team
	Member *membership.Membership
	Ticket *ticket.Ticket
	Err    error

	kind     targetKind
	id, user string
}

type targetKind int

const (
	orgTarget targetKind = iota + 1
	userTarget
	teamTarget
	memberTarget
	ticketTarget
)

// OrgTarget is the org item itself (already in the authorization read).
func OrgTarget() *Target { return &Target{kind: orgTarget} }

// OrgUserTarget is the org's user userID (its OrgUser edge).
func OrgUserTarget(userID string) *Target { return &Target{kind: userTarget, user: userID} }

// TeamTarget is the team teamID.
func TeamTarget(teamID string) *Target { return &Target{kind: teamTarget, id: teamID} }

// TeamMemberTarget is userID's edge under the team teamID.
func TeamMemberTarget(teamID, userID string) *Target {
	return &Target{kind: memberTarget, id: teamID, user: userID}
}

// TicketTarget is the ticket ticketID.
func TicketTarget(ticketID string) *Target { return &Target{kind: ticketTarget, id: ticketID} }

// key is the target's key in orgID, or the error of an ID that may not
// reach one (then the target is not read).
func (t *Target) key(orgID string) (key, error) {
	switch t.kind {
	case orgTarget:
		return orgKey(orgID), nil
	case userTarget:
		return orgUserKey(orgID, t.user), ids.User("userId", t.user)
	case teamTarget:
		return teamKey(orgID, t.id), ids.Resource("teamId", t.id)
	case memberTarget:
		return memberKey(orgID, t.id, t.user), checkIDs(ids.Resource("teamId", t.id), ids.User("userId", t.user))
	case ticketTarget:
		return ticketKey(orgID, t.id), ids.Resource("ticketId", t.id)
	}
	return key{}, fmt.Errorf("store: unknown target kind %d", t.kind)
}

// found decodes the target's item (nil: there is none), with the liveness
// rule of its getter: an org, a team or a ticket being deleted is gone.
func (t *Target) found(it dynamo.Item) (err error) {
	switch t.kind {
	case orgTarget:
		t.Org, t.Err, err = decodeTarget(it, errOrgNotFound, fromOrgItem)
	case userTarget:
		t.User, t.Err, err = decodeTarget(it, errUserNotFound, fromOrgUserItem)
	case teamTarget:
		t.Team, t.Err, err = decodeTarget(it, errTeamNotFound, fromTeamItem)
	case memberTarget:
		t.Member, t.Err, err = decodeTarget(it, errMemberNotFound, fromMemberItem)
	case ticketTarget:
		t.Ticket, t.Err, err = decodeTarget(it, errTicketNotFound, fromTicketItem)
	}
	return err
}

// decodeTarget decodes it as an I and converts it: the value, or nil and
// notFound when there is no item or it is marked for deletion; err is a
// decoding failure.
func decodeTarget[I any, T any](it dynamo.Item, notFound error, conv func(I) T) (*T, error, error) {
	if it == nil {
		return nil, notFound, nil
	}
	var x I
	if err := dynamo.UnmarshalItem(it, &x); err != nil {
		return nil, nil, fmt.Errorf("decode target: %w", err)
	}
	if m, ok := any(x).(markedForDeletion); ok && m.beingDeleted() {
		return nil, notFound, nil
	}
	v := conv(x)
	return &v, nil, nil
}

// OrgAccess is the authorization read: the org item, the caller's OrgUser
// edge and the route's target (nil: none) in ONE consistent BatchGetItem.
// The role is on the edge; the org item says whether the org is being
// offboarded, so that from the moment its offboarding starts no member
// reads or writes it, even if the offboarding crashes before it deleted
// their edges. A caller with no edge, or an org with no item, is an Access
// with no role. The target is filled (see Target) only for a caller with an
// edge: for anyone else its item came back in the same answer, and nothing
// of it is decoded or used.
func (s *Orgs) OrgAccess(ctx context.Context, orgID, userID string, target *Target) (authz.Access, error) {
	if err := checkIDs(ids.Resource("orgId", orgID), ids.User("userId", userID)); err != nil {
		return authz.Access{}, err
	}
	ok, uk := orgKey(orgID), orgUserKey(orgID, userID)
	keys := []dynamo.Keyed{dynamo.Keys{ok.PK, ok.SK}, dynamo.Keys{uk.PK, uk.SK}}
	var tk key
	if target != nil {
		var err error
		if tk, err = target.key(orgID); err != nil {
			target.Err, target = err, nil
		} else if tk != ok && tk != uk {
			keys = append(keys, dynamo.Keys{tk.PK, tk.SK})
		}
	}
	var items []dynamo.Item
	if err := s.batchGet(ctx, keys, true, &items); err != nil {
		return authz.Access{}, fmt.Errorf("authorization read: %w", err)
	}
	var (
		a          authz.Access
		org, edge  bool
		targetItem dynamo.Item
	)
	for _, it := range items {
		k := key{attrS(it, attrPK), attrS(it, attrSK)}
		switch k {
		case ok:
			org = true
			a.OrgDeleting = it["deleting"] != nil
		case uk:
			edge = true
			a.Role = authz.Role(attrS(it, "role"))
			a.EdgeDeleting = it["deleting"] != nil
		}
		if target != nil && k == tk {
			targetItem = it
		}
	}
	if !org || !edge {
		return authz.Access{}, nil
	}
	if target != nil {
		if err := target.found(targetItem); err != nil {
			return authz.Access{}, err
		}
	}
	return a, nil
}
