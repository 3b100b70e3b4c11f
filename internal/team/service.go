package team

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
	ids   *ids.Generator
	now   clock.Clock
}

// NewService returns a Service; now may be nil for the system clock.
func NewService(s Storer, now clock.Clock) *Service {
	now = clock.Or(now)
	return &Service{store: s, ids: ids.NewGenerator(now), now: now}
}

// TeamPatch is a partial update of a team; nil fields stay as they are.
type TeamPatch struct {
	Name        *string
	Description *string
}

func validateTeam(t Team) error {
	if err := validate.Name("name", t.Name, MaxNameLen); err != nil {
		return err
	}
	return validate.Text("description", t.Description, 0, MaxDescriptionLen, true)
}

// authorizeTeam decides a team-scoped action and returns the facts it
// used and the grant. The caller's team edge is read (one consistent
// GetItem, AP3) only when the org role does not settle it already.
func (s *Service) authorizeTeam(ctx context.Context, p authz.Principal, a authz.Action, teamID string) (authz.Facts, authz.Grant, error) {
	var f authz.Facts
	if authz.NeedsTeamRole(p, a) {
		m, err := s.store.GetMember(ctx, p.OrgID, teamID, p.UserID)
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
	t := Team{OrgID: p.OrgID, ID: teamID, Name: name, Description: description, MemberCount: 1,
		Version: 1, CreatedAt: now, UpdatedAt: now}
	if err := validateTeam(t); err != nil {
		return Team{}, err
	}
	owner := Member{OrgID: p.OrgID, TeamID: t.ID, UserID: p.UserID, Role: authz.Owner, JoinedAt: now, UpdatedAt: now, Version: 1}
	ctx = s.event(ctx, p, g, "team.create", "team", t.ID, now, audit.Diff(
		audit.F("name", nil, t.Name), audit.F("description", nil, t.Description)))
	if err := s.store.CreateTeam(ctx, t, owner); err != nil {
		if errs.CodeOf(err) == "team_exists" {
			return s.store.GetTeam(ctx, p.OrgID, t.ID)
		}
		return Team{}, err
	}
	return t, nil
}

// GetTeam reads a team; withMembers adds its first members from the same
// Query (AP4).
func (s *Service) GetTeam(ctx context.Context, p authz.Principal, teamID string, withMembers bool) (Team, []Member, error) {
	if err := authz.Authorize(p, authz.TeamRead, authz.Facts{}); err != nil {
		return Team{}, nil, err
	}
	if err := ids.Resource("teamId", teamID); err != nil {
		return Team{}, nil, err
	}
	if withMembers {
		return s.store.GetTeamWithMembers(ctx, p.OrgID, teamID, page.MaxLimit)
	}
	t, err := s.store.GetTeam(ctx, p.OrgID, teamID)
	return t, nil, err
}

// ListTeams pages through the org's teams.
func (s *Service) ListTeams(ctx context.Context, p authz.Principal, pr page.Request) (page.Result[Team], error) {
	if err := authz.Authorize(p, authz.TeamRead, authz.Facts{}); err != nil {
		return page.Result[Team]{}, err
	}
	return s.store.ListTeams(ctx, p.OrgID, pr)
}

// UpdateTeam changes a team's name or description.
func (s *Service) UpdateTeam(ctx context.Context, p authz.Principal, teamID string, patch TeamPatch, ifMatch int64) (Team, error) {
	if err := ids.Resource("teamId", teamID); err != nil {
		return Team{}, err
	}
	if patch.Name == nil && patch.Description == nil {
		return Team{}, errs.E(errs.Invalid, "empty_patch", "nothing to change")
	}
	_, g, err := s.authorizeTeam(ctx, p, authz.TeamUpdate, teamID)
	if err != nil {
		return Team{}, err
	}
	prev, err := s.store.GetTeam(ctx, p.OrgID, teamID)
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
	ctx = s.event(ctx, p, g, "team.update", "team", teamID, next.UpdatedAt, audit.Diff(
		audit.F("name", prev.Name, next.Name), audit.F("description", prev.Description, next.Description)))
	if err := s.store.UpdateTeam(ctx, prev, next); err != nil {
		return Team{}, err
	}
	return next, nil
}

// DeleteTeam deletes a team and its memberships.
func (s *Service) DeleteTeam(ctx context.Context, p authz.Principal, teamID string, ifMatch int64) error {
	if err := ids.Resource("teamId", teamID); err != nil {
		return err
	}
	_, g, err := s.authorizeTeam(ctx, p, authz.TeamDelete, teamID)
	if err != nil {
		return err
	}
	prev, err := s.store.GetTeam(ctx, p.OrgID, teamID)
	if err != nil {
		return err
	}
	if err := errs.CheckVersion(ifMatch, prev.Version); err != nil {
		return err
	}
	ctx = s.event(ctx, p, g, "team.delete", "team", teamID, s.now(), audit.Diff(
		audit.F("name", prev.Name, nil), audit.F("memberCount", prev.MemberCount, nil)))
	return s.store.DeleteTeam(ctx, p.OrgID, teamID, prev.Version)
}

// ListMembers pages through a team's members (AP1).
func (s *Service) ListMembers(ctx context.Context, p authz.Principal, teamID string, pr page.Request) (page.Result[Member], error) {
	if err := authz.Authorize(p, authz.TeamRead, authz.Facts{}); err != nil {
		return page.Result[Member]{}, err
	}
	if err := ids.Resource("teamId", teamID); err != nil {
		return page.Result[Member]{}, err
	}
	return s.store.ListMembers(ctx, p.OrgID, teamID, pr)
}

// ListUserTeams pages through a user's teams in the org (AP2); withNames
// fills TeamName with one BatchGetItem for the page.
func (s *Service) ListUserTeams(ctx context.Context, p authz.Principal, userID string, withNames bool, pr page.Request) (page.Result[Member], error) {
	if err := authz.Authorize(p, authz.TeamRead, authz.Facts{}); err != nil {
		return page.Result[Member]{}, err
	}
	if err := ids.User("userId", userID); err != nil {
		return page.Result[Member]{}, err
	}
	r, err := s.store.ListUserTeams(ctx, p.OrgID, userID, pr)
	if err != nil || len(r.Items) == 0 || !withNames {
		return r, err
	}
	teamIDs := make([]string, len(r.Items))
	for i, m := range r.Items {
		teamIDs[i] = m.TeamID
	}
	teams, err := s.store.BatchGetTeams(ctx, p.OrgID, teamIDs)
	if err != nil {
		return page.Result[Member]{}, err
	}
	for i := range r.Items {
		r.Items[i].TeamName = teams[r.Items[i].TeamID].Name
	}
	return r, nil
}

// GetMember reads one membership (AP3).
func (s *Service) GetMember(ctx context.Context, p authz.Principal, teamID, userID string) (Member, error) {
	if err := authz.Authorize(p, authz.TeamRead, authz.Facts{}); err != nil {
		return Member{}, err
	}
	if err := ids.Resource("teamId", teamID); err != nil {
		return Member{}, err
	}
	if err := ids.User("userId", userID); err != nil {
		return Member{}, err
	}
	return s.store.GetMember(ctx, p.OrgID, teamID, userID)
}

// PutMember adds the user to the team with role, or changes their role.
// created tells which happened.
func (s *Service) PutMember(ctx context.Context, p authz.Principal, teamID, userID string, role authz.Role, ifMatch int64) (m Member, created bool, err error) {
	if err := ids.Resource("teamId", teamID); err != nil {
		return Member{}, false, err
	}
	if err := ids.User("userId", userID); err != nil {
		return Member{}, false, err
	}
	if !role.Valid() {
		return Member{}, false, errs.InvalidField("role", "invalid_role", "must be one of owner, admin, member")
	}
	f, _, err := s.authorizeTeam(ctx, p, authz.MemberWrite, teamID)
	if err != nil {
		return Member{}, false, err
	}
	// Granting the owner role, or changing an owner's, is for team owners
	// and org admins only (the role matrix); a team admin may manage the
	// other members.
	f.TeamOwnerRole = role == authz.Owner
	g, err := authz.Permit(p, authz.MemberWrite, f)
	if err != nil {
		return Member{}, false, err
	}
	// A concurrent PUT may create the edge between our read and our add, or
	// change the role between our read and our update: without If-Match the
	// caller asked for "this role, whatever it was", so read again and retry
	// (bounded); with If-Match, a change is a 412.
	for try := 0; ; try++ {
		retry := try < maxPutTries-1
		now := s.now()
		prev, err := s.store.GetMember(ctx, p.OrgID, teamID, userID)
		switch {
		case errs.Is(err, errs.NotFound):
			if ifMatch != 0 {
				return Member{}, false, errs.ErrVersion
			}
			m = Member{OrgID: p.OrgID, TeamID: teamID, UserID: userID, Role: role, JoinedAt: now, UpdatedAt: now, Version: 1}
			err := s.store.AddMember(s.event(ctx, p, g, "member.add", "member", teamID+"/"+userID, now,
				audit.Diff(audit.F("role", nil, string(role)))), m)
			if errs.CodeOf(err) == "already_member" && retry {
				continue
			}
			if err != nil {
				return Member{}, false, err
			}
			return m, true, nil
		case err != nil:
			return Member{}, false, err
		}
		if prev.Role == authz.Owner && role != authz.Owner {
			f.TeamOwnerRole = true
			if g, err = authz.Permit(p, authz.MemberWrite, f); err != nil {
				return Member{}, false, err
			}
		}
		if err := errs.CheckVersion(ifMatch, prev.Version); err != nil {
			return Member{}, false, err
		}
		if prev.Role == role {
			return prev, false, nil
		}
		next := prev
		next.Role, next.Version, next.UpdatedAt = role, prev.Version+1, now
		err = s.store.UpdateMember(s.event(ctx, p, g, "member.update", "member", teamID+"/"+userID, now,
			audit.Diff(audit.F("role", string(prev.Role), string(role)))), prev, next)
		if errs.Is(err, errs.PreconditionFailed) && ifMatch == 0 && retry {
			continue // changed under us without If-Match: apply ours on top
		}
		if err != nil {
			return Member{}, false, err
		}
		return next, false, nil
	}
}

// maxPutTries bounds PutMember's read-and-write attempts under contention.
const maxPutTries = 8

// RemoveMember removes the user from the team (AP5).
func (s *Service) RemoveMember(ctx context.Context, p authz.Principal, teamID, userID string, ifMatch int64) error {
	if err := ids.Resource("teamId", teamID); err != nil {
		return err
	}
	if err := ids.User("userId", userID); err != nil {
		return err
	}
	f, g, err := s.authorizeTeam(ctx, p, authz.MemberWrite, teamID)
	if err != nil {
		return err
	}
	prev, err := s.store.GetMember(ctx, p.OrgID, teamID, userID)
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
	ctx = s.event(ctx, p, g, "member.remove", "member", teamID+"/"+userID, s.now(), audit.Diff(audit.F("role", string(prev.Role), nil)))
	return s.store.RemoveMember(ctx, prev)
}

// event attaches the audit event of a change to ctx; the store writes it in
// the change's transaction.
func (s *Service) event(ctx context.Context, p authz.Principal, g authz.Grant, action, targetType, targetID string, at time.Time, changes []audit.Change) context.Context {
	return audit.With(ctx, audit.Event{OrgID: p.OrgID, ID: s.ids.NewAt(at), ActorID: p.UserID, ActorFloor: string(g.Floor), Action: action,
		TargetType: targetType, TargetID: targetID, At: at, Changes: changes})
}
