package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/guregu/dynamo/v2"
	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/ifmatch"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
)

// Teams stores teams and their member edges: an adjacency list under the
// team's partition, GSI1 the inverse; the role lives on the edge.
type Teams struct{ *DB }

var _ membership.Storer = (*Teams)(nil)

var (
	errTeamNotFound   = errs.E(errs.NotFound, "team_not_found", "team not found")
	errMemberNotFound = errs.E(errs.NotFound, "member_not_found", "the user is not a member of this team")
	errAlreadyMember  = errs.E(errs.Conflict, "already_member", "the user is already a member of this team")
	errNotOrgMember   = errs.E(errs.Conflict, "not_org_member", "the user is not a user of this organization; add them to it first")
	errLastTeamOwner  = errs.E(errs.Conflict, "last_team_owner", "a team must keep at least one owner: make another member owner first, or delete the team")
	errTooManyTeams   = errs.E(errs.Conflict, "user_team_limit", "the user is in %d teams of this organization, the most one user may be in", membership.MaxTeamsPerUser)
)

// roomForTeam is a join's condition on the user's OrgUser: room in its set.
const roomForTeam = "(attribute_not_exists(teamIds) OR size(teamIds) < ?)"

// joinFailed reads a failed join condition: a full team set, or no user.
func joinFailed(old map[string]types.AttributeValue) error {
	if ss, ok := old["teamIds"].(*types.AttributeValueMemberSS); ok && len(ss.Value) >= membership.MaxTeamsPerUser {
		return errTooManyTeams
	}
	return errNotOrgMember
}

type teamItem struct {
	PK          string    `dynamo:"pk,hash"`
	SK          string    `dynamo:"sk,range"`
	Type        string    `dynamo:"type"`
	GSI1PK      string    `dynamo:"gsi1pk"` // ORG#<orgId>: an org's teams
	GSI1SK      string    `dynamo:"gsi1sk"` // TEAM#<teamId>
	OrgID       string    `dynamo:"orgId"`
	ID          string    `dynamo:"teamId"`
	Name        string    `dynamo:"name"`
	Description string    `dynamo:"description"`
	MemberCount int       `dynamo:"memberCount"` // kept by transactions: the team's MEMBER# edges
	OwnerCount  int       `dynamo:"ownerCount"`  // kept by transactions: edges with role owner (>= 1)
	Version     int64     `dynamo:"version"`
	CreatedAt   time.Time `dynamo:"createdAt"`
	UpdatedAt   time.Time `dynamo:"updatedAt"`
	// Deleting marks a team whose deletion in parts is under way: gone for readers.
	Deleting   bool   `dynamo:"deleting,omitempty"`
	LeaseOwner string `dynamo:"leaseOwner,omitempty"` // who finishes that deletion
}

func (it teamItem) beingDeleted() bool { return it.Deleting }

func toTeamItem(t membership.Team) teamItem {
	k := teamKey(t.OrgID, t.ID)
	return teamItem{PK: k.PK, SK: k.SK, Type: typeTeam, GSI1PK: orgPK(t.OrgID), GSI1SK: teamSK(t.ID),
		OrgID: t.OrgID, ID: t.ID, Name: t.Name, Description: t.Description, MemberCount: t.MemberCount,
		OwnerCount: t.OwnerCount, Version: t.Version, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

func fromTeamItem(it teamItem) membership.Team {
	return membership.Team{OrgID: it.OrgID, ID: it.ID, Name: it.Name, Description: it.Description,
		MemberCount: it.MemberCount, OwnerCount: it.OwnerCount, Version: it.Version, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt}
}

// teamCheck is a transaction item proving the team is live.
func (s *DB) teamCheck(t *txn, orgID, teamID string, notFound error) {
	k := teamKey(orgID, teamID)
	t.check(k, s.checkAt(k).If(liveItem), failWith(notFound))
}

// ownerDeltaCond is the condition of a change of a team's ownerCount by d:
// a decrement must leave an owner, unless the team is being deleted.
func ownerDeltaCond(u *dynamo.Update, d int) *dynamo.Update {
	if d == 0 {
		return u
	}
	u = u.Add("ownerCount", d)
	if d < 0 {
		u = u.If("ownerCount > ? OR attribute_exists(deleting)", -d)
	}
	return u
}

// CreateTeam writes the team with its creator's owner edge (both counts 1),
// checking the creator is a user of the org, in one transaction.
func (s *Teams) CreateTeam(ctx context.Context, t membership.Team, owner membership.Membership, ev audit.Event) error {
	if err := checkIDs(ids.Resource("orgId", t.OrgID), ids.Resource("teamId", t.ID)); err != nil {
		return err
	}
	if err := checkMember(owner); err != nil {
		return err
	}
	if owner.Role != authz.Owner || owner.TeamID != t.ID || owner.OrgID != t.OrgID {
		return fmt.Errorf("create team: the creator's edge must be the team's owner edge")
	}
	t.MemberCount, t.OwnerCount = 1, 1
	ti, mi := toTeamItem(t), toMemberItem(owner)
	tx := s.newTx().
		put(key{ti.PK, ti.SK}, s.table.Put(ti).If(notExists), failWith(errs.E(errs.Conflict, "team_exists", "team ID already taken"))).
		put(key{mi.PK, mi.SK}, s.table.Put(mi).If(notExists), failWith(errAlreadyMember))
	s.userTeams(tx, owner.OrgID, owner.UserID, func(u *dynamo.Update) *dynamo.Update {
		return u.AddStringsToSet("teamIds", t.ID).If(roomForTeam, membership.MaxTeamsPerUser)
	}, joinFailed)
	return s.audited(ev, tx).run(ctx, "create team")
}

// GetTeam reads the team's #METADATA item. A team being deleted is not found.
func (s *Teams) GetTeam(ctx context.Context, orgID, teamID string) (membership.Team, error) {
	it, err := getLive[teamItem](ctx, s.DB, teamKey(orgID, teamID), errTeamNotFound, "get team",
		ids.Resource("orgId", orgID), ids.Resource("teamId", teamID))
	return fromTeamItem(it), err
}

// GetTeamWithMembers is AP4: the team and its edges in one Query.
func (s *Teams) GetTeamWithMembers(ctx context.Context, orgID, teamID string, limit int) (membership.Team, []membership.Membership, error) {
	return withChildren(ctx, s.DB, teamPK(orgID, teamID), typeTeam, limit, errTeamNotFound, "get team with members", fromTeamItem, fromMemberItem,
		ids.Resource("orgId", orgID), ids.Resource("teamId", teamID))
}

// ListTeams pages through an org's teams on GSI1 (ORG#<orgId>, TEAM#).
func (s *Teams) ListTeams(ctx context.Context, orgID string, p page.Request) (page.Result[membership.Team], error) {
	return list(ctx, s.DB, listing{op: "list teams", index: gsi1, partition: orgPK(orgID), prefix: prefixTeam}, p, fromTeamItem,
		ids.Resource("orgId", orgID))
}

// UpdateTeam sets name and description if the version is still prev's.
func (s *Teams) UpdateTeam(ctx context.Context, prev, next membership.Team, ev audit.Event) error {
	k := teamKey(prev.OrgID, prev.ID)
	u := s.updateAt(k).Set("name", next.Name).Set("updatedAt", next.UpdatedAt).Set("version", next.Version)
	u = setOrRemove(u, "description", next.Description)
	t := s.newTx(ids.Resource("orgId", prev.OrgID), ids.Resource("teamId", prev.ID)).
		update(k, u.If(liveAtVersion, prev.Version), goneOr(errTeamNotFound, errVersion))
	return s.audited(ev, t).run(ctx, "update team")
}

// maxDeleteAttempts bounds a delete's re-reads after concurrent changes;
// after singleTxAttempts, a cascade marks the parent deleting first.
const (
	maxDeleteAttempts = 8
	singleTxAttempts  = 3
)

// errBusy: a delete kept meeting concurrent changes.
var errBusy = ifmatch.ErrBusy

// errRetry: what a transaction read changed; read again (never returned).
var errRetry = errs.E(errs.Conflict, "concurrent_update", "the resource keeps changing; retry")

// retryOn is an onFail for conditions that only a concurrent change breaks.
func retryOn(map[string]types.AttributeValue) error { return errRetry }

// DeleteTeam removes the team, its edges and the team from each member's
// team set, as a cascade (cascade.go) on memberCount.
func (s *Teams) DeleteTeam(ctx context.Context, orgID, teamID string, ifVersion int64, ev audit.Event) error {
	return deleteCascade(ctx, s.DB, s.teamCascade(orgID, teamID), ifVersion, ev, ids.Resource("orgId", orgID), ids.Resource("teamId", teamID))
}

// teamCascade is the deletion of a team with its edges (cascade.go), each
// with the team's removal from its user's team set and ownerCount.
func (s *DB) teamCascade(orgID, teamID string) cascade {
	goneUsers := map[string]bool{} // see dropEdge
	return cascade{what: "team", key: teamKey(orgID, teamID), deletionSK: teamDeletionSK(orgID, teamID),
		count: "memberCount", child: typeMembership, notFound: errTeamNotFound, perChild: 2,
		drop: func(t *txn, e deletionItem) { s.dropEdge(t, orgID, e, teamID, goneUsers) },
		counts: func(u *dynamo.Update, part []deletionItem) *dynamo.Update {
			owners := 0
			for _, e := range part {
				if e.Role == string(authz.Owner) {
					owners++
				}
			}
			return u.Add("ownerCount", -owners)
		},
	}
}

// dropEdge adds to t the deletion of edge e and the team's removal from its
// user's team set; a user found gone is noted in goneUsers, and the next
// attempt deletes only the edge, checking the user is gone.
func (s *DB) dropEdge(t *txn, orgID string, e deletionItem, teamID string, goneUsers map[string]bool) {
	t.delete(e.key(), s.deleteAt(e.key()).If(exists), retryOn)
	if goneUsers[e.UserID] {
		uk := orgUserKey(orgID, e.UserID)
		t.check(uk, s.checkAt(uk).If(notExists), func(map[string]types.AttributeValue) error {
			delete(goneUsers, e.UserID)
			return errRetry
		})
		return
	}
	s.userTeams(t, orgID, e.UserID, func(u *dynamo.Update) *dynamo.Update { return u.DeleteStringsFromSet("teamIds", teamID) },
		func(old map[string]types.AttributeValue) error {
			if old == nil {
				goneUsers[e.UserID] = true
			}
			return errRetry
		})
}

// BatchGetTeams reads many teams of one org, but those being deleted.
func (s *Teams) BatchGetTeams(ctx context.Context, orgID string, teamIDs []string) (map[string]membership.Team, error) {
	return s.batchGetTeams(ctx, orgID, teamIDs, false)
}

func (s *DB) batchGetTeams(ctx context.Context, orgID string, teamIDs []string, consistent bool) (map[string]membership.Team, error) {
	return batchGetByID(ctx, s, teamIDs, func(id string) error { return ids.Resource("teamId", id) },
		func(id string) key { return teamKey(orgID, id) }, consistent, "batch get teams",
		func(it teamItem) (string, membership.Team, bool) { return it.ID, fromTeamItem(it), !it.Deleting }, ids.Resource("orgId", orgID))
}
