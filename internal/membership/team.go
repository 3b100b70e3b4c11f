// Package membership holds an org's teams (team.go) and their member edges
// (member.go), adjacency-list edges that carry the member's team role (seed
// 000), and the Service both APIs call. A user's membership of the org
// itself is their OrgUser edge (tenant.User), whose O(1) read every request
// makes is package access.
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
	"github.com/tenantd/tenantd/internal/optional"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/validate"
)

// Team is a group of an org's users.
type Team struct {
	OrgID       string
	ID          string
	Name        string
	Description string
	MemberCount int
	OwnerCount  int // members with role owner: never 0 while the team exists
	Version     int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Limits of text fields.
const (
	MaxNameLen        = 200
	MaxDescriptionLen = 2000
)

// MaxTeamsPerUser is how many teams of one org a user may be in: their org
// edge lists them (a set of IDs), and a DynamoDB item holds 400 KB at most,
// so without a bound enough joins would make every write of it fail.
const MaxTeamsPerUser = 1000

// Storer is what the team service needs from persistence. Every write takes
// the audit event of the change, written in the same transaction. A team
// being deleted is NotFound. A listing under a parent does not tell a
// missing parent from an empty one: the caller has read the parent.
type Storer interface {
	// CreateTeam writes the team (memberCount and ownerCount 1) and its
	// creator's owner edge atomically. Returns Conflict (not_org_member) if
	// the creator is not a user of the org.
	CreateTeam(ctx context.Context, t Team, owner Membership, ev audit.Event) error
	// GetTeam returns NotFound if the team does not exist.
	GetTeam(ctx context.Context, orgID, teamID string) (Team, error)
	// GetTeamWithMembers reads the team and up to limit members in one
	// Query (AP4). Returns NotFound.
	GetTeamWithMembers(ctx context.Context, orgID, teamID string, limit int) (Team, []Membership, error)
	// ListTeams pages through an org's teams, oldest first.
	ListTeams(ctx context.Context, orgID string, p page.Request) (page.Result[Team], error)
	// UpdateTeam replaces the team's mutable fields if prev.Version is
	// current. Returns NotFound or PreconditionFailed.
	UpdateTeam(ctx context.Context, prev, next Team, ev audit.Event) error
	// DeleteTeam removes the team and all its member edges, and the team
	// from each member's team set; no edge outlives the team, even when
	// members are added or removed concurrently. Returns NotFound or
	// PreconditionFailed (version, when ifVersion > 0).
	DeleteTeam(ctx context.Context, orgID, teamID string, ifVersion int64, ev audit.Event) error

	// GetTeamMember reads one edge consistently (AP3). Returns NotFound.
	GetTeamMember(ctx context.Context, orgID, teamID, userID string) (Membership, error)
	// ListTeamMembers pages through a team's members (AP1).
	ListTeamMembers(ctx context.Context, orgID, teamID string, p page.Request) (page.Result[Membership], error)
	// ListUserTeams pages through a user's teams in one org (AP2), unnamed.
	ListUserTeams(ctx context.Context, orgID, userID string, p page.Request) (page.Result[Membership], error)
	// BatchGetTeams reads many teams of one org; absent ones are left out.
	BatchGetTeams(ctx context.Context, orgID string, teamIDs []string) (map[string]Team, error)
	// AddTeamMember writes a new edge and increments the team's
	// memberCount (and ownerCount for an owner). Returns NotFound
	// (team_not_found) or Conflict (not_org_member, already_member).
	AddTeamMember(ctx context.Context, m Membership, ev audit.Event) error
	// UpdateTeamMember changes an edge's role if prev.Version is current,
	// and the team's ownerCount when owner is gained or lost. Returns
	// NotFound, PreconditionFailed, or Conflict (last_team_owner) when the
	// team's last owner would lose the role.
	UpdateTeamMember(ctx context.Context, prev, next Membership, ev audit.Event) error
	// RemoveTeamMember deletes the edge m, as read (its version and role),
	// and decrements the team's counts (AP5). Returns NotFound
	// (member_not_found, team_not_found), PreconditionFailed if the edge
	// changed, or Conflict (last_team_owner) for the team's last owner.
	RemoveTeamMember(ctx context.Context, m Membership, ev audit.Event) error
}

// Users reads an org's users for listings that embed them.
type Users interface {
	// BatchGetOrgUsers reads many users of one org; absent ones are left out.
	BatchGetOrgUsers(ctx context.Context, orgID string, userIDs []string) (map[string]tenant.User, error)
}

// Service applies team and membership rules on top of a Storer. Its
// listings under a parent (a team's members, a user's teams) are made for a
// caller who has read the parent: the authorization read loads it
// (access.Target), a GraphQL field lists under an object it has.
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

// authorizeTeam decides a team-scoped action and returns the facts it used
// and the grant. The caller's team role, needed only when the org role does
// not settle it, is the principal's when the authorization read found it,
// else their team edge is read (one consistent GetItem, AP3).
func (s *Service) authorizeTeam(ctx context.Context, p authz.Principal, a authz.Action, teamID string) (authz.Facts, authz.Grant, error) {
	f := authz.Facts{TeamID: teamID}
	switch {
	case !authz.NeedsTeamRole(p, a):
	case p.Team != nil && p.Team.TeamID == teamID: // as the authorization read found it
		f.TeamRole = p.Team.Role
	default:
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

// CreateTeam creates a team whose owner is the caller (org admin+). teamID,
// when set, is the team's ID (an idempotent request's; otherwise one is
// minted): if the team exists, it was created already and is returned.
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
	ev := audit.NewEvent(ctx, s.ids, audit.By(p, g), "team.create", "team", t.ID, now, audit.Diff(
		audit.F("name", nil, t.Name), audit.F("description", nil, t.Description)))
	if err := s.store.CreateTeam(ctx, t, owner, ev); err != nil {
		if errs.CodeOf(err) == "team_exists" {
			return s.store.GetTeam(ctx, p.OrgID, t.ID)
		}
		return Team{}, err
	}
	return t, nil
}

// GetTeam returns a team (loaded: as the authorization read loaded it; nil:
// read it); withMembers reads the team's item collection instead, the team and
// its first members in one Query (AP4).
func (s *Service) GetTeam(ctx context.Context, p authz.Principal, teamID string, loaded *Team, withMembers bool) (Team, []Membership, error) {
	if err := authz.Authorize(p, authz.TeamRead, authz.Facts{}); err != nil {
		return Team{}, nil, err
	}
	switch {
	case withMembers: // AP4, the team's item collection: the team and its edges in one Query
		return s.store.GetTeamWithMembers(ctx, p.OrgID, teamID, page.MaxLimit)
	case loaded != nil:
		return *loaded, nil, nil
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

// BatchGetTeams reads many of the org's teams at once (one BatchGetItem
// per 100 distinct IDs); teams that do not exist are left out of the map.
func (s *Service) BatchGetTeams(ctx context.Context, p authz.Principal, teamIDs []string) (map[string]Team, error) {
	if err := authz.Authorize(p, authz.TeamRead, authz.Facts{}); err != nil {
		return nil, err
	}
	return s.store.BatchGetTeams(ctx, p.OrgID, teamIDs)
}

// UpdateTeam changes a team's name or description; loaded is the team as
// the authorization read loaded it (nil: read it).
func (s *Service) UpdateTeam(ctx context.Context, p authz.Principal, teamID string, loaded *Team, patch Patch, ifMatch ifmatch.Match) (Team, error) {
	if patch.Name == nil && patch.Description == nil {
		return Team{}, errs.E(errs.Invalid, "empty_patch", "nothing to change")
	}
	_, g, err := s.authorizeTeam(ctx, p, authz.TeamUpdate, teamID)
	if err != nil {
		return Team{}, err
	}
	read := func(ctx context.Context) (Team, error) { return s.store.GetTeam(ctx, p.OrgID, teamID) }
	return ifmatch.Retry(ctx, ifMatch, loaded, read, func(prev Team) (Team, error) {
		if err := ifMatch.Check(prev.Version); err != nil {
			return Team{}, err
		}
		next := prev
		optional.Set(&next.Name, patch.Name)
		optional.Set(&next.Description, patch.Description)
		if err := validateTeam(next); err != nil {
			return Team{}, err
		}
		next.Version, next.UpdatedAt = prev.Version+1, s.now()
		ev := audit.NewEvent(ctx, s.ids, audit.By(p, g), "team.update", "team", teamID, next.UpdatedAt, audit.Diff(
			audit.F("name", prev.Name, next.Name), audit.F("description", prev.Description, next.Description)))
		return audit.Update(ctx, s.store.UpdateTeam, prev, next, ev)
	})
}

// DeleteTeam deletes a team and its memberships; loaded is the team as the
// authorization read loaded it (nil: read it).
func (s *Service) DeleteTeam(ctx context.Context, p authz.Principal, teamID string, loaded *Team, ifMatch ifmatch.Match) error {
	_, g, err := s.authorizeTeam(ctx, p, authz.TeamDelete, teamID)
	if err != nil {
		return err
	}
	read := func(ctx context.Context) (Team, error) { return s.store.GetTeam(ctx, p.OrgID, teamID) }
	_, err = ifmatch.Retry(ctx, ifMatch, loaded, read, func(prev Team) (struct{}, error) {
		if err := ifMatch.Check(prev.Version); err != nil {
			return struct{}{}, err
		}
		ev := audit.NewEvent(ctx, s.ids, audit.By(p, g), "team.delete", "team", teamID, s.now(), audit.Diff(
			audit.F("name", prev.Name, nil), audit.F("memberCount", prev.MemberCount, nil)))
		return struct{}{}, s.store.DeleteTeam(ctx, p.OrgID, teamID, ifMatch.Pin(prev.Version), ev)
	})
	return err
}
