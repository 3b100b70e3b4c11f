package store

import (
	"context"
	"fmt"
	"time"

	"github.com/guregu/dynamo/v2"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
)

// Teams stores teams and their member edges: an adjacency list under the
// team's partition with GSI1 as the inverse (seed 000). The role lives on
// the edge, so "may this user act on this team" is one GetItem (AP3).
type Teams struct{ *DB }

var _ membership.Storer = (*Teams)(nil)

var (
	errTeamNotFound   = errs.E(errs.NotFound, "team_not_found", "team not found")
	errMemberNotFound = errs.E(errs.NotFound, "member_not_found", "the user is not a member of this team")
	errAlreadyMember  = errs.E(errs.Conflict, "already_member", "the user is already a member of this team")
	errNotOrgMember   = errs.E(errs.Conflict, "not_org_member", "the user is not a user of this organization; add them to it first")
)

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
	MemberCount int       `dynamo:"memberCount"`
	Version     int64     `dynamo:"version"`
	CreatedAt   time.Time `dynamo:"createdAt"`
	UpdatedAt   time.Time `dynamo:"updatedAt"`
}

func toTeamItem(t membership.Team) teamItem {
	k := teamKey(t.OrgID, t.ID)
	return teamItem{PK: k.PK, SK: k.SK, Type: typeTeam, GSI1PK: orgPK(t.OrgID), GSI1SK: teamSK(t.ID),
		OrgID: t.OrgID, ID: t.ID, Name: t.Name, Description: t.Description, MemberCount: t.MemberCount,
		Version: t.Version, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

func fromTeamItem(it teamItem) membership.Team {
	return membership.Team{OrgID: it.OrgID, ID: it.ID, Name: it.Name, Description: it.Description,
		MemberCount: it.MemberCount, Version: it.Version, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt}
}

type memberItem struct {
	PK        string    `dynamo:"pk,hash"`
	SK        string    `dynamo:"sk,range"`
	Type      string    `dynamo:"type"`
	GSI1PK    string    `dynamo:"gsi1pk"` // USER#<userId>: a user's teams
	GSI1SK    string    `dynamo:"gsi1sk"` // TEAM#<orgId>#<teamId>
	OrgID     string    `dynamo:"orgId"`
	TeamID    string    `dynamo:"teamId"`
	UserID    string    `dynamo:"userId"`
	Role      string    `dynamo:"role"`
	Version   int64     `dynamo:"version"`
	JoinedAt  time.Time `dynamo:"joinedAt"`
	UpdatedAt time.Time `dynamo:"updatedAt"`
}

func toMemberItem(m membership.Member) memberItem {
	k := memberKey(m.OrgID, m.TeamID, m.UserID)
	return memberItem{PK: k.PK, SK: k.SK, Type: typeMembership, GSI1PK: userPK(m.UserID), GSI1SK: userTeamSK(m.OrgID, m.TeamID),
		OrgID: m.OrgID, TeamID: m.TeamID, UserID: m.UserID, Role: string(m.Role), Version: m.Version,
		JoinedAt: m.JoinedAt, UpdatedAt: m.UpdatedAt}
}

func fromMemberItem(it memberItem) membership.Member {
	return membership.Member{OrgID: it.OrgID, TeamID: it.TeamID, UserID: it.UserID, Role: authz.Role(it.Role),
		Version: it.Version, JoinedAt: it.JoinedAt, UpdatedAt: it.UpdatedAt}
}

func checkMember(m membership.Member) error {
	return checkIDs("orgId", m.OrgID, "teamId", m.TeamID, "userId", m.UserID)
}

// orgUserCheck is a transaction item proving the user belongs to the org.
func (s *DB) orgUserCheck(orgID, userID string, notFound error) (*dynamo.ConditionCheck, onFail) {
	k := orgUserKey(orgID, userID)
	return s.table.Check(attrPK, k.PK).Range(attrSK, k.SK).If(exists), failWith(notFound)
}

// CreateTeam writes the team with memberCount 1 and its creator's owner
// edge, checking the creator is a user of the org, in one transaction.
func (s *Teams) CreateTeam(ctx context.Context, t membership.Team, owner membership.Member) error {
	if err := checkIDs("orgId", t.OrgID, "teamId", t.ID); err != nil {
		return err
	}
	if err := checkMember(owner); err != nil {
		return err
	}
	t.MemberCount = 1
	tx := s.newTx().
		put(s.table.Put(toTeamItem(t)).If(notExists), failWith(errs.E(errs.Conflict, "team_exists", "team ID already taken"))).
		put(s.table.Put(toMemberItem(owner)).If(notExists), failWith(errAlreadyMember))
	tx.update(s.userTeams(owner.OrgID, owner.UserID).AddStringsToSet("teamIds", t.ID), failWith(errNotOrgMember))
	return s.audited(ctx, tx).run(ctx, "create team")
}

// GetTeam reads the team's #METADATA item.
func (s *Teams) GetTeam(ctx context.Context, orgID, teamID string) (membership.Team, error) {
	if err := checkIDs("orgId", orgID, "teamId", teamID); err != nil {
		return membership.Team{}, err
	}
	it, err := getItem[teamItem](ctx, s.DB, teamKey(orgID, teamID), false, errTeamNotFound, "get team")
	return fromTeamItem(it), err
}

// GetTeamWithMembers is AP4: one Query of the team's partition returns the
// #METADATA item first and then the MEMBER# edges.
func (s *Teams) GetTeamWithMembers(ctx context.Context, orgID, teamID string, limit int) (membership.Team, []membership.Member, error) {
	if err := checkIDs("orgId", orgID, "teamId", teamID); err != nil {
		return membership.Team{}, nil, err
	}
	items, _, err := s.query(ctx, listing{partition: teamPK(orgID, teamID)}, limit+1, "")
	if err != nil {
		return membership.Team{}, nil, fmt.Errorf("get team with members: %w", err)
	}
	if len(items) == 0 || entityType(items[0]) != typeTeam {
		return membership.Team{}, nil, errTeamNotFound
	}
	var team teamItem
	if err := dynamo.UnmarshalItem(items[0], &team); err != nil {
		return membership.Team{}, nil, fmt.Errorf("get team with members: %w", err)
	}
	members, err := unmarshalAll(items[1:], fromMemberItem)
	if err != nil {
		return membership.Team{}, nil, fmt.Errorf("get team with members: %w", err)
	}
	return fromTeamItem(team), members, nil
}

// ListTeams pages through an org's teams on GSI1 (ORG#<orgId>, TEAM#).
func (s *Teams) ListTeams(ctx context.Context, orgID string, p page.Request) (page.Result[membership.Team], error) {
	if err := checkIDs("orgId", orgID); err != nil {
		return page.Result[membership.Team]{}, err
	}
	r, err := list(ctx, s.DB, listing{index: gsi1, partition: orgPK(orgID), prefix: prefixTeam}, p, fromTeamItem)
	if err != nil {
		return r, fmt.Errorf("list teams: %w", err)
	}
	return r, nil
}

// UpdateTeam sets name and description if the version is still prev's.
func (s *Teams) UpdateTeam(ctx context.Context, prev, next membership.Team) error {
	if err := checkIDs("orgId", prev.OrgID, "teamId", prev.ID); err != nil {
		return err
	}
	k := teamKey(prev.OrgID, prev.ID)
	u := s.table.Update(attrPK, k.PK).Range(attrSK, k.SK).
		Set("name", next.Name).Set("updatedAt", next.UpdatedAt).Set("version", next.Version)
	if next.Description == "" {
		u = u.Remove("description")
	} else {
		u = u.Set("description", next.Description)
	}
	t := s.newTx().update(u.If("attribute_exists(pk) AND version = ?", prev.Version), versioned(errTeamNotFound))
	return s.audited(ctx, t).run(ctx, "update team")
}

// DeleteTeam removes the team and its edges (and the team from each
// member's team set). Up to 49 members this is one transaction; beyond, the
// edges go first in transactions of their own, each guarded by a check of
// the team's version, and the team item last, so a retry after a crash finds
// and finishes it.
func (s *Teams) DeleteTeam(ctx context.Context, orgID, teamID string, ifVersion int64) error {
	if err := checkIDs("orgId", orgID, "teamId", teamID); err != nil {
		return err
	}
	k := teamKey(orgID, teamID)
	cond, args := "attribute_exists(pk)", []any{}
	if ifVersion > 0 {
		cond, args = "attribute_exists(pk) AND version = ?", []any{ifVersion}
	}
	var edges []memberItem
	err := s.table.Get(attrPK, teamPK(orgID, teamID)).Range(attrSK, dynamo.BeginsWith, prefixMember).
		Project(attrPK, attrSK, "userId").All(ctx, &edges)
	if err != nil {
		return fmt.Errorf("delete team: %w", translate(err))
	}
	// Each edge goes with the team's removal from its user's team set: two
	// items per member. The final transaction also holds the team and the
	// audit event.
	dropEdge := func(t *txn, e memberItem) {
		t.delete(s.table.Delete(attrPK, e.PK).Range(attrSK, e.SK), nil)
		t.update(s.userTeams(orgID, e.UserID).DeleteStringsFromSet("teamIds", teamID), failWith(errUserNotFound))
	}
	for len(edges)*2+2 > maxTxItems {
		t := s.newTx().check(s.table.Check(attrPK, k.PK).Range(attrSK, k.SK).If(cond, args...), versioned(errTeamNotFound))
		n := (maxTxItems - t.len()) / 2
		for _, e := range edges[:n] {
			dropEdge(t, e)
		}
		if err := t.run(ctx, "delete team members"); err != nil {
			return err
		}
		edges = edges[n:]
	}
	t := s.newTx()
	t.delete(s.table.Delete(attrPK, k.PK).Range(attrSK, k.SK).If(cond, args...), versioned(errTeamNotFound))
	for _, e := range edges {
		dropEdge(t, e)
	}
	return s.audited(ctx, t).run(ctx, "delete team")
}

// GetMember is AP3: one GetItem with ConsistentRead on the edge, so a role
// change or removal is seen by the next request.
func (s *Teams) GetMember(ctx context.Context, orgID, teamID, userID string) (membership.Member, error) {
	if err := checkIDs("orgId", orgID, "teamId", teamID, "userId", userID); err != nil {
		return membership.Member{}, err
	}
	it, err := getItem[memberItem](ctx, s.DB, memberKey(orgID, teamID, userID), true, errMemberNotFound, "get member")
	return fromMemberItem(it), err
}

// ListMembers is AP1: Query the team's partition, begins_with(sk, MEMBER#).
func (s *Teams) ListMembers(ctx context.Context, orgID, teamID string, p page.Request) (page.Result[membership.Member], error) {
	if err := checkIDs("orgId", orgID, "teamId", teamID); err != nil {
		return page.Result[membership.Member]{}, err
	}
	r, err := list(ctx, s.DB, listing{partition: teamPK(orgID, teamID), prefix: prefixMember}, p, fromMemberItem)
	if err != nil {
		return r, fmt.Errorf("list members: %w", err)
	}
	return r, nil
}

// ListUserTeams is AP2: one Query on GSI1 USER#<userId>, begins_with
// TEAM#<orgId>#. Team names are not on the edges; BatchGetTeams reads them.
func (s *Teams) ListUserTeams(ctx context.Context, orgID, userID string, p page.Request) (page.Result[membership.Member], error) {
	if err := checkIDs("orgId", orgID, "userId", userID); err != nil {
		return page.Result[membership.Member]{}, err
	}
	r, err := list(ctx, s.DB, listing{index: gsi1, partition: userPK(userID), prefix: userTeamsPrefix(orgID)}, p, fromMemberItem)
	if err != nil {
		return r, fmt.Errorf("list user teams: %w", err)
	}
	return r, nil
}

// BatchGetTeams reads many teams of one org with BatchGetItem.
func (s *Teams) BatchGetTeams(ctx context.Context, orgID string, teamIDs []string) (map[string]membership.Team, error) {
	keys := make([]dynamo.Keyed, 0, len(teamIDs))
	seen := map[string]bool{}
	for _, id := range teamIDs {
		if seen[id] {
			continue
		}
		if err := checkIDs("orgId", orgID, "teamId", id); err != nil {
			return nil, err
		}
		seen[id] = true
		k := teamKey(orgID, id)
		keys = append(keys, dynamo.Keys{k.PK, k.SK})
	}
	var items []teamItem
	if err := s.batchGet(ctx, keys, &items); err != nil {
		return nil, fmt.Errorf("batch get teams: %w", err)
	}
	out := make(map[string]membership.Team, len(items))
	for _, it := range items {
		out[it.ID] = fromTeamItem(it)
	}
	return out, nil
}

// AddMember writes a new edge, bumps the team's memberCount and checks the
// user belongs to the org, in one transaction.
func (s *Teams) AddMember(ctx context.Context, m membership.Member) error {
	if err := checkMember(m); err != nil {
		return err
	}
	tk := teamKey(m.OrgID, m.TeamID)
	t := s.newTx().
		put(s.table.Put(toMemberItem(m)).If(notExists), failWith(errAlreadyMember)).
		update(s.table.Update(attrPK, tk.PK).Range(attrSK, tk.SK).Add("memberCount", 1).If(exists), failWith(errTeamNotFound))
	t.update(s.userTeams(m.OrgID, m.UserID).AddStringsToSet("teamIds", m.TeamID), failWith(errNotOrgMember))
	return s.audited(ctx, t).run(ctx, "add member")
}

// UpdateMember changes an edge's role if its version is still prev's.
func (s *Teams) UpdateMember(ctx context.Context, prev, next membership.Member) error {
	if err := checkMember(next); err != nil {
		return err
	}
	k := memberKey(next.OrgID, next.TeamID, next.UserID)
	t := s.newTx().update(s.table.Update(attrPK, k.PK).Range(attrSK, k.SK).
		Set("role", string(next.Role)).Set("updatedAt", next.UpdatedAt).Set("version", next.Version).
		If("attribute_exists(pk) AND version = ?", prev.Version), versioned(errMemberNotFound))
	return s.audited(ctx, t).run(ctx, "update member")
}

// RemoveMember is AP5: DeleteItem on the edge (its GSI1 row goes with it)
// in one transaction with the memberCount decrement.
func (s *Teams) RemoveMember(ctx context.Context, orgID, teamID, userID string, ifVersion int64) error {
	if err := checkIDs("orgId", orgID, "teamId", teamID, "userId", userID); err != nil {
		return err
	}
	t := s.newTx()
	s.removeEdge(t, orgID, teamID, userID, ifVersion, true)
	return s.audited(ctx, t).run(ctx, "remove member")
}

// removeEdge adds to t the deletion of one edge and its count decrement,
// and, with touchUser, the removal of the team from the user's team set
// (left out when the OrgUser itself is being deleted in t).
func (s *Teams) removeEdge(t *txn, orgID, teamID, userID string, ifVersion int64, touchUser bool) {
	k, tk := memberKey(orgID, teamID, userID), teamKey(orgID, teamID)
	cond, args := "attribute_exists(pk)", []any{}
	if ifVersion > 0 {
		cond, args = "attribute_exists(pk) AND version = ?", []any{ifVersion}
	}
	t.delete(s.table.Delete(attrPK, k.PK).Range(attrSK, k.SK).If(cond, args...), versioned(errMemberNotFound))
	t.update(s.table.Update(attrPK, tk.PK).Range(attrSK, tk.SK).Add("memberCount", -1).If(exists), failWith(errTeamNotFound))
	if touchUser {
		t.update(s.userTeams(orgID, userID).DeleteStringsFromSet("teamIds", teamID), failWith(errUserNotFound))
	}
}

// userTeams starts the update of a user's team set (and edge sequence)
// that goes with every membership edge written or deleted.
func (s *DB) userTeams(orgID, userID string) *dynamo.Update {
	k := orgUserKey(orgID, userID)
	return s.table.Update(attrPK, k.PK).Range(attrSK, k.SK).Add("edgeSeq", 1).If(exists)
}
