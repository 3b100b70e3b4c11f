package tenant_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/deletion"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ifmatch"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/testkit"
)

// orgID is the org every test works in.
const orgID = testkit.OrgID

// t0 is when the seeded items were written, t1 (now) what the services'
// clock says (testkit's).
var (
	t0, t1 = testkit.T0, testkit.T1
	now    = testkit.Now
)

// The seeded users of orgID, by role.
const (
	owner  = "u_olivia" // an owner
	owner2 = "u_oscar"  // another owner
	admin  = "u_ada"    // an admin
	admin2 = "u_alan"   // another admin
	member = "u_max"    // a member
	other  = "u_mia"    // another member
	nobody = "u_nemo"   // not in the org
)

// seedUser is a user of orgID at version 1, as written at t0.
func seedUser(userID string, role authz.Role) tenant.User {
	return tenant.User{OrgID: orgID, UserID: userID, Email: strings.TrimPrefix(userID, "u_") + "@example.com",
		Name: strings.ToUpper(userID[2:3]) + userID[3:], Role: role, JoinedAt: t0, UpdatedAt: t0, Version: 1}
}

// seedUsers are the users of the org newFake seeds.
func seedUsers() []tenant.User {
	return []tenant.User{seedUser(owner, authz.Owner), seedUser(owner2, authz.Owner), seedUser(admin, authz.Admin),
		seedUser(admin2, authz.Admin), seedUser(member, authz.Member), seedUser(other, authz.Member)}
}

// as is userID acting in orgID with role.
var as = testkit.As

// fakeStore is an in-memory tenant.Storer with the rules of the real one
// that the service relies on: versions, unique user IDs and emails, the
// last owner. It keeps the audit event of every write that succeeds,
// counts the calls it serves, and can play a concurrent writer
// (BeforeWrite) or fail a method (Fail).
type fakeStore struct {
	orgs  map[string]tenant.Org
	users map[string]tenant.User // by orgID/userID
	// offboarding holds the orgs being offboarded, which every read but
	// GetOffboarding finds absent.
	offboarding map[string]deletion.Job

	testkit.Recorder

	// startedIf is the ifVersion each StartOffboarding was given; started
	// says what StartOffboarding answers; released counts releases.
	startedIf []int64
	started   bool
	released  int
	cutOffErr error
}

// newFake returns a store holding orgID, named Acme at version 1, with
// users.
func newFake(users ...tenant.User) *fakeStore {
	s := &fakeStore{orgs: map[string]tenant.Org{}, users: map[string]tenant.User{}, offboarding: map[string]deletion.Job{},
		Recorder: testkit.NewRecorder(), started: true}
	s.orgs[orgID] = tenant.Org{ID: orgID, Name: "Acme", Version: 1, CreatedAt: t0, UpdatedAt: t0}
	for _, u := range users {
		s.users[userKey(u.OrgID, u.UserID)] = u
	}
	return s
}

func userKey(orgID, userID string) string { return orgID + "/" + userID }

var (
	errOrgNotFound  = authz.ErrOrgNotFound
	errUserNotFound = errs.E(errs.NotFound, "user_not_found", "user not found in this organization")
)

// owners counts the owners of orgID.
func (s *fakeStore) owners(orgID string) int {
	n := 0
	for _, u := range s.users {
		if u.OrgID == orgID && u.Role == authz.Owner {
			n++
		}
	}
	return n
}

// emailTaken reports whether a user of orgID other than userID claims email.
func (s *fakeStore) emailTaken(orgID, userID, email string) bool {
	for _, u := range s.users {
		if u.OrgID == orgID && u.UserID != userID && tenant.NormalizeEmail(u.Email) == tenant.NormalizeEmail(email) {
			return true
		}
	}
	return false
}

// user returns a copy of a stored user, failing t if there is none.
func (s *fakeStore) user(t *testing.T, userID string) tenant.User {
	t.Helper()
	u, ok := s.users[userKey(orgID, userID)]
	if !ok {
		t.Fatalf("user %s is not stored", userID)
	}
	return u
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

// change applies f to a stored user and bumps its version, as another
// writer's change would.
func (s *fakeStore) change(userID string, f func(*tenant.User)) {
	k := userKey(orgID, userID)
	u := s.users[k]
	f(&u)
	u.Version++
	s.users[k] = u
}

// changeOrg applies f to orgID and bumps its version, as another writer's
// change would.
func (s *fakeStore) changeOrg(f func(*tenant.Org)) {
	o := s.orgs[orgID]
	f(&o)
	o.Version++
	s.orgs[orgID] = o
}

func (s *fakeStore) CreateOrg(ctx context.Context, o tenant.Org, owner tenant.User, ev audit.Event) error {
	if err := s.Write("CreateOrg", ev); err != nil {
		return err
	}
	if _, ok := s.orgs[o.ID]; ok {
		return errs.E(errs.Conflict, "org_exists", "organization ID already taken")
	}
	s.orgs[o.ID] = o
	s.users[userKey(o.ID, owner.UserID)] = owner
	return s.Commit(ev)
}

func (s *fakeStore) GetOrg(ctx context.Context, orgID string) (tenant.Org, error) {
	if err := s.Op("GetOrg"); err != nil {
		return tenant.Org{}, err
	}
	o, ok := s.orgs[orgID]
	if _, off := s.offboarding[orgID]; !ok || off {
		return tenant.Org{}, errOrgNotFound
	}
	return o, nil
}

func (s *fakeStore) GetOrgWithUsers(ctx context.Context, orgID string, limit int) (tenant.Org, []tenant.User, error) {
	if err := s.Op("GetOrgWithUsers"); err != nil {
		return tenant.Org{}, nil, err
	}
	o, ok := s.orgs[orgID]
	if _, off := s.offboarding[orgID]; !ok || off {
		return tenant.Org{}, nil, errOrgNotFound
	}
	us := s.orgUsers(orgID)
	return o, us[:min(limit, len(us))], nil
}

// orgUsers lists the users of orgID by user ID.
func (s *fakeStore) orgUsers(orgID string) []tenant.User {
	var out []tenant.User
	for _, u := range s.users {
		if u.OrgID == orgID {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b tenant.User) int { return strings.Compare(a.UserID, b.UserID) })
	return out
}

func (s *fakeStore) UpdateOrg(ctx context.Context, prev, next tenant.Org, ev audit.Event) error {
	if err := s.Write("UpdateOrg", ev); err != nil {
		return err
	}
	cur, ok := s.orgs[prev.ID]
	switch {
	case !ok:
		return errOrgNotFound
	case cur.Version != prev.Version:
		return ifmatch.ErrVersion
	}
	s.orgs[prev.ID] = next
	return s.Commit(ev)
}

func (s *fakeStore) ListOrgs(ctx context.Context, userID string, p page.Request) (page.Result[tenant.OrgMembership], error) {
	if err := s.Op("ListOrgs"); err != nil {
		return page.Result[tenant.OrgMembership]{}, err
	}
	var r page.Result[tenant.OrgMembership]
	for _, u := range s.users {
		if u.UserID == userID {
			r.Items = append(r.Items, tenant.OrgMembership{OrgID: u.OrgID, UserName: u.Name, Role: u.Role, JoinedAt: u.JoinedAt})
		}
	}
	slices.SortFunc(r.Items, func(a, b tenant.OrgMembership) int { return strings.Compare(a.OrgID, b.OrgID) })
	return r, nil
}

func (s *fakeStore) BatchGetOrgs(ctx context.Context, orgIDs []string) (map[string]tenant.Org, error) {
	if err := s.Op("BatchGetOrgs"); err != nil {
		return nil, err
	}
	out := map[string]tenant.Org{}
	for _, id := range orgIDs {
		if o, ok := s.orgs[id]; ok {
			if _, off := s.offboarding[id]; !off {
				out[id] = o
			}
		}
	}
	return out, nil
}

func (s *fakeStore) GetOrgUser(ctx context.Context, orgID, userID string) (tenant.User, error) {
	if err := s.Op("GetOrgUser"); err != nil {
		return tenant.User{}, err
	}
	u, ok := s.users[userKey(orgID, userID)]
	if !ok {
		return tenant.User{}, errUserNotFound
	}
	return u, nil
}

func (s *fakeStore) ListOrgUsers(ctx context.Context, orgID string, p page.Request) (page.Result[tenant.User], error) {
	if err := s.Op("ListOrgUsers"); err != nil {
		return page.Result[tenant.User]{}, err
	}
	us := s.orgUsers(orgID)
	return page.Result[tenant.User]{Items: us[:min(p.Limit, len(us))]}, nil
}

func (s *fakeStore) BatchGetOrgUsers(ctx context.Context, orgID string, userIDs []string) (map[string]tenant.User, error) {
	if err := s.Op("BatchGetOrgUsers"); err != nil {
		return nil, err
	}
	out := map[string]tenant.User{}
	for _, id := range userIDs {
		if u, ok := s.users[userKey(orgID, id)]; ok {
			out[id] = u
		}
	}
	return out, nil
}

func (s *fakeStore) AddOrgUser(ctx context.Context, u tenant.User, ev audit.Event) error {
	if err := s.Write("AddOrgUser", ev); err != nil {
		return err
	}
	if _, ok := s.orgs[u.OrgID]; !ok {
		return errOrgNotFound
	}
	if _, ok := s.users[userKey(u.OrgID, u.UserID)]; ok {
		return errs.E(errs.Conflict, "user_exists", "the user is already in this organization")
	}
	if s.emailTaken(u.OrgID, u.UserID, u.Email) {
		return errs.E(errs.Conflict, "email_taken", "another user of this organization has that email")
	}
	s.users[userKey(u.OrgID, u.UserID)] = u
	return s.Commit(ev)
}

// errLastOwner is the real store's answer to the last owner's demotion or
// removal.
var errLastOwner = errs.E(errs.Conflict, "last_owner", "an organization must keep at least one owner")

func (s *fakeStore) UpdateOrgUser(ctx context.Context, prev, next tenant.User, ev audit.Event) error {
	if err := s.Write("UpdateOrgUser", ev); err != nil {
		return err
	}
	k := userKey(prev.OrgID, prev.UserID)
	cur, ok := s.users[k]
	switch {
	case !ok:
		return errUserNotFound
	case cur.Version != prev.Version:
		return ifmatch.ErrVersion
	case s.emailTaken(next.OrgID, next.UserID, next.Email):
		return errs.E(errs.Conflict, "email_taken", "another user of this organization has that email")
	case prev.Role == authz.Owner && next.Role != authz.Owner && s.owners(prev.OrgID) == 1:
		return errLastOwner
	}
	s.users[k] = next
	return s.Commit(ev)
}

func (s *fakeStore) RemoveOrgUser(ctx context.Context, u tenant.User, ev audit.Event) error {
	if err := s.Write("RemoveOrgUser", ev); err != nil {
		return err
	}
	k := userKey(u.OrgID, u.UserID)
	cur, ok := s.users[k]
	switch {
	case !ok:
		return errUserNotFound
	case cur.Version != u.Version:
		return ifmatch.ErrVersion
	case cur.Role == authz.Owner && s.owners(u.OrgID) == 1:
		return errLastOwner
	}
	delete(s.users, k)
	return s.Commit(ev)
}

func (s *fakeStore) StartOffboarding(ctx context.Context, orgID, actorID string, ifVersion int64, owner string, now time.Time) (deletion.Job, bool, error) {
	if err := s.Op("StartOffboarding"); err != nil {
		return deletion.Job{}, false, err
	}
	s.startedIf = append(s.startedIf, ifVersion)
	if j, ok := s.offboarding[orgID]; ok {
		return j, false, nil
	}
	o, ok := s.orgs[orgID]
	switch {
	case !ok:
		return deletion.Job{}, false, errOrgNotFound
	case ifVersion > 0 && o.Version != ifVersion:
		return deletion.Job{}, false, ifmatch.ErrVersion
	}
	j := deletion.Job{Kind: deletion.Org, OrgID: orgID, Since: now, By: actorID, Phase: "cutoff", LeaseOwner: owner}
	s.offboarding[orgID] = j
	return j, s.started, nil
}

func (s *fakeStore) CutOff(ctx context.Context, orgID, owner string) error {
	if err := s.Op("CutOff"); err != nil {
		return err
	}
	if s.cutOffErr != nil {
		return s.cutOffErr
	}
	j := s.offboarding[orgID]
	j.Phase = "teams"
	s.offboarding[orgID] = j
	return nil
}

func (s *fakeStore) ReleaseOffboarding(ctx context.Context, orgID, owner string) error {
	s.released++
	return s.Op("ReleaseOffboarding")
}

func (s *fakeStore) GetOffboarding(ctx context.Context, orgID string) (deletion.Job, error) {
	if err := s.Op("GetOffboarding"); err != nil {
		return deletion.Job{}, err
	}
	j, ok := s.offboarding[orgID]
	if !ok {
		return deletion.Job{}, errs.E(errs.NotFound, "offboarding_not_found", "the organization is not being offboarded")
	}
	return j, nil
}

// outcome is what a call should end with (testkit.Outcome).
type outcome = testkit.Outcome

var (
	succeeds = testkit.Succeeds
	fails    = testkit.Fails
)
