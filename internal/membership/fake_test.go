package membership_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ifmatch"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/testkit"
)

// The org and the team every test works in.
const (
	orgID  = testkit.OrgID
	teamID = "01BX5ZZKBKACTAV9WEVGEMMVS1"
	team2  = "01BX5ZZKBKACTAV9WEVGEMMVS2"
)

// t0 is when the seeded items were written, t1 (now) what the services'
// clock says (testkit's).
var (
	t0, t1 = testkit.T0, testkit.T1
	now    = testkit.Now
)

// The seeded users of orgID. All but the org admin and owner are org
// members; their role on teamID says what they may do there.
const (
	orgOwner = "u_olivia" // org owner, not on the team
	orgAdmin = "u_ada"    // org admin, not on the team
	tOwner   = "u_tom"    // team owner
	tOwner2  = "u_toni"   // another team owner
	tAdmin   = "u_tara"   // team admin
	tMember  = "u_max"    // team member
	outsider = "u_mia"    // org member, not on the team
	nobody   = "u_nemo"   // not in the org
)

// as is userID acting in orgID with org role.
var as = testkit.As

// onTeam is p with the team role the authorization read found on teamID.
func onTeam(p authz.Principal, teamID string, role authz.Role) authz.Principal {
	p.Team = &authz.TeamRole{TeamID: teamID, Role: role}
	return p
}

// seedEdge is userID's edge on teamID at version 1, as written at t0.
func seedEdge(userID string, role authz.Role) membership.Membership {
	return membership.Membership{OrgID: orgID, TeamID: teamID, UserID: userID, Role: role, JoinedAt: t0, UpdatedAt: t0, Version: 1}
}

// fakeStore is an in-memory membership.Storer (and membership.Users) with
// the rules of the real one that the service relies on: versions, edges
// only for the org's users, the team's last owner. It keeps the audit
// event of every write that succeeds, counts the calls it serves, and can
// play a concurrent writer (BeforeWrite) or fail a method (Fail).
type fakeStore struct {
	users   map[string]tenant.User           // the org's users, by user ID
	teams   map[string]membership.Team       // by team ID
	members map[string]membership.Membership // by teamID/userID

	testkit.Recorder
	// edgeReads counts GetTeamMember reads by the user whose edge is read.
	edgeReads map[string]int
	// deleteIf is the ifVersion each DeleteTeam was given.
	deleteIf []int64
}

// newFake returns a store holding orgID's users and teamID, "Support",
// with its seeded edges (two owners, an admin, a member).
func newFake() *fakeStore {
	s := &fakeStore{users: map[string]tenant.User{}, teams: map[string]membership.Team{}, members: map[string]membership.Membership{},
		Recorder: testkit.NewRecorder(), edgeReads: map[string]int{}}
	roles := map[string]authz.Role{orgOwner: authz.Owner, orgAdmin: authz.Admin, tOwner: authz.Member, tOwner2: authz.Member,
		tAdmin: authz.Member, tMember: authz.Member, outsider: authz.Member}
	for id, r := range roles {
		s.users[id] = tenant.User{OrgID: orgID, UserID: id, Email: id[2:] + "@example.com", Name: id[2:], Role: r, JoinedAt: t0, UpdatedAt: t0, Version: 1}
	}
	s.teams[teamID] = membership.Team{OrgID: orgID, ID: teamID, Name: "Support", Description: "First line", Version: 1, CreatedAt: t0, UpdatedAt: t0}
	for id, r := range map[string]authz.Role{tOwner: authz.Owner, tOwner2: authz.Owner, tAdmin: authz.Admin, tMember: authz.Member} {
		s.putEdge(seedEdge(id, r))
	}
	return s
}

func edgeKey(teamID, userID string) string { return teamID + "/" + userID }

// putEdge stores m and recounts its team.
func (s *fakeStore) putEdge(m membership.Membership) {
	s.members[edgeKey(m.TeamID, m.UserID)] = m
	s.recount(m.TeamID)
}

// recount sets teamID's counts from its edges.
func (s *fakeStore) recount(teamID string) {
	t, ok := s.teams[teamID]
	if !ok {
		return
	}
	t.MemberCount, t.OwnerCount = 0, 0
	for _, m := range s.members {
		if m.TeamID == teamID {
			t.MemberCount++
			if m.Role == authz.Owner {
				t.OwnerCount++
			}
		}
	}
	s.teams[teamID] = t
}

// edge returns a stored edge, failing t if there is none.
func (s *fakeStore) edge(t *testing.T, userID string) membership.Membership {
	t.Helper()
	m, ok := s.members[edgeKey(teamID, userID)]
	if !ok {
		t.Fatalf("%s has no edge on the team", userID)
	}
	return m
}

// change applies f to userID's edge on teamID and bumps its version, as
// another writer's change would.
func (s *fakeStore) change(userID string, f func(*membership.Membership)) {
	m := s.members[edgeKey(teamID, userID)]
	f(&m)
	m.Version++
	s.putEdge(m)
}

// changeTeam applies f to teamID and bumps its version, as another
// writer's change would.
func (s *fakeStore) changeTeam(f func(*membership.Team)) {
	t := s.teams[teamID]
	f(&t)
	t.Version++
	s.teams[teamID] = t
}

// once returns f, made to run only on its first call.
func once(f func()) func() {
	done := false
	return func() {
		if !done {
			done = true
			f()
		}
	}
}

var (
	errTeamNotFound   = errs.E(errs.NotFound, "team_not_found", "team not found")
	errMemberNotFound = errs.E(errs.NotFound, "member_not_found", "the user is not a member of this team")
	errNotOrgMember   = errs.E(errs.Conflict, "not_org_member", "the user is not a user of this organization")
	errLastTeamOwner  = errs.E(errs.Conflict, "last_team_owner", "a team must keep at least one owner")
)

// owners counts teamID's owners.
func (s *fakeStore) owners(teamID string) int { return s.teams[teamID].OwnerCount }

func (s *fakeStore) CreateTeam(ctx context.Context, t membership.Team, owner membership.Membership, ev audit.Event) error {
	if err := s.Write("CreateTeam", ev); err != nil {
		return err
	}
	if _, ok := s.teams[t.ID]; ok {
		return errs.E(errs.Conflict, "team_exists", "team ID already taken")
	}
	if _, ok := s.users[owner.UserID]; !ok {
		return errNotOrgMember
	}
	s.teams[t.ID] = t
	s.putEdge(owner)
	return s.Commit(ev)
}

func (s *fakeStore) GetTeam(ctx context.Context, orgID, teamID string) (membership.Team, error) {
	if err := s.Op("GetTeam"); err != nil {
		return membership.Team{}, err
	}
	t, ok := s.teams[teamID]
	if !ok {
		return membership.Team{}, errTeamNotFound
	}
	return t, nil
}

// teamMembers lists teamID's edges by user ID.
func (s *fakeStore) teamMembers(teamID string) []membership.Membership {
	var out []membership.Membership
	for _, m := range s.members {
		if m.TeamID == teamID {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b membership.Membership) int { return strings.Compare(a.UserID, b.UserID) })
	return out
}

func (s *fakeStore) GetTeamWithMembers(ctx context.Context, orgID, teamID string, limit int) (membership.Team, []membership.Membership, error) {
	if err := s.Op("GetTeamWithMembers"); err != nil {
		return membership.Team{}, nil, err
	}
	t, ok := s.teams[teamID]
	if !ok {
		return membership.Team{}, nil, errTeamNotFound
	}
	ms := s.teamMembers(teamID)
	return t, ms[:min(limit, len(ms))], nil
}

func (s *fakeStore) ListTeams(ctx context.Context, orgID string, p page.Request) (page.Result[membership.Team], error) {
	if err := s.Op("ListTeams"); err != nil {
		return page.Result[membership.Team]{}, err
	}
	var r page.Result[membership.Team]
	for _, t := range s.teams {
		r.Items = append(r.Items, t)
	}
	slices.SortFunc(r.Items, func(a, b membership.Team) int { return strings.Compare(a.ID, b.ID) })
	return r, nil
}

func (s *fakeStore) UpdateTeam(ctx context.Context, prev, next membership.Team, ev audit.Event) error {
	if err := s.Write("UpdateTeam", ev); err != nil {
		return err
	}
	cur, ok := s.teams[prev.ID]
	switch {
	case !ok:
		return errTeamNotFound
	case cur.Version != prev.Version:
		return ifmatch.ErrVersion
	}
	s.teams[prev.ID] = next
	return s.Commit(ev)
}

func (s *fakeStore) DeleteTeam(ctx context.Context, orgID, teamID string, ifVersion int64, ev audit.Event) error {
	if err := s.Write("DeleteTeam", ev); err != nil {
		return err
	}
	s.deleteIf = append(s.deleteIf, ifVersion)
	cur, ok := s.teams[teamID]
	switch {
	case !ok:
		return errTeamNotFound
	case ifVersion > 0 && cur.Version != ifVersion:
		return ifmatch.ErrVersion
	}
	delete(s.teams, teamID)
	for k, m := range s.members {
		if m.TeamID == teamID {
			delete(s.members, k)
		}
	}
	return s.Commit(ev)
}

func (s *fakeStore) GetTeamMember(ctx context.Context, orgID, teamID, userID string) (membership.Membership, error) {
	s.edgeReads[userID]++
	if err := s.Op("GetTeamMember"); err != nil {
		return membership.Membership{}, err
	}
	m, ok := s.members[edgeKey(teamID, userID)]
	if !ok {
		return membership.Membership{}, errMemberNotFound
	}
	return m, nil
}

func (s *fakeStore) ListTeamMembers(ctx context.Context, orgID, teamID string, p page.Request) (page.Result[membership.Membership], error) {
	if err := s.Op("ListTeamMembers"); err != nil {
		return page.Result[membership.Membership]{}, err
	}
	if _, ok := s.teams[teamID]; !ok {
		return page.Result[membership.Membership]{}, errTeamNotFound
	}
	ms := s.teamMembers(teamID)
	return page.Result[membership.Membership]{Items: ms[:min(p.Limit, len(ms))]}, nil
}

func (s *fakeStore) ListUserTeams(ctx context.Context, orgID, userID string, p page.Request) (page.Result[membership.Membership], error) {
	if err := s.Op("ListUserTeams"); err != nil {
		return page.Result[membership.Membership]{}, err
	}
	if _, ok := s.users[userID]; !ok {
		return page.Result[membership.Membership]{}, errs.E(errs.NotFound, "user_not_found", "user not found in this organization")
	}
	var r page.Result[membership.Membership]
	for _, m := range s.members {
		if m.UserID == userID {
			r.Items = append(r.Items, m)
		}
	}
	slices.SortFunc(r.Items, func(a, b membership.Membership) int { return strings.Compare(a.TeamID, b.TeamID) })
	return r, nil
}

func (s *fakeStore) BatchGetTeams(ctx context.Context, orgID string, teamIDs []string) (map[string]membership.Team, error) {
	if err := s.Op("BatchGetTeams"); err != nil {
		return nil, err
	}
	out := map[string]membership.Team{}
	for _, id := range teamIDs {
		if t, ok := s.teams[id]; ok {
			out[id] = t
		}
	}
	return out, nil
}

func (s *fakeStore) AddTeamMember(ctx context.Context, m membership.Membership, ev audit.Event) error {
	if err := s.Write("AddTeamMember", ev); err != nil {
		return err
	}
	if _, ok := s.teams[m.TeamID]; !ok {
		return errTeamNotFound
	}
	if _, ok := s.users[m.UserID]; !ok {
		return errNotOrgMember
	}
	if _, ok := s.members[edgeKey(m.TeamID, m.UserID)]; ok {
		return errs.E(errs.Conflict, "already_member", "the user is already a member of this team")
	}
	s.putEdge(m)
	return s.Commit(ev)
}

func (s *fakeStore) UpdateTeamMember(ctx context.Context, prev, next membership.Membership, ev audit.Event) error {
	if err := s.Write("UpdateTeamMember", ev); err != nil {
		return err
	}
	cur, ok := s.members[edgeKey(prev.TeamID, prev.UserID)]
	switch {
	case !ok:
		return errMemberNotFound
	case cur.Version != prev.Version:
		return ifmatch.ErrVersion
	case prev.Role == authz.Owner && next.Role != authz.Owner && s.owners(prev.TeamID) == 1:
		return errLastTeamOwner
	}
	s.putEdge(next)
	return s.Commit(ev)
}

func (s *fakeStore) RemoveTeamMember(ctx context.Context, m membership.Membership, ev audit.Event) error {
	if err := s.Write("RemoveTeamMember", ev); err != nil {
		return err
	}
	cur, ok := s.members[edgeKey(m.TeamID, m.UserID)]
	switch {
	case !ok:
		return errMemberNotFound
	case cur.Version != m.Version:
		return ifmatch.ErrVersion
	case cur.Role == authz.Owner && s.owners(m.TeamID) == 1:
		return errLastTeamOwner
	}
	delete(s.members, edgeKey(m.TeamID, m.UserID))
	s.recount(m.TeamID)
	return s.Commit(ev)
}

func (s *fakeStore) BatchGetOrgUsers(ctx context.Context, orgID string, userIDs []string) (map[string]tenant.User, error) {
	if err := s.Op("BatchGetOrgUsers"); err != nil {
		return nil, err
	}
	out := map[string]tenant.User{}
	for _, id := range userIDs {
		if u, ok := s.users[id]; ok {
			out[id] = u
		}
	}
	return out, nil
}

// service is a membership.Service over s, reading users from s too.
func service(s *fakeStore) *membership.Service { return membership.NewService(s, s, now) }

// outcome is what a call should end with (testkit.Outcome).
type outcome = testkit.Outcome

var (
	succeeds = testkit.Succeeds
	fails    = testkit.Fails
)

// grant is the authority an event records (testkit.Grant).
type grant = testkit.Grant

// byOrg is a grant of the org role alone.
var byOrg = testkit.ByOrg

// byTeam is a grant of an org member's team role on teamID.
func byTeam(teamFloor authz.Role) grant { return testkit.ByTeam(teamID, teamFloor) }
