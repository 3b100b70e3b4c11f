package graphapi

import (
	"context"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/ticket"
)

// Teams resolves Org.teams (GET /v1/orgs/{orgId}/teams).
func (r orgResolver) Teams(ctx context.Context, obj *Org, first *int, after *string) (*TeamConnection, error) {
	return connection(ctx, obj.p.OrgID, "listTeams", first, after,
		func(pr page.Request) (page.Result[membership.Team], error) {
			return r.s.d.Teams.ListTeams(ctx, obj.p, pr)
		},
		func(t membership.Team) *Team { return &Team{Team: t, p: obj.p} })
}

// Team resolves Org.team (GET /v1/orgs/{orgId}/teams/{teamId}).
func (r orgResolver) Team(ctx context.Context, obj *Org, id string) (*Team, error) {
	t, err := do(ctx, state(ctx), func() (membership.Team, error) {
		t, _, err := r.s.d.Teams.GetTeam(ctx, obj.p, id, nil, false)
		return t, err
	})
	if err != nil {
		return nil, err
	}
	return &Team{Team: t, p: obj.p}, nil
}

// Members resolves Team.members (GET /v1/orgs/{orgId}/teams/{teamId}/members),
// with the team's stored member count as totalCount.
func (r teamResolver) Members(ctx context.Context, obj *Team, first *int, after *string) (*TeamMemberConnection, error) {
	c, err := r.s.memberships(ctx, obj.p, "listTeamMembers:"+obj.ID, first, after, func(pr page.Request) (page.Result[membership.Membership], error) {
		return r.s.d.Teams.ListTeamMembers(ctx, obj.p, obj.ID, false, pr)
	})
	if err != nil {
		return nil, err
	}
	c.TotalCount = &obj.MemberCount
	return c, nil
}

// Tickets resolves Team.tickets (GET /v1/orgs/{orgId}/teams/{teamId}/tickets).
func (r teamResolver) Tickets(ctx context.Context, obj *Team, status *ticket.Status, first *int, after *string) (*TicketConnection, error) {
	return r.s.teamTickets(ctx, obj.p, obj.ID, status, first, after)
}

// memberships is a connection of membership edges.
func (s *Server) memberships(ctx context.Context, p authz.Principal, listing string, first *int, after *string,
	fetch func(page.Request) (page.Result[membership.Membership], error)) (*TeamMemberConnection, error) {
	return connection(ctx, p.OrgID, listing, first, after, fetch,
		func(m membership.Membership) *TeamMember { return &TeamMember{Membership: m, p: p} })
}

// teamOf loads one of the org's teams through the request's team loader.
// nil: no such team (or it is being deleted).
func teamOf(ctx context.Context, p authz.Principal, teamID string) (*Team, error) {
	if teamID == "" {
		return nil, nil
	}
	t, err := state(ctx).loaders.teams.Load(ctx, ref{OrgID: p.OrgID, ID: teamID})
	if err != nil || t == nil {
		return nil, err
	}
	return &Team{Team: *t, p: p}, nil
}
