package membership

import (
	"context"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/clock"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
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

// GetTeam reads a team; withMembers adds its first members from the same
// Query (AP4).
func (s *Service) GetTeam(ctx context.Context, p authz.Pending, teamID string, withMembers bool) (Team, []Membership, error) {
	var (
		t  Team
		ms []Membership
	)
	if _, err := p.Overlap(ctx, authz.TeamRead, func(ctx context.Context) (err error) {
		if withMembers {
			t, ms, err = s.store.GetTeamWithMembers(ctx, p.OrgID, teamID, page.MaxLimit)
		} else {
			t, err = s.store.GetTeam(ctx, p.OrgID, teamID)
		}
		return err
	}); err != nil {
		return Team{}, nil, err
	}
	return t, ms, nil
}

// ListTeams pages through the org's teams.
func (s *Service) ListTeams(ctx context.Context, p authz.Pending, pr page.Request) (page.Result[Team], error) {
	return authz.Read(ctx, p, authz.TeamRead, func(ctx context.Context) (page.Result[Team], error) {
		return s.store.ListTeams(ctx, p.OrgID, pr)
	})
}

// BatchGetTeams reads many of the org's teams at once (one BatchGetItem
// per 100 distinct IDs); teams that do not exist are left out of the map.
func (s *Service) BatchGetTeams(ctx context.Context, p authz.Principal, teamIDs []string) (map[string]Team, error) {
	if err := authz.Authorize(p, authz.TeamRead, authz.Facts{}); err != nil {
		return nil, err
	}
	return s.store.BatchGetTeams(ctx, p.OrgID, teamIDs)
}

// UpdateTeam changes a team's name or description.
func (s *Service) UpdateTeam(ctx context.Context, pend authz.Pending, teamID string, patch Patch, ifMatch errs.Match) (Team, error) {
	p, get, err := authz.Prefetch(ctx, pend, func(ctx context.Context) (Team, error) { return s.store.GetTeam(ctx, pend.OrgID, teamID) })
	if err != nil {
		return Team{}, err
	}
	return errs.Unconditional(ifMatch, func() (Team, error) { return s.updateTeam(ctx, p, teamID, patch, ifMatch, get) })
}

// updateTeam is one attempt of UpdateTeam.
func (s *Service) updateTeam(ctx context.Context, p authz.Principal, teamID string, patch Patch, ifMatch errs.Match, get func(context.Context) (Team, error)) (Team, error) {
	if patch.Name == nil && patch.Description == nil {
		return Team{}, errs.E(errs.Invalid, "empty_patch", "nothing to change")
	}
	_, g, err := s.authorizeTeam(ctx, p, authz.TeamUpdate, teamID)
	if err != nil {
		return Team{}, err
	}
	prev, err := get(ctx)
	if err != nil {
		return Team{}, err
	}
	if err := errs.CheckVersion(ifMatch, prev.Version); err != nil {
		return Team{}, err
	}
	next := prev
	if patch.Name != nil {
		next.Name = *patch.Name
	}
	if patch.Description != nil {
		next.Description = *patch.Description
	}
	if err := validateTeam(next); err != nil {
		return Team{}, err
	}
	next.Version, next.UpdatedAt = prev.Version+1, s.now()
	ev := s.event(ctx, audit.By(p, g), "team.update", "team", teamID, next.UpdatedAt, audit.Diff(
		audit.F("name", prev.Name, next.Name), audit.F("description", prev.Description, next.Description)))
	return audit.Update(ctx, s.store.UpdateTeam, prev, next, ev)
}

// DeleteTeam deletes a team and its memberships.
func (s *Service) DeleteTeam(ctx context.Context, pend authz.Pending, teamID string, ifMatch errs.Match) error {
	p, get, err := authz.Prefetch(ctx, pend, func(ctx context.Context) (Team, error) { return s.store.GetTeam(ctx, pend.OrgID, teamID) })
	if err != nil {
		return err
	}
	return errs.UnconditionalErr(ifMatch, func() error { return s.deleteTeam(ctx, p, teamID, ifMatch, get) })
}

// deleteTeam is one attempt of DeleteTeam.
func (s *Service) deleteTeam(ctx context.Context, p authz.Principal, teamID string, ifMatch errs.Match, get func(context.Context) (Team, error)) error {
	_, g, err := s.authorizeTeam(ctx, p, authz.TeamDelete, teamID)
	if err != nil {
		return err
	}
	prev, err := get(ctx)
	if err != nil {
		return err
	}
	if err := errs.CheckVersion(ifMatch, prev.Version); err != nil {
		return err
	}
	ev := s.event(ctx, audit.By(p, g), "team.delete", "team", teamID, s.now(), audit.Diff(
		audit.F("name", prev.Name, nil), audit.F("memberCount", prev.MemberCount, nil)))
	return s.store.DeleteTeam(ctx, p.OrgID, teamID, ifMatch.Pin(prev.Version), ev)
}

// ListTeamMembers pages through a team's members (AP1); withUsers embeds
// each member's org user, read with one BatchGetItem for the page.
func (s *Service) ListTeamMembers(ctx context.Context, p authz.Pending, teamID string, withUsers bool, pr page.Request) (page.Result[Membership], error) {
	r, err := authz.Read(ctx, p, authz.TeamRead, func(ctx context.Context) (page.Result[Membership], error) {
		return s.store.ListTeamMembers(ctx, p.OrgID, teamID, pr)
	})
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
func (s *Service) ListUserTeams(ctx context.Context, p authz.Pending, userID string, withNames bool, pr page.Request) (page.Result[Membership], error) {
	r, err := authz.Read(ctx, p, authz.TeamRead, func(ctx context.Context) (page.Result[Membership], error) {
		return s.store.ListUserTeams(ctx, p.OrgID, userID, pr)
	})
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

// GetTeamMember reads one membership (AP3).
func (s *Service) GetTeamMember(ctx context.Context, p authz.Pending, teamID, userID string) (Membership, error) {
	return authz.Read(ctx, p, authz.TeamRead, func(ctx context.Context) (Membership, error) {
		return s.store.GetTeamMember(ctx, p.OrgID, teamID, userID)
	})
}

// PutTeamMember adds the user to the team with role, or changes their role.
// created tells which happened.
func (s *Service) PutTeamMember(ctx context.Context, pend authz.Pending, teamID, userID string, role authz.Role, ifMatch errs.Match) (m Membership, created bool, err error) {
	p, get, err := authz.Prefetch(ctx, pend, func(ctx context.Context) (Membership, error) {
		return s.store.GetTeamMember(ctx, pend.OrgID, teamID, userID)
	})
	if err != nil {
		return Membership{}, false, err
	}
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
	// A concurrent PUT may create the edge between our read and our add, or
	// change the role between our read and our update: without If-Match the
	// caller asked for "this role, whatever it was", so read again and retry
	// (bounded); with If-Match, a change is a 412.
	for try := 0; ; try++ {
		retry := try < maxPutTries-1
		now := s.now()
		prev, err := get(ctx)
		switch {
		case errs.Is(err, errs.NotFound):
			if ifMatch.Set() {
				return Membership{}, false, errs.ErrVersion
			}
			m = Membership{OrgID: p.OrgID, TeamID: teamID, UserID: userID, Role: role, JoinedAt: now, UpdatedAt: now, Version: 1}
			err := s.store.AddTeamMember(ctx, m, s.event(ctx, audit.By(p, g), "member.add", "member", teamID+"/"+userID, now,
				audit.Diff(audit.F("role", nil, string(role)))))
			if errs.CodeOf(err) == "already_member" && retry {
				continue
			}
			if err != nil {
				return Membership{}, false, err
			}
			return m, true, nil
		case err != nil:
			return Membership{}, false, err
		}
		if prev.Role == authz.Owner && role != authz.Owner {
			f.TeamOwnerRole = true
			if g, err = authz.Permit(p, authz.MemberWrite, f); err != nil {
				return Membership{}, false, err
			}
		}
		if err := errs.CheckVersion(ifMatch, prev.Version); err != nil {
			return Membership{}, false, err
		}
		if prev.Role == role {
			return prev, false, nil
		}
		next := prev
		next.Role, next.Version, next.UpdatedAt = role, prev.Version+1, now
		err = s.store.UpdateTeamMember(ctx, prev, next, s.event(ctx, audit.By(p, g), "member.update", "member", teamID+"/"+userID, now,
			audit.Diff(audit.F("role", string(prev.Role), string(role)))))
		if errs.Is(err, errs.PreconditionFailed) && !ifMatch.Set() && retry {
			continue // changed under us without If-Match: apply ours on top
		}
		if err != nil {
			return Membership{}, false, err
		}
		return next, false, nil
	}
}

// maxPutTries bounds PutTeamMember's read-and-write attempts under
// contention.
const maxPutTries = 8

// RemoveTeamMember removes the user from the team (AP5).
func (s *Service) RemoveTeamMember(ctx context.Context, pend authz.Pending, teamID, userID string, ifMatch errs.Match) error {
	p, get, err := authz.Prefetch(ctx, pend, func(ctx context.Context) (Membership, error) {
		return s.store.GetTeamMember(ctx, pend.OrgID, teamID, userID)
	})
	if err != nil {
		return err
	}
	return errs.UnconditionalErr(ifMatch, func() error { return s.removeTeamMember(ctx, p, teamID, userID, ifMatch, get) })
}

// removeTeamMember is one attempt of RemoveTeamMember.
func (s *Service) removeTeamMember(ctx context.Context, p authz.Principal, teamID, userID string, ifMatch errs.Match, get func(context.Context) (Membership, error)) error {
	f, g, err := s.authorizeTeam(ctx, p, authz.MemberWrite, teamID)
	if err != nil {
		return err
	}
	prev, err := get(ctx)
	if err != nil {
		return err
	}
	if prev.Role == authz.Owner {
		f.TeamOwnerRole = true
		if g, err = authz.Permit(p, authz.MemberWrite, f); err != nil {
			return err
		}
	}
	if err := errs.CheckVersion(ifMatch, prev.Version); err != nil {
		return err
	}
	ev := s.event(ctx, audit.By(p, g), "member.remove", "member", teamID+"/"+userID, s.now(), audit.Diff(audit.F("role", string(prev.Role), nil)))
	return s.store.RemoveTeamMember(ctx, prev, ev)
}
