package store

import (
	"context"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
)

// Orgs stores orgs and their users, one item collection per org, each
// user's email claimed by its own item, so emails are unique per org.
type Orgs struct{ *DB }

var _ tenant.Storer = (*Orgs)(nil)

var (
	errOrgNotFound  = authz.ErrOrgNotFound
	errUserNotFound = errs.E(errs.NotFound, "user_not_found", "user not found in this organization")
	errUserExists   = errs.E(errs.Conflict, "user_exists", "the user is already in this organization")
	errEmailTaken   = errs.E(errs.Conflict, "email_taken", "another user of this organization has that email")
	errLastOwner    = errs.E(errs.Conflict, "last_owner", "an organization must keep at least one owner")
)

// DefaultMaxOwnedOrgs is how many existing orgs one user may have created.
const DefaultMaxOwnedOrgs = 100

// SetMaxOwnedOrgs sets that number (n >= 1). Call it before use.
func (d *DB) SetMaxOwnedOrgs(n int) {
	if n >= 1 {
		d.maxOwned = n
	}
}

// ownedOrgsItem counts the orgs a user has created that still exist:
// CreateOrg adds one, the offboarding's final transaction takes it back.
type ownedOrgsItem struct {
	PK     string `dynamo:"pk,hash"`
	SK     string `dynamo:"sk,range"`
	Type   string `dynamo:"type"`
	UserID string `dynamo:"userId"`
	Owned  int    `dynamo:"owned"`
}

// ownedOrgs adds to t the change by delta of the count of orgs userID has
// created, refused at limit when limit > 0.
func (d *DB) ownedOrgs(t *txn, userID string, delta, limit int) {
	k := ownedOrgsKey(userID)
	u := d.updateAt(k).Set("type", typeOwnedOrgs).Set("userId", userID).Add("owned", delta)
	var fail onFail
	if limit > 0 {
		u.If("attribute_not_exists(owned) OR owned < ?", limit)
		fail = failWith(errs.E(errs.Forbidden, "org_quota_exceeded",
			"you have created %d organizations that still exist, the most one user may: delete one first", limit))
	}
	t.update(k, u, fail)
}

// OwnedOrgs reads (consistently) how many existing orgs the user created.
func (s *Orgs) OwnedOrgs(ctx context.Context, userID string) (int, error) {
	it, err := getItem[ownedOrgsItem](ctx, s.DB, ownedOrgsKey(userID), true, nil, "owned orgs", ids.User("userId", userID))
	return it.Owned, err
}

type orgItem struct {
	PK         string    `dynamo:"pk,hash"`
	SK         string    `dynamo:"sk,range"`
	Type       string    `dynamo:"type"`
	ID         string    `dynamo:"orgId"`
	Name       string    `dynamo:"name"`
	OwnerCount int       `dynamo:"ownerCount"`          // kept by transactions: the last owner cannot leave
	CreatedBy  string    `dynamo:"createdBy,omitempty"` // the user the org counts against (quota); empty on orgs older than it
	Version    int64     `dynamo:"version"`
	CreatedAt  time.Time `dynamo:"createdAt"`
	UpdatedAt  time.Time `dynamo:"updatedAt"`

	// Offboarding (offboard.go): from Deleting on, the authorization read
	// answers 404 to every member and the org takes no new user.
	Deleting     bool      `dynamo:"deleting,omitempty"`
	OffboardBy   string    `dynamo:"offboardBy,omitempty"`
	Since        time.Time `dynamo:"deletingSince,omitempty"`
	Phase        string    `dynamo:"offboardPhase,omitempty"`
	CutoffAt     time.Time `dynamo:"cutoffAt,omitempty"`
	LeaseOwner   string    `dynamo:"leaseOwner,omitempty"`
	LeaseUntilMs int64     `dynamo:"leaseUntil,omitempty"`
}

func (it orgItem) beingDeleted() bool { return it.Deleting }

func toOrgItem(o tenant.Org, owners int, createdBy string) orgItem {
	k := orgKey(o.ID)
	return orgItem{PK: k.PK, SK: k.SK, Type: typeOrg, ID: o.ID, Name: o.Name, OwnerCount: owners, CreatedBy: createdBy,
		Version: o.Version, CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt}
}

func fromOrgItem(it orgItem) tenant.Org {
	return tenant.Org{ID: it.ID, Name: it.Name, Version: it.Version, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt}
}

const notExists = "attribute_not_exists(pk)"
const exists = "attribute_exists(pk)"

// CreateOrg writes the org, its owner and the owner's email claim in one
// transaction that counts the org against its creator's quota.
func (s *Orgs) CreateOrg(ctx context.Context, org tenant.Org, owner tenant.User, ev audit.Event) error {
	c := toClaimItem(owner)
	t := s.newTx(ids.Resource("orgId", org.ID), checkUser(owner)).
		put(orgKey(org.ID), s.table.Put(toOrgItem(org, 1, owner.UserID)).If(notExists), failWith(errs.E(errs.Conflict, "org_exists", "organization ID already taken"))).
		put(orgUserKey(owner.OrgID, owner.UserID), s.table.Put(toOrgUserItem(owner)).If(notExists), failWith(errUserExists)).
		put(c.key(), s.table.Put(c).If(notExists), failWith(errEmailTaken))
	s.ownedOrgs(t, owner.UserID, 1, s.maxOwned) // after the org: a retry that meets its org is not refused
	return s.audited(ev, t).run(ctx, "create org")
}

// GetOrg reads the org item.
func (s *Orgs) GetOrg(ctx context.Context, orgID string) (tenant.Org, error) {
	it, err := getLive[orgItem](ctx, s.DB, orgKey(orgID), errOrgNotFound, "get org", ids.Resource("orgId", orgID))
	return fromOrgItem(it), err
}

// GetOrgWithUsers reads the org and its first users in one Query.
func (s *Orgs) GetOrgWithUsers(ctx context.Context, orgID string, limit int) (tenant.Org, []tenant.User, error) {
	return withChildren(ctx, s.DB, orgPK(orgID), typeOrg, limit, errOrgNotFound, "get org with users", fromOrgItem, fromOrgUserItem,
		ids.Resource("orgId", orgID))
}

// UpdateOrg sets the org's name if its version is still prev.Version.
func (s *Orgs) UpdateOrg(ctx context.Context, prev, next tenant.Org, ev audit.Event) error {
	k := orgKey(prev.ID)
	t := s.newTx(ids.Resource("orgId", prev.ID)).update(k, s.updateAt(k).Set("name", next.Name).Set("updatedAt", next.UpdatedAt).Set("version", next.Version).
		If(liveAtVersion, prev.Version), goneOr(errOrgNotFound, errVersion))
	return s.audited(ev, t).run(ctx, "update org")
}

// ListOrgs pages through a user's OrgUser edges on GSI1; the orgs' names
// are not on them (BatchGetOrgs reads them).
func (s *Orgs) ListOrgs(ctx context.Context, userID string, p page.Request) (page.Result[tenant.OrgMembership], error) {
	return list(ctx, s.DB, listing{op: "list user orgs", index: gsi1, partition: userPK(userID), prefix: prefixOrg}, p,
		func(it orgUserItem) tenant.OrgMembership {
			return tenant.OrgMembership{OrgID: it.OrgID, UserName: it.Name, Role: authz.Role(it.Role), JoinedAt: it.JoinedAt}
		}, ids.User("userId", userID))
}

// BatchGetOrgs reads many orgs with BatchGetItem (100 keys per request).
func (s *Orgs) BatchGetOrgs(ctx context.Context, orgIDs []string) (map[string]tenant.Org, error) {
	return batchGetByID(ctx, s.DB, orgIDs, func(id string) error { return ids.Resource("orgId", id) }, orgKey, false, "batch get orgs",
		func(it orgItem) (string, tenant.Org, bool) { return it.ID, fromOrgItem(it), !it.Deleting }) // being offboarded: gone for its members
}

// ownerDelta is the change of an owner count when a role moves ("": none).
func ownerDelta(from, to authz.Role) int {
	d := 0
	if from == authz.Owner {
		d--
	}
	if to == authz.Owner {
		d++
	}
	return d
}

// orgGuard adds to t the org item's part of a change of its users: it is
// live (not offboarded), and its owner count moves by delta, keeping one.
func (s *DB) orgGuard(t *txn, orgID string, delta int) {
	k := orgKey(orgID)
	switch {
	case delta == 0:
		t.check(k, s.checkAt(k).If(liveItem), failWith(errOrgNotFound))
	case delta > 0:
		t.update(k, s.updateAt(k).Add("ownerCount", delta).If(liveItem), failWith(errOrgNotFound))
	default:
		t.update(k, s.updateAt(k).Add("ownerCount", delta).If(liveItem+" AND ownerCount > ?", -delta), goneOr(errOrgNotFound, errLastOwner))
	}
}
