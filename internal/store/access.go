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
// rule of its getter: a team or ticket being deleted is gone.
func (t *Target) found(it dynamo.Item) error {
	var err error
	switch t.kind {
	case orgTarget:
		t.Err = errOrgNotFound
		var x orgItem
		if it != nil {
			if err = dynamo.UnmarshalItem(it, &x); err == nil && !x.beingDeleted() {
				t.Org, t.Err = ptr(fromOrgItem(x)), nil
			}
		}
	case userTarget:
		t.Err = errUserNotFound
		var x orgUserItem
		if it != nil {
			if err = dynamo.UnmarshalItem(it, &x); err == nil {
				t.User, t.Err = ptr(fromOrgUserItem(x)), nil
			}
		}
	case teamTarget:
		t.Err = errTeamNotFound
		var x teamItem
		if it != nil {
			if err = dynamo.UnmarshalItem(it, &x); err == nil && !x.beingDeleted() {
				t.Team, t.Err = ptr(fromTeamItem(x)), nil
			}
		}
	case memberTarget:
		t.Err = errMemberNotFound
		var x memberItem
		if it != nil {
			if err = x.UnmarshalDynamoItem(it); err == nil {
				t.Member, t.Err = ptr(fromMemberItem(x)), nil
			}
		}
	case ticketTarget:
		t.Err = errTicketNotFound
		var x ticketItem
		if it != nil {
			if err = x.UnmarshalDynamoItem(it); err == nil && !x.beingDeleted() {
				t.Ticket, t.Err = ptr(fromTicketItem(x)), nil
			}
		}
	}
	if err != nil {
		return fmt.Errorf("decode target: %w", err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// OrgAccess is the authorization read: the org item, the caller's OrgUser
// edge and the route's target (nil: none) in ONE consistent BatchGetItem.
// The role is on the edge; the org item says whether the org is being
// offboarded, so that from the moment its offboarding starts no member
// reads or writes it, even if the offboarding crashes before it deleted
// their edges. A caller with no edge, or an org with no item, is an Access
// with no role. The target is filled (see Target) whatever the access: the
// decision, not the read, keeps it from a caller who may not see it.
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
