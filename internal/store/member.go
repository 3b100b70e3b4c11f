package store

import (
	"context"
	"time"

	"github.com/guregu/dynamo/v2"
	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
)

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

func toMemberItem(m membership.Membership) memberItem {
	k := memberKey(m.OrgID, m.TeamID, m.UserID)
	return memberItem{PK: k.PK, SK: k.SK, Type: typeMembership, GSI1PK: userPK(m.UserID), GSI1SK: userTeamSK(m.OrgID, m.TeamID),
		OrgID: m.OrgID, TeamID: m.TeamID, UserID: m.UserID, Role: string(m.Role), Version: m.Version,
		JoinedAt: m.JoinedAt, UpdatedAt: m.UpdatedAt}
}

func fromMemberItem(it memberItem) membership.Membership {
	return membership.Membership{OrgID: it.OrgID, TeamID: it.TeamID, UserID: it.UserID, Role: authz.Role(it.Role),
		Version: it.Version, JoinedAt: it.JoinedAt, UpdatedAt: it.UpdatedAt}
}

func checkMember(m membership.Membership) error {
	return checkIDs(ids.Resource("orgId", m.OrgID), ids.Resource("teamId", m.TeamID), ids.User("userId", m.UserID))
}

// GetTeamMember is AP3: one consistent GetItem on the edge.
func (s *Teams) GetTeamMember(ctx context.Context, orgID, teamID, userID string) (membership.Membership, error) {
	it, err := getItem[memberItem](ctx, s.DB, memberKey(orgID, teamID, userID), true, errMemberNotFound, "get member",
		ids.Resource("orgId", orgID), ids.Resource("teamId", teamID), ids.User("userId", userID))
	return fromMemberItem(it), err
}

// ListTeamMembers is AP1: Query the team's partition, begins_with(sk, MEMBER#).
func (s *Teams) ListTeamMembers(ctx context.Context, orgID, teamID string, p page.Request) (page.Result[membership.Membership], error) {
	return list(ctx, s.DB, listing{op: "list members", partition: teamPK(orgID, teamID), prefix: prefixMember}, p, fromMemberItem,
		ids.Resource("orgId", orgID), ids.Resource("teamId", teamID))
}

// ListUserTeams is AP2: one Query on GSI1 USER#<userId>, begins_with
// TEAM#<orgId>#. Team names are not on the edges; BatchGetTeams reads them.
func (s *Teams) ListUserTeams(ctx context.Context, orgID, userID string, p page.Request) (page.Result[membership.Membership], error) {
	return list(ctx, s.DB, listing{op: "list user teams", index: gsi1, partition: userPK(userID), prefix: userTeamsPrefix(orgID)}, p, fromMemberItem,
		ids.Resource("orgId", orgID), ids.User("userId", userID))
}

// AddTeamMember writes a new edge with the team's counts and the user's team
// set, in one transaction that needs the team live.
func (s *Teams) AddTeamMember(ctx context.Context, m membership.Membership, ev audit.Event) error {
	tk, mi := teamKey(m.OrgID, m.TeamID), toMemberItem(m)
	u := ownerDeltaCond(s.updateAt(tk).Add("memberCount", 1), ownerDelta("", m.Role))
	t := s.newTx(checkMember(m)).
		put(key{mi.PK, mi.SK}, s.table.Put(mi).If(notExists), failWith(errAlreadyMember)).
		update(tk, u.If(liveItem), failWith(errTeamNotFound))
	// A user being removed from the org joins no team (see leavingStale).
	uk := orgUserKey(m.OrgID, m.UserID)
	t.update(uk, s.updateAt(uk).Add("edgeSeq", 1).AddStringsToSet("teamIds", m.TeamID).
		If("attribute_exists(pk) AND (attribute_not_exists(leaving) OR leaving < ?) AND "+roomForTeam,
			time.Now().Add(-leavingStale).UnixMilli(), membership.MaxTeamsPerUser),
		joinFailed)
	return s.audited(ev, t).run(ctx, "add member")
}

// UpdateTeamMember changes an edge's role at prev's version, with the live
// team's ownerCount, which never drops to 0.
func (s *Teams) UpdateTeamMember(ctx context.Context, prev, next membership.Membership, ev audit.Event) error {
	k, tk := memberKey(next.OrgID, next.TeamID, next.UserID), teamKey(next.OrgID, next.TeamID)
	t := s.newTx(checkMember(next)).update(k, s.updateAt(k).Set("role", string(next.Role)).Set("updatedAt", next.UpdatedAt).Set("version", next.Version).
		If(existsAtVersion, prev.Version), missingOr(errMemberNotFound, errVersion))
	if d := ownerDelta(prev.Role, next.Role); d != 0 {
		t.update(tk, ownerDeltaCond(s.updateAt(tk), d).If(liveItem), goneOr(errTeamNotFound, errLastTeamOwner))
	} else {
		s.teamCheck(t, next.OrgID, next.TeamID, errTeamNotFound)
	}
	return s.audited(ev, t).run(ctx, "update member")
}

// RemoveTeamMember is AP5: the edge's delete with the team's counts and the
// user's team set, in one transaction; the last owner stays.
func (s *Teams) RemoveTeamMember(ctx context.Context, m membership.Membership, ev audit.Event) error {
	k, tk := memberKey(m.OrgID, m.TeamID, m.UserID), teamKey(m.OrgID, m.TeamID)
	t := s.newTx(checkMember(m)).delete(k, s.deleteAt(k).If(existsAtVersion, m.Version), missingOr(errMemberNotFound, errVersion))
	u := s.updateAt(tk).Add("memberCount", -1)
	t.update(tk, ownerDeltaCond(u, ownerDelta(m.Role, "")).If(liveItem), goneOr(errTeamNotFound, errLastTeamOwner))
	s.userTeams(t, m.OrgID, m.UserID, func(u *dynamo.Update) *dynamo.Update { return u.DeleteStringsFromSet("teamIds", m.TeamID) },
		failWith(errUserNotFound))
	return s.audited(ev, t).run(ctx, "remove member")
}

// userTeams adds to t the change of a user's team set (and edge sequence)
// that goes with every membership edge written or deleted.
func (s *DB) userTeams(t *txn, orgID, userID string, change func(*dynamo.Update) *dynamo.Update, f onFail) {
	k := orgUserKey(orgID, userID)
	t.update(k, change(s.updateAt(k).Add("edgeSeq", 1)).If(exists), f)
}
