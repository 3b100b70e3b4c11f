package membership

import (
	"context"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ifmatch"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
)

// Membership is the edge between a team and an org user; the team role
// lives here (the API's Membership).
type Membership struct {
	OrgID     string
	TeamID    string
	UserID    string
	Role      authz.Role
	JoinedAt  time.Time
	UpdatedAt time.Time
	Version   int64
	// TeamName is filled only by listings of a user's teams with names.
	TeamName string
	// User is filled only by listings of a team's members with users.
	User *tenant.User
}

// ListTeamMembers pages through a team's members (AP1); withUsers embeds
// each member's org user, read with one BatchGetItem for the page.
func (s *Service) ListTeamMembers(ctx context.Context, p authz.Principal, teamID string, withUsers bool, pr page.Request) (page.Result[Membership], error) {
	if err := authz.Authorize(p, authz.TeamRead, authz.Facts{}); err != nil {
		return page.Result[Membership]{}, err
	}
	r, err := s.store.ListTeamMembers(ctx, p.OrgID, teamID, pr)
	if err != nil || len(r.Items) == 0 || !withUsers {
		return r, err
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
	if err != nil || len(r.Items) == 0 || !withNames {
		return r, err
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

// GetTeamMember returns one membership (AP3); loaded is the edge as the
// authorization read loaded it (nil: read it).
func (s *Service) GetTeamMember(ctx context.Context, p authz.Principal, teamID, userID string, loaded *Membership) (Membership, error) {
	if err := authz.Authorize(p, authz.TeamRead, authz.Facts{}); err != nil {
		return Membership{}, err
	}
	if loaded != nil {
		return *loaded, nil
	}
	return s.store.GetTeamMember(ctx, p.OrgID, teamID, userID)
}

// PutTeamMember adds the user to the team with role, or changes their role;
// created tells which happened. edge is the user's edge as the authorization
// read found it (nil: none). Without If-Match the caller asked for "this
// role, whatever it was": a concurrent create, change or removal of the edge
// makes it read again and retry; with If-Match, any change is a 412.
func (s *Service) PutTeamMember(ctx context.Context, p authz.Principal, teamID, userID string, edge *Membership, role authz.Role, ifMatch ifmatch.Match) (m Membership, created bool, err error) {
	if err := role.Check("role"); err != nil {
		return Membership{}, false, err
	}
	f, _, err := s.authorizeTeam(ctx, p, authz.MemberWrite, teamID)
	if err != nil {
		return Membership{}, false, err
	}
	// Granting the owner role, or changing an owner's, is for team owners
	// and org admins only; a team admin may manage the other members.
	f.TeamOwnerRole = role == authz.Owner
	g, err := authz.Permit(p, authz.MemberWrite, f)
	if err != nil {
		return Membership{}, false, err
	}
	// The edge as read: nil when there is none (NotFound is a read here).
	read := func(ctx context.Context) (*Membership, error) {
		m, err := s.store.GetTeamMember(ctx, p.OrgID, teamID, userID)
		if errs.Is(err, errs.NotFound) {
			return nil, nil
		}
		return &m, err
	}
	put, err := ifmatch.Retry(ctx, ifMatch, &edge, read, func(prev *Membership) (Membership, error) {
		now := s.now()
		if prev == nil {
			if ifMatch.Set() {
				return Membership{}, ifmatch.ErrVersion
			}
			m := Membership{OrgID: p.OrgID, TeamID: teamID, UserID: userID, Role: role, JoinedAt: now, UpdatedAt: now, Version: 1}
			err := s.store.AddTeamMember(ctx, m, audit.NewEvent(ctx, s.ids, audit.By(p, g), "member.add", "member", teamID+"/"+userID, now,
				audit.Diff(audit.F("role", nil, string(role)))))
			if errs.CodeOf(err) == "already_member" {
				return Membership{}, ifmatch.ErrVersion // created meanwhile: read it and apply ours on top
			}
			created = err == nil
			return m, err
		}
		g, err := ownerGrant(p, f, g, prev.Role == authz.Owner)
		if err != nil {
			return Membership{}, err
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
		err = s.store.UpdateTeamMember(ctx, *prev, next, audit.NewEvent(ctx, s.ids, audit.By(p, g), "member.update", "member", teamID+"/"+userID, now,
			audit.Diff(audit.F("role", string(prev.Role), string(role)))))
		if errs.CodeOf(err) == "member_not_found" {
			return Membership{}, ifmatch.ErrVersion // removed meanwhile: read again and add ours
		}
		return next, err
	})
	if err != nil {
		return Membership{}, false, err
	}
	return put, created, nil
}

// RemoveTeamMember removes the user from the team (AP5); loaded is the edge
// as the authorization read loaded it (nil: read it).
func (s *Service) RemoveTeamMember(ctx context.Context, p authz.Principal, teamID, userID string, loaded *Membership, ifMatch ifmatch.Match) error {
	f, g, err := s.authorizeTeam(ctx, p, authz.MemberWrite, teamID)
	if err != nil {
		return err
	}
	read := func(ctx context.Context) (Membership, error) {
		return s.store.GetTeamMember(ctx, p.OrgID, teamID, userID)
	}
	_, err = ifmatch.Retry(ctx, ifMatch, loaded, read, func(prev Membership) (struct{}, error) {
		g, err := ownerGrant(p, f, g, prev.Role == authz.Owner)
		if err != nil {
			return struct{}{}, err
		}
		if err := ifMatch.Check(prev.Version); err != nil {
			return struct{}{}, err
		}
		ev := audit.NewEvent(ctx, s.ids, audit.By(p, g), "member.remove", "member", teamID+"/"+userID, s.now(), audit.Diff(audit.F("role", string(prev.Role), nil)))
		return struct{}{}, s.store.RemoveTeamMember(ctx, prev, ev)
	})
	return err
}

// ownerGrant is g, the grant of a change to a member's edge, or, when the
// edge is a team owner's (owner), the grant of changing a team owner's
// role, which only team owners and org admins have.
func ownerGrant(p authz.Principal, f authz.Facts, g authz.Grant, owner bool) (authz.Grant, error) {
	if !owner || f.TeamOwnerRole {
		return g, nil
	}
	f.TeamOwnerRole = true
	return authz.Permit(p, authz.MemberWrite, f)
}
