package membership

import (
	"context"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/clock"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/ifmatch"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/validate"
)

// Service applies team and membership rules on top of a Storer.
type Service struct {
	store Storer
	users Users
	ids   *ids.Generator
	now   clock.Clock
}

// NewService returns a Service over s, embedding users from users; now may
// be nil for the system clock.
func NewService(s Storer, users Users, now clock.Clock) *Service {
	now = clock.Or(now)
	return &Service{store: s, users: users, ids: ids.NewGenerator(now), now: now}
}

// Patch is a partial update of a team; nil fields stay as they are.
type Patch struct {
	Name        *string
	Description *string
}

func validateTeam(t Team) error {
	if err := validate.Name("name", t.Name, MaxNameLen); err != nil {
		return err
	}
	return validate.Text("description", t.Description, 0, MaxDescriptionLen, true)
}

func (s *Service) event(ctx context.Context, actor audit.Actor, action, targetType, targetID string, at time.Time, changes []audit.Change) audit.Event {
	return audit.NewEvent(ctx, s.ids.NewAt(at), actor, action, audit.Target{Type: targetType, ID: targetID}, at, changes)
}

// authorizeTeam decides a team-scoped action and returns the facts it used
// and the grant. The caller's team edge is read (one consistent GetItem,
// AP3) only when the org role does not settle it already.
func (s *Service) authorizeTeam(ctx context.Context, p authz.Principal, a authz.Action, teamID string) (authz.Facts, authz.Grant, error) {
	f := authz.Facts{TeamID: teamID}
	if authz.NeedsTeamRole(p, a) {
		m, err := s.store.GetTeamMember(ctx, p.OrgID, teamID, p.UserID)
		switch {
		case err == nil:
			f.TeamRole = m.Role
		case !errs.Is(err, errs.NotFound):
			return f, authz.Grant{}, err
		}
	}
	g, err := authz.Permit(p, a, f)
	return f, g, err
}

// CreateTeam creates a team whose owner is the caller (org admin+).
// teamID, when set, is the team's ID (an idempotent request's, see
// idempotency.Record.ResourceID); otherwise one is minted. If the team
// exists, it was created already: it is returned as is.
func (s *Service) CreateTeam(ctx context.Context, p authz.Principal, teamID, name, description string) (Team, error) {
	g, err := authz.Permit(p, authz.TeamCreate, authz.Facts{})
	if err != nil {
		return Team{}, err
	}
	now := s.now()
	if teamID == "" {
		teamID = s.ids.New()
	}
	t := Team{OrgID: p.OrgID, ID: teamID, Name: name, Description: description, MemberCount: 1, OwnerCount: 1,
		Version: 1, CreatedAt: now, UpdatedAt: now}
	if err := validateTeam(t); err != nil {
		return Team{}, err
	}
	owner := Membership{OrgID: p.OrgID, TeamID: t.ID, UserID: p.UserID, Role: authz.Owner, JoinedAt: now, UpdatedAt: now, Version: 1}
	ev := s.event(ctx, audit.By(p, g), "team.create", "team", t.ID, now, audit.Diff(
		audit.F("name", nil, t.Name), audit.F("description", nil, t.Description)))
	if err := s.store.CreateTeam(ctx, t, owner, ev); err != nil {
		if errs.CodeOf(err) == "team_exists" {
			return s.store.GetTeam(ctx, p.OrgID, t.ID)
		}
		return Team{}, err
	}
	return t, nil
}

// GetTeam returns a team (first: as the caller read it already; nil: read
// it); withMembers adds its first members, from the same Query (AP4) when
// the team is read here.
func (s *Service) GetTeam(ctx context.Context, p authz.Principal, teamID string, first *Team, withMembers bool) (Team, []Membership, error) {
	if err := authz.Authorize(p, authz.TeamRead, authz.Facts{}); err != nil {
		return Team{}, nil, err
	}
	switch {
	case withMembers && first == nil:
		return s.store.GetTeamWithMembers(ctx, p.OrgID, teamID, page.MaxLimit)
	case first == nil:
		t, err := s.store.GetTeam(ctx, p.OrgID, teamID)
		return t, nil, err
	case !withMembers:
		return *first, nil, nil
	}
	ms, err := s.store.ListTeamMembers(ctx, p.OrgID, teamID, page.Request{Limit: page.MaxLimit})
	return *first, ms.Items, err
}

// ListTeams pages through the org's teams.
func (s *Service) ListTeams(ctx context.Context, p authz.Principal, pr page.Request) (page.Result[Team], error) {
	if err := authz.Authorize(p, authz.TeamRead, authz.Facts{}); err != nil {
		return page.Result[Team]{}, err
	}
	return s.store.ListTeams(ctx, p.OrgID, pr)
}

// BatchGetTeams reads many of the org's teams at once (one BatchGetItem
// per 100 distinct IDs); teams that do not exist are left out of the map.
func (s *Service) BatchGetTeams(ctx context.Context, p authz.Principal, teamIDs []string) (map[string]Team, error) {
	if err := authz.Authorize(p, authz.TeamRead, authz.Facts{}); err != nil {
		return nil, err
	}
	return s.store.BatchGetTeams(ctx, p.OrgID, teamIDs)
}

// UpdateTeam changes a team's name or description; first is the team as
// the caller read it already (nil: read it).
func (s *Service) UpdateTeam(ctx context.Context, p authz.Principal, teamID string, first *Team, patch Patch, ifMatch ifmatch.Match) (Team, error) {
	if patch.Name == nil && patch.Description == nil {
		return Team{}, errs.E(errs.Invalid, "empty_patch", "nothing to change")
	}
	_, g, err := s.authorizeTeam(ctx, p, authz.TeamUpdate, teamID)
	if err != nil {
		return Team{}, err
	}
	read := func(ctx context.Context) (Team, error) { return s.store.GetTeam(ctx, p.OrgID, teamID) }
	return ifmatch.Retry(ctx, ifMatch, first, read, func(prev Team) (Team, error) {
		if err := ifMatch.Check(prev.Version); err != nil {
			return Team{}, err
		}
		next := prev
		set(&next.Name, patch.Name)
		set(&next.Description, patch.Description)
		if err := validateTeam(next); err != nil {
			return Team{}, err
		}
		next.Version, next.UpdatedAt = prev.Version+1, s.now()
		ev := s.event(ctx, audit.By(p, g), "team.update", "team", teamID, next.UpdatedAt, audit.Diff(
			audit.F("name", prev.Name, next.Name), audit.F("description", prev.Description, next.Description)))
		return audit.Update(ctx, s.store.UpdateTeam, prev, next, ev)
	})
}

// set sets *dst to *v when v is not nil.
func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// DeleteTeam deletes a team and its memberships; first is the team as the
// caller read it already (nil: read it).
func (s *Service) DeleteTeam(ctx context.Context, p authz.Principal, teamID string, first *Team, ifMatch ifmatch.Match) error {
	_, g, err := s.authorizeTeam(ctx, p, authz.TeamDelete, teamID)
	if err != nil {
		return err
	}
	read := func(ctx context.Context) (Team, error) { return s.store.GetTeam(ctx, p.OrgID, teamID) }
	_, err = ifmatch.Retry(ctx, ifMatch, first, read, func(prev Team) (struct{}, error) {
		if err := ifMatch.Check(prev.Version); err != nil {
			return struct{}{}, err
		}
		ev := s.event(ctx, audit.By(p, g), "team.delete", "team", teamID, s.now(), audit.Diff(
			audit.F("name", prev.Name, nil), audit.F("memberCount", prev.MemberCount, nil)))
		return struct{}{}, s.store.DeleteTeam(ctx, p.OrgID, teamID, ifMatch.Pin(prev.Version), ev)
	})
	return err
}

// ListTeamMembers pages through a team's members (AP1); withUsers embeds
// each member's org user, read with one BatchGetItem for the page.
func (s *Service) ListTeamMembers(ctx context.Context, p authz.Principal, teamID string, withUsers bool, pr page.Request) (page.Result[Membership], error) {
	if err := authz.Authorize(p, authz.TeamRead, authz.Facts{}); err != nil {
		return page.Result[Membership]{}, err
	}
	r, err := s.store.ListTeamMembers(ctx, p.OrgID, teamID, pr)
	if err != nil {
		return page.Result[Membership]{}, err
	}
	if len(r.Items) == 0 || !withUsers {
		return r, nil
	}
	users, err := s.users.BatchGetOrgUsers(ctx, p.OrgID, page.Keys(r.Items, func(m Membership) string { return m.UserID }))
	if err != nil {
		return page.Result[Membership]{}, err
	}
	for i := range r.Items {
		if u, ok := users[r.Items[i].UserID]; ok {
			r.Items[i].User = &u
		}
	}
	return r, nil
}

// ListUserTeams pages through a user's teams in the org (AP2); withNames
// fills TeamName with one BatchGetItem for the page.
func (s *Service) ListUserTeams(ctx context.Context, p authz.Principal, userID string, withNames bool, pr page.Request) (page.Result[Membership], error) {
	if err := authz.Authorize(p, authz.TeamRead, authz.Facts{}); err != nil {
		return page.Result[Membership]{}, err
	}
	r, err := s.store.ListUserTeams(ctx, p.OrgID, userID, pr)
	if err != nil {
		return page.Result[Membership]{}, err
	}
	if len(r.Items) == 0 || !withNames {
		return r, nil
	}
	teams, err := s.store.BatchGetTeams(ctx, p.OrgID, page.Keys(r.Items, func(m Membership) string { return m.TeamID }))
	if err != nil {
		return page.Result[Membership]{}, err
	}
	for i := range r.Items {
		r.Items[i].TeamName = teams[r.Items[i].TeamID].Name
	}
	return r, nil
}

// GetTeamMember returns one membership (AP3); first is the edge as the
// caller read it already (nil: read it).
func (s *Service) GetTeamMember(ctx context.Context, p authz.Principal, teamID, userID string, first *Membership) (Membership, error) {
	if err := authz.Authorize(p, authz.TeamRead, authz.Facts{}); err != nil {
		return Membership{}, err
	}
	if first != nil {
		return *first, nil
	}
	return s.store.GetTeamMember(ctx, p.OrgID, teamID, userID)
}

// PutTeamMember adds the user to the team with role, or changes their role;
// created tells which happened. first is the user's edge as the caller
// read it (nil: they have none). Without If-Match the caller asked for
// "this role, whatever it was": a concurrent PUT that created the edge or
// changed the role first makes it read again and retry; with If-Match, any
// change is a 412.
func (s *Service) PutTeamMember(ctx context.Context, p authz.Principal, teamID, userID string, first *Membership, role authz.Role, ifMatch ifmatch.Match) (m Membership, created bool, err error) {
	if !role.Valid() {
		return Membership{}, false, errs.InvalidField("role", "invalid_role", "must be one of owner, admin, member")
	}
	f, _, err := s.authorizeTeam(ctx, p, authz.MemberWrite, teamID)
	if err != nil {
		return Membership{}, false, err
	}
	// Granting the owner role, or changing an owner's, is for team owners
	// and org admins only (the role matrix); a team admin may manage the
	// other members.
	f.TeamOwnerRole = role == authz.Owner
	g, err := authz.Permit(p, authz.MemberWrite, f)
	if err != nil {
		return Membership{}, false, err
	}
	// The edge as read: nil when there is none (a NotFound is a read, not a
	// failure).
	read := func(ctx context.Context) (*Membership, error) {
		m, err := s.store.GetTeamMember(ctx, p.OrgID, teamID, userID)
		if errs.Is(err, errs.NotFound) {
			return nil, nil
		}
		return &m, err
	}
	put, err := ifmatch.Retry(ctx, ifMatch, &first, read, func(prev *Membership) (Membership, error) {
		now := s.now()
		if prev == nil {
			if ifMatch.Set() {
				return Membership{}, ifmatch.ErrVersion
			}
			m := Membership{OrgID: p.OrgID, TeamID: teamID, UserID: userID, Role: role, JoinedAt: now, UpdatedAt: now, Version: 1}
			err := s.store.AddTeamMember(ctx, m, s.event(ctx, audit.By(p, g), "member.add", "member", teamID+"/"+userID, now,
				audit.Diff(audit.F("role", nil, string(role)))))
			if errs.CodeOf(err) == "already_member" {
				return Membership{}, ifmatch.ErrVersion // created meanwhile: read it and apply ours on top
			}
			created = err == nil
			return m, err
		}
		g := g
		if prev.Role == authz.Owner && role != authz.Owner {
			f := f
			f.TeamOwnerRole = true
			var err error
			if g, err = authz.Permit(p, authz.MemberWrite, f); err != nil {
				return Membership{}, err
			}
		}
		if err := ifMatch.Check(prev.Version); err != nil {
			return Membership{}, err
		}
		created = false
		if prev.Role == role {
			return *prev, nil
		}
		next := *prev
		next.Role, next.Version, next.UpdatedAt = role, prev.Version+1, now
		return next, s.store.UpdateTeamMember(ctx, *prev, next, s.event(ctx, audit.By(p, g), "member.update", "member", teamID+"/"+userID, now,
			audit.Diff(audit.F("role", string(prev.Role), string(role)))))
	})
	if err != nil {
		return Membership{}, false, err
	}
	return put, created, nil
}

// RemoveTeamMember removes the user from the team (AP5); first is the edge
// as the caller read it already (nil: read it).
func (s *Service) RemoveTeamMember(ctx context.Context, p authz.Principal, teamID, userID string, first *Membership, ifMatch ifmatch.Match) error {
	f, g, err := s.authorizeTeam(ctx, p, authz.MemberWrite, teamID)
	if err != nil {
		return err
	}
	read := func(ctx context.Context) (Membership, error) {
		return s.store.GetTeamMember(ctx, p.OrgID, teamID, userID)
	}
	_, err = ifmatch.Retry(ctx, ifMatch, first, read, func(prev Membership) (struct{}, error) {
		g := g
		if prev.Role == authz.Owner {
			f := f
			f.TeamOwnerRole = true
			var err error
			if g, err = authz.Permit(p, authz.MemberWrite, f); err != nil {
				return struct{}{}, err
			}
		}
		if err := ifMatch.Check(prev.Version); err != nil {
			return struct{}{}, err
		}
		ev := s.event(ctx, audit.By(p, g), "member.remove", "member", teamID+"/"+userID, s.now(), audit.Diff(audit.F("role", string(prev.Role), nil)))
		return struct{}{}, s.store.RemoveTeamMember(ctx, prev, ev)
	})
	return err
}
