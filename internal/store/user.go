package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/guregu/dynamo/v2"
	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
)

type orgUserItem struct {
	PK        string    `dynamo:"pk,hash"`
	SK        string    `dynamo:"sk,range"`
	Type      string    `dynamo:"type"`
	GSI1PK    string    `dynamo:"gsi1pk"` // USER#<userId>: a user's orgs
	GSI1SK    string    `dynamo:"gsi1sk"` // ORG#<orgId>
	GSI2PK    string    `dynamo:"gsi2pk"` // ORG#<orgId>#USER#<userId>: user + their tickets
	GSI2SK    string    `dynamo:"gsi2sk"` // USER#<userId>: sorts after TICKET#, read first backwards
	OrgID     string    `dynamo:"orgId"`
	UserID    string    `dynamo:"userId"`
	Email     string    `dynamo:"email"`
	Name      string    `dynamo:"name"`
	Role      string    `dynamo:"role"`
	Version   int64     `dynamo:"version"`
	JoinedAt  time.Time `dynamo:"joinedAt"`
	UpdatedAt time.Time `dynamo:"updatedAt"`
	AddedBy   string    `dynamo:"addedBy,omitempty"`  // org.User.AddedBy
	Deleting  bool      `dynamo:"deleting,omitempty"` // on the edge of the owner offboarding the org
	// TeamIDs (the user's teams in this org) and EdgeSeq (a count of their
	// changes) move with the membership edges, so a removal reads the edges
	// consistently from here, not from GSI1, and knows none changed since.
	TeamIDs []string `dynamo:"teamIds,set,omitempty"`
	EdgeSeq int64    `dynamo:"edgeSeq,omitempty"`
	// AcceptedToken is the hash of the invitation token the user joined
	// with: a retried accept of it answers this membership, not a 404.
	AcceptedToken string `dynamo:"acceptedToken,omitempty"`
}

func toOrgUserItem(u tenant.User) orgUserItem {
	k := orgUserKey(u.OrgID, u.UserID)
	return orgUserItem{PK: k.PK, SK: k.SK, Type: typeOrgUser,
		GSI1PK: userPK(u.UserID), GSI1SK: orgPK(u.OrgID),
		GSI2PK: orgUserPK(u.OrgID, u.UserID), GSI2SK: userSK(u.UserID),
		OrgID: u.OrgID, UserID: u.UserID, Email: u.Email, Name: u.Name, Role: string(u.Role),
		Version: u.Version, JoinedAt: u.JoinedAt, UpdatedAt: u.UpdatedAt, AddedBy: u.AddedBy}
}

func fromOrgUserItem(it orgUserItem) tenant.User {
	return tenant.User{OrgID: it.OrgID, UserID: it.UserID, Email: it.Email, Name: it.Name,
		Role: authz.Role(it.Role), Version: it.Version, JoinedAt: it.JoinedAt, UpdatedAt: it.UpdatedAt, AddedBy: it.AddedBy}
}

// claimItem reserves an email within an org: its key is the email.
type claimItem struct {
	PK     string `dynamo:"pk,hash"`
	SK     string `dynamo:"sk,range"`
	Type   string `dynamo:"type"`
	GSI1PK string `dynamo:"gsi1pk"` // ORG#<orgId>: offboarding finds every claim
	GSI1SK string `dynamo:"gsi1sk"` // EMAIL#<normalizedEmail>
	OrgID  string `dynamo:"orgId"`
	UserID string `dynamo:"userId"`
	Email  string `dynamo:"email"`
}

func toClaimItem(u tenant.User) claimItem {
	email := tenant.NormalizeEmail(u.Email)
	k := claimKey(u.OrgID, email)
	return claimItem{PK: k.PK, SK: k.SK, Type: typeEmailClaim, GSI1PK: orgPK(u.OrgID), GSI1SK: claimSK(email),
		OrgID: u.OrgID, UserID: u.UserID, Email: email}
}

func (c claimItem) key() key { return key{c.PK, c.SK} }

func checkUser(u tenant.User) error {
	if err := checkIDs(ids.Resource("orgId", u.OrgID), ids.User("userId", u.UserID)); err != nil {
		return err
	}
	if u.Email == "" {
		return errs.InvalidField("email", "required", "must not be empty")
	}
	if strings.ContainsFunc(u.Email, func(c rune) bool { return c == '#' || c < 0x20 }) {
		return errs.InvalidField("email", "invalid_email", "must not contain '#' or control characters")
	}
	return nil
}

// GetOrgUser reads one OrgUser edge with a consistent GetItem.
func (s *Orgs) GetOrgUser(ctx context.Context, orgID, userID string) (tenant.User, error) {
	it, err := getItem[orgUserItem](ctx, s.DB, orgUserKey(orgID, userID), true, errUserNotFound, "get user",
		ids.Resource("orgId", orgID), ids.User("userId", userID))
	return fromOrgUserItem(it), err
}

// ListOrgUsers pages through the org's users: Query begins_with(sk, USER#).
func (s *Orgs) ListOrgUsers(ctx context.Context, orgID string, p page.Request) (page.Result[tenant.User], error) {
	return list(ctx, s.DB, listing{op: "list users", partition: orgPK(orgID), prefix: prefixUser}, p, fromOrgUserItem, ids.Resource("orgId", orgID))
}

// BatchGetOrgUsers reads many OrgUsers of one org with BatchGetItem.
func (s *Orgs) BatchGetOrgUsers(ctx context.Context, orgID string, userIDs []string) (map[string]tenant.User, error) {
	userIDs = slices.DeleteFunc(slices.Clone(userIDs), func(id string) bool { return id == "" }) // no assignee, say
	return batchGetByID(ctx, s.DB, userIDs, func(id string) error { return ids.User("userId", id) },
		func(id string) key { return orgUserKey(orgID, id) }, false, "batch get users",
		func(it orgUserItem) (string, tenant.User, bool) { return it.UserID, fromOrgUserItem(it), true }, ids.Resource("orgId", orgID))
}

// AddOrgUser writes the OrgUser and its email claim in one transaction that
// also checks the org exists (and counts a new owner).
func (s *Orgs) AddOrgUser(ctx context.Context, u tenant.User, ev audit.Event) error {
	t := s.newTx(checkUser(u))
	s.orgGuard(t, u.OrgID, ownerDelta("", u.Role))
	c := toClaimItem(u)
	t.put(orgUserKey(u.OrgID, u.UserID), s.table.Put(toOrgUserItem(u)).If(notExists), failWith(errUserExists)).
		put(c.key(), s.table.Put(c).If(notExists), failWith(errEmailTaken))
	return s.audited(ev, t).run(ctx, "add user")
}

// UpdateOrgUser replaces prev with next at its version, with the email
// claims and the org's owner count, in one transaction.
func (s *Orgs) UpdateOrgUser(ctx context.Context, prev, next tenant.User, ev audit.Event) error {
	if err := checkUser(next); err != nil {
		return err
	}
	if prev.OrgID != next.OrgID || prev.UserID != next.UserID {
		return fmt.Errorf("update user: prev and next are different users")
	}
	k := orgUserKey(next.OrgID, next.UserID)
	t := s.newTx()
	t.update(k, s.updateAt(k).Set("email", next.Email).Set("name", next.Name).Set("role", string(next.Role)).
		Set("updatedAt", next.UpdatedAt).Set("version", next.Version).If(existsAtVersion, prev.Version), missingOr(errUserNotFound, errVersion))
	if tenant.NormalizeEmail(prev.Email) != tenant.NormalizeEmail(next.Email) {
		old, c := toClaimItem(prev), toClaimItem(next)
		t.delete(old.key(), s.deleteAt(old.key()), nil)
		t.put(c.key(), s.table.Put(c).If(notExists), failWith(errEmailTaken))
	}
	if d := ownerDelta(prev.Role, next.Role); d != 0 {
		s.orgGuard(t, next.OrgID, d)
	}
	return s.audited(ev, t).run(ctx, "update user")
}

// RemoveOrgUser deletes the OrgUser, its claim, and the user's team edges
// (with each team's counts), in transactions conditioned on what it read
// (version, edge sequence, each edge's role): a concurrent change makes it
// read again. A team's last owner is refused (last_team_owner) before any
// write; more teams than one transaction holds go first, in their own.
func (s *Orgs) RemoveOrgUser(ctx context.Context, u tenant.User, ev audit.Event) error {
	if err := checkUser(u); err != nil {
		return err
	}
	k := orgUserKey(u.OrgID, u.UserID)
	marked := false
	for range maxRemoveAttempts {
		cur, err := getItem[orgUserItem](ctx, s.DB, k, true, errUserNotFound, "remove user")
		if err != nil {
			return err
		}
		if cur.Version != u.Version {
			return errVersion
		}
		if u.Role == authz.Owner {
			// The org's own last-owner rule first (the transactions check
			// it too): it is the error that explains the refusal.
			org, err := getItem[orgItem](ctx, s.DB, orgKey(u.OrgID), true, errOrgNotFound, "remove user")
			if err != nil {
				return err
			}
			if org.OwnerCount <= 1 {
				return errLastOwner
			}
		}
		edges, err := s.userEdges(ctx, u.OrgID, u.UserID, cur.TeamIDs)
		if err != nil {
			return fmt.Errorf("remove user: %w", err)
		}
		for _, e := range edges {
			if e.lastOwner() {
				return errs.E(errs.Conflict, "last_team_owner",
					"the user is the last owner of team %s: make another member owner first, or delete the team", e.teamID)
			}
		}
		err = s.removeUser(ctx, u, cur.EdgeSeq, edges, ev)
		if err != errRetry {
			return err
		}
		if !marked {
			// Someone keeps changing the user's teams: mark the user leaving,
			// so that no team takes them any more and the reads converge.
			err := s.updateAt(k).Set("leaving", time.Now().UnixMilli()).If(existsAtVersion, u.Version).Run(ctx)
			if err := condErr(err, errVersion, "remove user"); err != nil {
				return err
			}
			marked = true
		}
	}
	return errBusy
}

// leavingStale is how long a removal's leaving mark keeps teams from taking
// the user: one that died after marking stops counting then.
const leavingStale = time.Minute

// maxRemoveAttempts bounds RemoveOrgUser's re-reads.
const maxRemoveAttempts = 8

// userEdge is one team in a user's team set, as read for their removal.
type userEdge struct {
	teamID string
	team   *deletionItem // nil: the team is gone
	edge   *deletionItem // nil: no edge (a stale team set entry)
}

func (e userEdge) lastOwner() bool {
	return e.team != nil && !e.team.Deleting && e.edge != nil && e.edge.Role == string(authz.Owner) && e.team.OwnerCount <= 1
}

// userEdges reads, consistently, each team of teamIDs and the user's edge.
func (s *DB) userEdges(ctx context.Context, orgID, userID string, teamIDs []string) ([]userEdge, error) {
	keys := make([]dynamo.Keyed, 0, 2*len(teamIDs))
	for _, t := range teamIDs {
		if err := checkIDs(ids.Resource("teamId", t)); err != nil {
			return nil, err
		}
		tk, mk := teamKey(orgID, t), memberKey(orgID, t, userID)
		keys = append(keys, dynamo.Keys{tk.PK, tk.SK}, dynamo.Keys{mk.PK, mk.SK})
	}
	var items []deletionItem
	if err := s.batchGet(ctx, keys, true, &items); err != nil {
		return nil, err
	}
	teams, edges := map[string]*deletionItem{}, map[string]*deletionItem{}
	for i, it := range items {
		switch it.Type {
		case typeTeam:
			teams[it.TeamID] = &items[i]
		case typeMembership:
			edges[it.TeamID] = &items[i]
		}
	}
	out := make([]userEdge, len(teamIDs))
	for i, t := range teamIDs {
		out[i] = userEdge{teamID: t, team: teams[t], edge: edges[t]}
	}
	return out, nil
}

// dropUserEdge adds to t the removal of the user's edge in one team (as
// read: same role) with the team's counts, or, the team gone, with a check
// that it still is.
func (s *DB) dropUserEdge(t *txn, orgID, userID string, e userEdge) {
	if e.edge == nil {
		return
	}
	mk, tk := memberKey(orgID, e.teamID, userID), teamKey(orgID, e.teamID)
	t.delete(mk, s.deleteAt(mk).If("attribute_exists(pk) AND $ = ?", "role", e.edge.Role), retryOn)
	if e.team == nil {
		t.check(tk, s.checkAt(tk).If(notExists), retryOn)
		return
	}
	u := s.updateAt(tk).Add("memberCount", -1)
	t.update(tk, ownerDeltaCond(u, ownerDelta(authz.Role(e.edge.Role), "")).If(exists), func(old map[string]types.AttributeValue) error {
		if old != nil && old["deleting"] == nil && e.edge.Role == string(authz.Owner) {
			return errLastTeamOwner
		}
		return errRetry
	})
}

// removeUser runs the removal's transactions for the state read at seq.
func (s *Orgs) removeUser(ctx context.Context, u tenant.User, seq int64, edges []userEdge, ev audit.Event) error {
	k := orgUserKey(u.OrgID, u.UserID)
	changed := missingOr(errUserNotFound, errRetry)
	const fixed = 5 // user, claim, org guard, audit event, actor fence
	for len(edges)*2+fixed > maxTxItems {
		t := s.newTx()
		n := min(len(edges), (maxTxItems-2)/2) // the user guard and the owner check
		chunk := edges[:n]
		ids := make([]string, n)
		for i, e := range chunk {
			ids[i] = e.teamID
		}
		t.update(k, s.updateAt(k).DeleteStringsFromSet("teamIds", ids...).Add("edgeSeq", 1).
			If("attribute_exists(pk) AND version = ? AND edgeSeq = ?", u.Version, seq), changed)
		if u.Role == authz.Owner {
			ok := orgKey(u.OrgID)
			t.check(ok, s.checkAt(ok).If(liveItem+" AND ownerCount > ?", 1), goneOr(errOrgNotFound, errLastOwner))
		}
		for _, e := range chunk {
			s.dropUserEdge(t, u.OrgID, u.UserID, e)
		}
		if err := t.run(ctx, "remove user's memberships"); err != nil {
			return err
		}
		seq++
		edges = edges[n:]
	}
	claim := toClaimItem(u)
	t := s.newTx()
	t.delete(k, s.deleteAt(k).
		If("attribute_exists(pk) AND version = ? AND (attribute_not_exists(edgeSeq) OR edgeSeq = ?)", u.Version, seq), changed)
	t.delete(claim.key(), s.deleteAt(claim.key()), nil)
	s.orgGuard(t, u.OrgID, ownerDelta(u.Role, ""))
	for _, e := range edges {
		s.dropUserEdge(t, u.OrgID, u.UserID, e)
	}
	return s.audited(ev, t).run(ctx, "remove user")
}
