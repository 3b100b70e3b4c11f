package membership_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/ifmatch"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
)

func ptr[T any](v T) *T { return &v }

func TestCreateTeam(t *testing.T) {
	cases := []struct {
		name        string
		p           authz.Principal
		teamID      string // "": minted
		teamName    string
		description string
		want        outcome
		// created: the call writes the team (and its event), changing fields.
		created bool
		fields  []string
	}{
		{name: "org admin creates it and owns it", p: as(orgAdmin, authz.Admin), teamID: team2, teamName: "Billing", description: "Invoices",
			want: succeeds, created: true, fields: []string{"name", "description"}},
		{name: "org owner creates it with a minted ID", p: as(orgOwner, authz.Owner), teamName: "Billing",
			want: succeeds, created: true, fields: []string{"name"}},
		{name: "multi-line description", p: as(orgAdmin, authz.Admin), teamID: team2, teamName: "Billing", description: "Invoices\n\tand refunds",
			want: succeeds, created: true, fields: []string{"name", "description"}},
		{name: "description of 2000 characters", p: as(orgAdmin, authz.Admin), teamID: team2, teamName: "Billing",
			description: strings.Repeat("ü", membership.MaxDescriptionLen), want: succeeds, created: true, fields: []string{"name", "description"}},
		{name: "org member", p: as(tOwner, authz.Member), teamID: team2, teamName: "Billing", want: fails(errs.Forbidden, "forbidden")},
		{name: "org member with an empty name", p: as(tOwner, authz.Member), teamID: team2, teamName: "", want: fails(errs.Forbidden, "forbidden")},
		{name: "empty name", p: as(orgAdmin, authz.Admin), teamID: team2, teamName: "", want: fails(errs.Invalid, "required")},
		{name: "name of 201 characters", p: as(orgAdmin, authz.Admin), teamID: team2, teamName: strings.Repeat("b", membership.MaxNameLen+1),
			want: fails(errs.Invalid, "too_long")},
		{name: "name on two lines", p: as(orgAdmin, authz.Admin), teamID: team2, teamName: "Bil\nling", want: fails(errs.Invalid, "invalid_text")},
		{name: "description of 2001 characters", p: as(orgAdmin, authz.Admin), teamID: team2, teamName: "Billing",
			description: strings.Repeat("d", membership.MaxDescriptionLen+1), want: fails(errs.Invalid, "too_long")},
		{name: "description with a control character", p: as(orgAdmin, authz.Admin), teamID: team2, teamName: "Billing", description: "a\x07b",
			want: fails(errs.Invalid, "invalid_text")},
		{name: "repeated idempotent create returns the team", p: as(orgAdmin, authz.Admin), teamID: teamID, teamName: "Billing", want: succeeds},
		{name: "creator not a user of the org", p: as(nobody, authz.Admin), teamID: team2, teamName: "Billing", want: fails(errs.Conflict, "not_org_member")},
	}
	for _, c := range cases {
		t.Run(c.want.Name("201", "CreateTeam", c.name), func(t *testing.T) {
			s := newFake()
			before := len(s.teams)
			team, err := service(s).CreateTeam(context.Background(), c.p, c.teamID, c.teamName, c.description)
			c.want.Check(t, err)
			if !c.want.OK {
				s.WantNoEvent(t)
				if len(s.teams) != before {
					t.Errorf("a team was written")
				}
				return
			}
			if team != s.teams[team.ID] {
				t.Errorf("returned %+v, stored %+v", team, s.teams[team.ID])
			}
			if !c.created {
				if team.Name != "Support" {
					t.Errorf("got %+v, want the existing team", team)
				}
				s.WantNoEvent(t)
				return
			}
			if c.teamID != "" && team.ID != c.teamID || !ids.ValidResource(team.ID) {
				t.Errorf("ID: got %q, want %q", team.ID, c.teamID)
			}
			want := membership.Team{OrgID: orgID, ID: team.ID, Name: c.teamName, Description: c.description, MemberCount: 1, OwnerCount: 1,
				Version: 1, CreatedAt: t1, UpdatedAt: t1}
			if team != want {
				t.Errorf("got %+v, want %+v", team, want)
			}
			edge := s.members[edgeKey(team.ID, c.p.UserID)]
			if want := (membership.Membership{OrgID: orgID, TeamID: team.ID, UserID: c.p.UserID, Role: authz.Owner, JoinedAt: t1, UpdatedAt: t1, Version: 1}); edge != want {
				t.Errorf("creator's edge: got %+v, want %+v", edge, want)
			}
			s.WantEvent(t, "team.create", "team", team.ID, c.p.UserID, byOrg(authz.Admin), c.fields...)
		})
	}
}

func TestGetTeam(t *testing.T) {
	support := newFake().teams[teamID]
	cases := []struct {
		name        string
		p           authz.Principal
		teamID      string
		first       *membership.Team
		withMembers bool
		want        outcome
		calls       map[string]int
		members     int
	}{
		{name: "first is used without a read", p: as(outsider, authz.Member), teamID: teamID, first: &support, want: succeeds, calls: map[string]int{}},
		{name: "read without first", p: as(outsider, authz.Member), teamID: teamID, want: succeeds, calls: map[string]int{"GetTeam": 1}},
		{name: "with members in one read", p: as(outsider, authz.Member), teamID: teamID, withMembers: true, want: succeeds,
			calls: map[string]int{"GetTeamWithMembers": 1}, members: 4},
		{name: "with members, the item collection whatever was read first", p: as(outsider, authz.Member), teamID: teamID, first: &support, withMembers: true, want: succeeds,
			calls: map[string]int{"GetTeamWithMembers": 1}, members: 4},
		{name: "missing team", p: as(outsider, authz.Member), teamID: team2, want: fails(errs.NotFound, "team_not_found"), calls: map[string]int{"GetTeam": 1}},
		{name: "missing team with members", p: as(outsider, authz.Member), teamID: team2, withMembers: true, want: fails(errs.NotFound, "team_not_found"),
			calls: map[string]int{"GetTeamWithMembers": 1}},
		{name: "no role", p: as(nobody, ""), teamID: teamID, want: fails(errs.Forbidden, "forbidden"), calls: map[string]int{}},
	}
	for _, c := range cases {
		t.Run(c.want.Name("200", "GetTeam", c.name), func(t *testing.T) {
			s := newFake()
			team, ms, err := service(s).GetTeam(context.Background(), c.p, c.teamID, c.first, c.withMembers)
			c.want.Check(t, err)
			for _, m := range []string{"GetTeam", "GetTeamWithMembers", "ListTeamMembers"} {
				if got, want := s.Calls[m], c.calls[m]; got != want {
					t.Errorf("%s calls: got %d, want %d", m, got, want)
				}
			}
			if c.want.OK && (team != support || len(ms) != c.members) {
				t.Errorf("got %+v with %d members, want %+v with %d", team, len(ms), support, c.members)
			}
		})
	}
}

func TestUpdateTeam(t *testing.T) {
	cases := []struct {
		name    string
		p       authz.Principal
		teamID  string
		patch   membership.Patch
		ifMatch ifmatch.Match
		first   bool
		setup   func(s *fakeStore)
		want    outcome
		// callerReads are reads of the caller's team edge, reads of the team.
		callerReads, reads int
		// g and fields are the event's when the update writes; fields nil:
		// it writes nothing.
		g       grant
		fields  []string
		version int64
	}{
		{name: "empty patch", p: as(tMember, authz.Member), teamID: teamID, want: fails(errs.Invalid, "empty_patch")},
		{name: "org admin renames it", p: as(orgAdmin, authz.Admin), teamID: teamID, patch: membership.Patch{Name: ptr("Help desk")},
			want: succeeds, reads: 1, g: byOrg(authz.Admin), fields: []string{"name"}, version: 2},
		{name: "org owner describes it", p: as(orgOwner, authz.Owner), teamID: teamID, patch: membership.Patch{Description: ptr("Second line")},
			want: succeeds, reads: 1, g: byOrg(authz.Admin), fields: []string{"description"}, version: 2},
		{name: "team owner renames it", p: as(tOwner, authz.Member), teamID: teamID, patch: membership.Patch{Name: ptr("Help desk")},
			want: succeeds, callerReads: 1, reads: 1, g: byTeam(authz.Admin), fields: []string{"name"}, version: 2},
		{name: "team admin renames and describes it", p: as(tAdmin, authz.Member), teamID: teamID,
			patch: membership.Patch{Name: ptr("Help desk"), Description: ptr("Second line")},
			want:  succeeds, callerReads: 1, reads: 1, g: byTeam(authz.Admin), fields: []string{"name", "description"}, version: 2},
		{name: "team admin clears the description", p: as(tAdmin, authz.Member), teamID: teamID, patch: membership.Patch{Description: ptr("")},
			want: succeeds, callerReads: 1, reads: 1, g: byTeam(authz.Admin), fields: []string{"description"}, version: 2},
		{name: "team member renames it", p: as(tMember, authz.Member), teamID: teamID, patch: membership.Patch{Name: ptr("Help desk")},
			want: fails(errs.Forbidden, "forbidden"), callerReads: 1},
		{name: "org member off the team renames it", p: as(outsider, authz.Member), teamID: teamID, patch: membership.Patch{Name: ptr("Help desk")},
			want: fails(errs.Forbidden, "forbidden"), callerReads: 1},
		{name: "org member renames a missing team", p: as(outsider, authz.Member), teamID: team2, patch: membership.Patch{Name: ptr("Help desk")},
			want: fails(errs.Forbidden, "forbidden"), callerReads: 1},
		{name: "org admin renames a missing team", p: as(orgAdmin, authz.Admin), teamID: team2, patch: membership.Patch{Name: ptr("Help desk")},
			want: fails(errs.NotFound, "team_not_found"), reads: 1},
		{name: "the caller's edge cannot be read", p: as(tAdmin, authz.Member), teamID: teamID, patch: membership.Patch{Name: ptr("Help desk")},
			setup: func(s *fakeStore) { s.Fail["GetTeamMember"] = errs.E(errs.Unavailable, "db_unavailable", "throttled") },
			want:  fails(errs.Unavailable, "db_unavailable"), callerReads: 1},
		{name: "empty name", p: as(orgAdmin, authz.Admin), teamID: teamID, patch: membership.Patch{Name: ptr("")},
			want: fails(errs.Invalid, "required"), reads: 1},
		{name: "name of 201 characters", p: as(orgAdmin, authz.Admin), teamID: teamID, patch: membership.Patch{Name: ptr(strings.Repeat("n", membership.MaxNameLen+1))},
			want: fails(errs.Invalid, "too_long"), reads: 1},
		{name: "name with a trailing space", p: as(orgAdmin, authz.Admin), teamID: teamID, patch: membership.Patch{Name: ptr("Help desk ")},
			want: fails(errs.Invalid, "invalid_text"), reads: 1},
		{name: "description of 2001 characters", p: as(orgAdmin, authz.Admin), teamID: teamID,
			patch: membership.Patch{Description: ptr(strings.Repeat("d", membership.MaxDescriptionLen+1))},
			want:  fails(errs.Invalid, "too_long"), reads: 1},
		{name: "same name writes nothing", p: as(orgAdmin, authz.Admin), teamID: teamID, patch: membership.Patch{Name: ptr("Support")},
			want: succeeds, reads: 1, version: 1},
		{name: "stale If-Match", p: as(orgAdmin, authz.Admin), teamID: teamID, patch: membership.Patch{Name: ptr("Help desk")}, ifMatch: ifmatch.Versions(2),
			want: fails(errs.PreconditionFailed, "version_mismatch"), reads: 1},
		{name: "stale If-Match of a team member", p: as(tMember, authz.Member), teamID: teamID, patch: membership.Patch{Name: ptr("Help desk")},
			ifMatch: ifmatch.Versions(2), want: fails(errs.Forbidden, "forbidden"), callerReads: 1},
		{name: "If-Match of the current version", p: as(orgAdmin, authz.Admin), teamID: teamID, patch: membership.Patch{Name: ptr("Help desk")},
			ifMatch: ifmatch.Versions(1), want: succeeds, reads: 1, g: byOrg(authz.Admin), fields: []string{"name"}, version: 2},
		{name: "If-Match *", p: as(orgAdmin, authz.Admin), teamID: teamID, patch: membership.Patch{Name: ptr("Help desk")}, ifMatch: ifmatch.Any(),
			want: succeeds, reads: 1, g: byOrg(authz.Admin), fields: []string{"name"}, version: 2},
		{name: "first is used without a read", p: as(tAdmin, authz.Member), teamID: teamID, patch: membership.Patch{Name: ptr("Help desk")}, first: true,
			want: succeeds, callerReads: 1, g: byTeam(authz.Admin), fields: []string{"name"}, version: 2},
		{name: "If-Match: a concurrent change is not retried", p: as(orgAdmin, authz.Admin), teamID: teamID, patch: membership.Patch{Name: ptr("Help desk")},
			ifMatch: ifmatch.Versions(1), first: true,
			setup: func(s *fakeStore) {
				s.BeforeWrite = once(func() { s.changeTeam(func(t *membership.Team) { t.Description = "x" }) })
			},
			want: fails(errs.PreconditionFailed, "version_mismatch")},
		{name: "no If-Match: a concurrent change is read again", p: as(orgAdmin, authz.Admin), teamID: teamID, patch: membership.Patch{Name: ptr("Help desk")},
			first: true,
			setup: func(s *fakeStore) {
				s.BeforeWrite = once(func() { s.changeTeam(func(t *membership.Team) { t.Description = "x" }) })
			},
			want: succeeds, reads: 1, g: byOrg(authz.Admin), fields: []string{"name"}, version: 3},
		{name: "no If-Match: always changed concurrently", p: as(orgAdmin, authz.Admin), teamID: teamID, patch: membership.Patch{Name: ptr("Help desk")},
			setup: func(s *fakeStore) { s.BeforeWrite = func() { s.changeTeam(func(*membership.Team) {}) } },
			want:  fails(errs.Unavailable, "busy"), reads: 12},
	}
	for _, c := range cases {
		t.Run(c.want.Name("200", "UpdateTeam", c.name), func(t *testing.T) {
			s := newFake()
			var first *membership.Team
			if c.first {
				team := s.teams[c.teamID]
				first = &team
			}
			if c.setup != nil {
				c.setup(s)
			}
			team, err := service(s).UpdateTeam(context.Background(), c.p, c.teamID, first, c.patch, c.ifMatch)
			c.want.Check(t, err)
			if got := s.edgeReads[c.p.UserID]; got != c.callerReads {
				t.Errorf("reads of the caller's edge: got %d, want %d", got, c.callerReads)
			}
			if got := s.Calls["GetTeam"]; got != c.reads {
				t.Errorf("reads of the team: got %d, want %d", got, c.reads)
			}
			if !c.want.OK {
				s.WantNoEvent(t)
				return
			}
			if team != s.teams[c.teamID] || team.Version != c.version {
				t.Errorf("returned %+v, stored %+v, want version %d", team, s.teams[c.teamID], c.version)
			}
			if c.fields == nil {
				s.WantNoEvent(t)
				return
			}
			if team.UpdatedAt != t1 || team.CreatedAt != t0 {
				t.Errorf("times: got %+v", team)
			}
			s.WantEvent(t, "team.update", "team", teamID, c.p.UserID, c.g, c.fields...)
		})
	}
}

func TestDeleteTeam(t *testing.T) {
	cases := []struct {
		name    string
		p       authz.Principal
		teamID  string
		ifMatch ifmatch.Match
		first   bool
		setup   func(s *fakeStore)
		want    outcome
		// callerReads are reads of the caller's team edge, reads of the team.
		callerReads, reads int
		deleteIf           []int64 // DeleteTeam's ifVersion, each call
		g                  grant
	}{
		{name: "org admin deletes it", p: as(orgAdmin, authz.Admin), teamID: teamID, want: succeeds, reads: 1, deleteIf: []int64{0}, g: byOrg(authz.Admin)},
		{name: "team owner deletes it", p: as(tOwner, authz.Member), teamID: teamID, want: succeeds, callerReads: 1, reads: 1, deleteIf: []int64{0},
			g: byTeam(authz.Admin)},
		{name: "team admin deletes it", p: as(tAdmin, authz.Member), teamID: teamID, want: succeeds, callerReads: 1, reads: 1, deleteIf: []int64{0},
			g: byTeam(authz.Admin)},
		{name: "team member", p: as(tMember, authz.Member), teamID: teamID, want: fails(errs.Forbidden, "forbidden"), callerReads: 1},
		{name: "org member off the team", p: as(outsider, authz.Member), teamID: teamID, want: fails(errs.Forbidden, "forbidden"), callerReads: 1},
		{name: "org member, missing team", p: as(outsider, authz.Member), teamID: team2, want: fails(errs.Forbidden, "forbidden"), callerReads: 1},
		{name: "org admin, missing team", p: as(orgAdmin, authz.Admin), teamID: team2, want: fails(errs.NotFound, "team_not_found"), reads: 1},
		{name: "stale If-Match", p: as(orgAdmin, authz.Admin), teamID: teamID, ifMatch: ifmatch.Versions(2),
			want: fails(errs.PreconditionFailed, "version_mismatch"), reads: 1},
		{name: "If-Match of the current version", p: as(orgAdmin, authz.Admin), teamID: teamID, ifMatch: ifmatch.Versions(1),
			want: succeeds, reads: 1, deleteIf: []int64{1}, g: byOrg(authz.Admin)},
		{name: "If-Match *", p: as(orgAdmin, authz.Admin), teamID: teamID, ifMatch: ifmatch.Any(),
			want: succeeds, reads: 1, deleteIf: []int64{0}, g: byOrg(authz.Admin)},
		{name: "first is used without a read", p: as(orgAdmin, authz.Admin), teamID: teamID, first: true,
			want: succeeds, deleteIf: []int64{0}, g: byOrg(authz.Admin)},
		{name: "If-Match on a stale first: the store decides", p: as(orgAdmin, authz.Admin), teamID: teamID, first: true, ifMatch: ifmatch.Versions(1),
			setup: func(s *fakeStore) { s.changeTeam(func(*membership.Team) {}) },
			want:  fails(errs.PreconditionFailed, "version_mismatch"), deleteIf: []int64{1}},
	}
	for _, c := range cases {
		t.Run(c.want.Name("204", "DeleteTeam", c.name), func(t *testing.T) {
			s := newFake()
			var first *membership.Team
			if c.first {
				team := s.teams[c.teamID]
				first = &team
			}
			if c.setup != nil {
				c.setup(s)
			}
			err := service(s).DeleteTeam(context.Background(), c.p, c.teamID, first, c.ifMatch)
			c.want.Check(t, err)
			if got := s.edgeReads[c.p.UserID]; got != c.callerReads {
				t.Errorf("reads of the caller's edge: got %d, want %d", got, c.callerReads)
			}
			if got := s.Calls["GetTeam"]; got != c.reads {
				t.Errorf("reads of the team: got %d, want %d", got, c.reads)
			}
			if !slices.Equal(s.deleteIf, c.deleteIf) {
				t.Errorf("DeleteTeam's ifVersion: got %v, want %v", s.deleteIf, c.deleteIf)
			}
			if !c.want.OK {
				s.WantNoEvent(t)
				return
			}
			if _, ok := s.teams[c.teamID]; ok || len(s.members) != 0 {
				t.Errorf("the team or its edges are still stored")
			}
			s.WantEvent(t, "team.delete", "team", teamID, c.p.UserID, c.g, "name", "memberCount")
		})
	}
}

func TestListTeams(t *testing.T) {
	cases := []struct {
		name string
		p    authz.Principal
		want outcome
	}{
		{name: "any member", p: as(outsider, authz.Member), want: succeeds},
		{name: "no role", p: as(nobody, ""), want: fails(errs.Forbidden, "forbidden")},
	}
	for _, c := range cases {
		t.Run(c.want.Name("200", "ListTeams", c.name), func(t *testing.T) {
			s := newFake()
			r, err := service(s).ListTeams(context.Background(), c.p, page.Request{Limit: 10})
			c.want.Check(t, err)
			if c.want.OK && (len(r.Items) != 1 || r.Items[0].ID != teamID) {
				t.Errorf("got %+v, want the one team", r.Items)
			}
			if !c.want.OK && s.Calls["ListTeams"] != 0 {
				t.Errorf("the store was read")
			}
		})
		t.Run(c.want.Name("200", "BatchGetTeams", c.name), func(t *testing.T) {
			s := newFake()
			m, err := service(s).BatchGetTeams(context.Background(), c.p, []string{teamID, team2})
			c.want.Check(t, err)
			if _, ok := m[teamID]; c.want.OK && (len(m) != 1 || !ok) {
				t.Errorf("got %v, want only %s", m, teamID)
			}
		})
	}
}
