package membership_test

import (
	"context"
	"testing"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ifmatch"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
)

// edgeReadsWant is what a case expects of the reads of team edges: the
// caller's (to decide) and the target's (to write), one map when they are
// the same user.
func edgeReadsWant(caller, target string, callerReads, targetReads int) map[string]int {
	m := map[string]int{caller: callerReads}
	m[target] += targetReads
	return m
}

func TestPutTeamMember(t *testing.T) {
	cases := []struct {
		name    string
		p       authz.Principal
		teamID  string
		target  string
		role    authz.Role
		ifMatch ifmatch.Match
		setup   func(s *fakeStore)
		want    outcome
		// created is what the call reports; action ("member.add",
		// "member.update" or "": none) and g are its event's.
		created                  bool
		action                   string
		g                        grant
		callerReads, targetReads int
		// role is the target's role after the call ("": no edge).
		after authz.Role
	}{
		// Roles are checked first.
		{name: "bad role", p: as(tMember, authz.Member), teamID: teamID, target: outsider, role: "superuser", want: fails(errs.Invalid, "invalid_role")},
		{name: "no role", p: as(orgAdmin, authz.Admin), teamID: teamID, target: outsider, role: "", want: fails(errs.Invalid, "invalid_role")},

		// Adding.
		{name: "org admin adds a member", p: as(orgAdmin, authz.Admin), teamID: teamID, target: outsider, role: authz.Member,
			want: succeeds, created: true, action: "member.add", g: byOrg(authz.Admin), after: authz.Member},
		{name: "org admin adds an owner", p: as(orgAdmin, authz.Admin), teamID: teamID, target: outsider, role: authz.Owner,
			want: succeeds, created: true, action: "member.add", g: byOrg(authz.Admin), after: authz.Owner},
		{name: "org admin adds themself", p: as(orgAdmin, authz.Admin), teamID: teamID, target: orgAdmin, role: authz.Admin,
			want: succeeds, created: true, action: "member.add", g: byOrg(authz.Admin), after: authz.Admin},
		{name: "team admin adds a member", p: as(tAdmin, authz.Member), teamID: teamID, target: outsider, role: authz.Member,
			want: succeeds, created: true, action: "member.add", g: byTeam(authz.Admin), callerReads: 1, after: authz.Member},
		{name: "team admin adds an admin", p: as(tAdmin, authz.Member), teamID: teamID, target: outsider, role: authz.Admin,
			want: succeeds, created: true, action: "member.add", g: byTeam(authz.Admin), callerReads: 1, after: authz.Admin},
		// The authorization read found the caller's team role: no read of it.
		{name: "team admin adds a member, their team role read with the decision", p: onTeam(as(tAdmin, authz.Member), teamID, authz.Admin), teamID: teamID,
			target: outsider, role: authz.Member, want: succeeds, created: true, action: "member.add", g: byTeam(authz.Admin), after: authz.Member},
		{name: "team member with no team role read with the decision", p: onTeam(as(outsider, authz.Member), teamID, ""), teamID: teamID,
			target: outsider, role: authz.Member, want: fails(errs.Forbidden, "forbidden")},
		{name: "a team role read for another team is not this team's", p: onTeam(as(tAdmin, authz.Member), team2, authz.Owner), teamID: teamID,
			target: outsider, role: authz.Member, want: succeeds, created: true, action: "member.add", g: byTeam(authz.Admin), callerReads: 1, after: authz.Member},
		{name: "team admin adds an owner", p: as(tAdmin, authz.Member), teamID: teamID, target: outsider, role: authz.Owner,
			want: fails(errs.Forbidden, "forbidden"), callerReads: 1},
		{name: "team owner adds an owner", p: as(tOwner, authz.Member), teamID: teamID, target: outsider, role: authz.Owner,
			want: succeeds, created: true, action: "member.add", g: byTeam(authz.Owner), callerReads: 1, after: authz.Owner},
		{name: "team member adds a member", p: as(tMember, authz.Member), teamID: teamID, target: outsider, role: authz.Member,
			want: fails(errs.Forbidden, "forbidden"), callerReads: 1},
		{name: "org member adds themself", p: as(outsider, authz.Member), teamID: teamID, target: outsider, role: authz.Member,
			want: fails(errs.Forbidden, "forbidden"), callerReads: 1},
		{name: "org member adds to a missing team", p: as(outsider, authz.Member), teamID: team2, target: tMember, role: authz.Member,
			want: fails(errs.Forbidden, "forbidden"), callerReads: 1},
		{name: "org admin adds to a missing team", p: as(orgAdmin, authz.Admin), teamID: team2, target: tMember, role: authz.Member,
			want: fails(errs.NotFound, "team_not_found")},
		{name: "org admin adds a user not in the org", p: as(orgAdmin, authz.Admin), teamID: teamID, target: nobody, role: authz.Member,
			want: fails(errs.Conflict, "not_org_member")},

		// Changing a role.
		{name: "team admin promotes a member to admin", p: as(tAdmin, authz.Member), teamID: teamID, target: tMember, role: authz.Admin,
			want: succeeds, action: "member.update", g: byTeam(authz.Admin), callerReads: 1, after: authz.Admin},
		{name: "team admin demotes themself", p: as(tAdmin, authz.Member), teamID: teamID, target: tAdmin, role: authz.Member,
			want: succeeds, action: "member.update", g: byTeam(authz.Admin), callerReads: 1, after: authz.Member},
		{name: "team admin promotes a member to owner", p: as(tAdmin, authz.Member), teamID: teamID, target: tMember, role: authz.Owner,
			want: fails(errs.Forbidden, "forbidden"), callerReads: 1, after: authz.Member},
		{name: "team admin makes themself owner", p: as(tAdmin, authz.Member), teamID: teamID, target: tAdmin, role: authz.Owner,
			want: fails(errs.Forbidden, "forbidden"), callerReads: 1, after: authz.Admin},
		{name: "team admin demotes a team owner", p: as(tAdmin, authz.Member), teamID: teamID, target: tOwner, role: authz.Admin,
			want: fails(errs.Forbidden, "forbidden"), callerReads: 1, after: authz.Owner},
		{name: "team owner demotes another owner", p: as(tOwner, authz.Member), teamID: teamID, target: tOwner2, role: authz.Member,
			want: succeeds, action: "member.update", g: byTeam(authz.Owner), callerReads: 1, after: authz.Member},
		{name: "team owner promotes a member to owner", p: as(tOwner, authz.Member), teamID: teamID, target: tMember, role: authz.Owner,
			want: succeeds, action: "member.update", g: byTeam(authz.Owner), callerReads: 1, after: authz.Owner},
		{name: "org admin demotes a team owner", p: as(orgAdmin, authz.Admin), teamID: teamID, target: tOwner, role: authz.Member,
			want: succeeds, action: "member.update", g: byOrg(authz.Admin), after: authz.Member},
		{name: "team member promotes themself", p: as(tMember, authz.Member), teamID: teamID, target: tMember, role: authz.Admin,
			want: fails(errs.Forbidden, "forbidden"), callerReads: 1, after: authz.Member},
		{name: "last team owner demoted", p: as(orgAdmin, authz.Admin), teamID: teamID, target: tOwner, role: authz.Admin,
			setup: func(s *fakeStore) { delete(s.members, edgeKey(teamID, tOwner2)); s.recount(teamID) },
			want:  fails(errs.Conflict, "last_team_owner"), after: authz.Owner},
		{name: "same role writes nothing", p: as(tAdmin, authz.Member), teamID: teamID, target: tMember, role: authz.Member,
			want: succeeds, callerReads: 1, after: authz.Member},
		{name: "team owner keeps an owner an owner", p: as(tOwner, authz.Member), teamID: teamID, target: tOwner2, role: authz.Owner,
			want: succeeds, callerReads: 1, after: authz.Owner},

		// If-Match.
		{name: "If-Match on a missing edge", p: as(orgAdmin, authz.Admin), teamID: teamID, target: outsider, role: authz.Member, ifMatch: ifmatch.Versions(1),
			want: fails(errs.PreconditionFailed, "version_mismatch")},
		{name: "If-Match * on a missing edge", p: as(orgAdmin, authz.Admin), teamID: teamID, target: outsider, role: authz.Member, ifMatch: ifmatch.Any(),
			want: fails(errs.PreconditionFailed, "version_mismatch")},
		{name: "stale If-Match", p: as(orgAdmin, authz.Admin), teamID: teamID, target: tMember, role: authz.Admin, ifMatch: ifmatch.Versions(2),
			want: fails(errs.PreconditionFailed, "version_mismatch"), after: authz.Member},
		{name: "stale If-Match of a team member", p: as(tMember, authz.Member), teamID: teamID, target: tAdmin, role: authz.Member, ifMatch: ifmatch.Versions(2),
			want: fails(errs.Forbidden, "forbidden"), callerReads: 1, after: authz.Admin},
		{name: "stale If-Match on the same role", p: as(orgAdmin, authz.Admin), teamID: teamID, target: tMember, role: authz.Member, ifMatch: ifmatch.Versions(2),
			want: fails(errs.PreconditionFailed, "version_mismatch"), after: authz.Member},
		{name: "If-Match of the current version", p: as(orgAdmin, authz.Admin), teamID: teamID, target: tMember, role: authz.Admin, ifMatch: ifmatch.Versions(1),
			want: succeeds, action: "member.update", g: byOrg(authz.Admin), after: authz.Admin},
		{name: "If-Match *", p: as(orgAdmin, authz.Admin), teamID: teamID, target: tMember, role: authz.Admin, ifMatch: ifmatch.Any(),
			want: succeeds, action: "member.update", g: byOrg(authz.Admin), after: authz.Admin},
		{name: "If-Match: a concurrent change is not retried", p: as(orgAdmin, authz.Admin), teamID: teamID, target: tMember, role: authz.Admin,
			ifMatch: ifmatch.Versions(1),
			setup: func(s *fakeStore) {
				s.BeforeWrite = once(func() { s.change(tMember, func(*membership.Membership) {}) })
			},
			want: fails(errs.PreconditionFailed, "version_mismatch"), after: authz.Member},

		{name: "If-Match: removed concurrently", p: as(orgAdmin, authz.Admin), teamID: teamID, target: tMember, role: authz.Admin,
			ifMatch: ifmatch.Versions(1),
			setup: func(s *fakeStore) {
				s.BeforeWrite = once(func() { delete(s.members, edgeKey(teamID, tMember)); s.recount(teamID) })
			},
			want: fails(errs.PreconditionFailed, "version_mismatch")},

		// Without If-Match, "this role, whatever it was".
		{name: "no If-Match: created concurrently, then changed", p: as(orgAdmin, authz.Admin), teamID: teamID, target: outsider, role: authz.Admin,
			setup: func(s *fakeStore) { s.BeforeWrite = once(func() { s.putEdge(seedEdge(outsider, authz.Member)) }) },
			want:  succeeds, action: "member.update", g: byOrg(authz.Admin), targetReads: 1, after: authz.Admin},
		{name: "no If-Match: created concurrently with the same role", p: as(orgAdmin, authz.Admin), teamID: teamID, target: outsider, role: authz.Member,
			setup: func(s *fakeStore) { s.BeforeWrite = once(func() { s.putEdge(seedEdge(outsider, authz.Member)) }) },
			want:  succeeds, targetReads: 1, after: authz.Member},
		{name: "no If-Match: removed concurrently, then added", p: as(orgAdmin, authz.Admin), teamID: teamID, target: tMember, role: authz.Admin,
			setup: func(s *fakeStore) {
				s.BeforeWrite = once(func() { delete(s.members, edgeKey(teamID, tMember)); s.recount(teamID) })
			},
			want: succeeds, created: true, action: "member.add", g: byOrg(authz.Admin), targetReads: 1, after: authz.Admin},
		{name: "no If-Match: a concurrent change is read again", p: as(tAdmin, authz.Member), teamID: teamID, target: tMember, role: authz.Admin,
			setup: func(s *fakeStore) {
				s.BeforeWrite = once(func() { s.change(tMember, func(*membership.Membership) {}) })
			},
			want: succeeds, action: "member.update", g: byTeam(authz.Admin), callerReads: 1, targetReads: 1, after: authz.Admin},
		{name: "retry decides again: the target became a team owner", p: as(tAdmin, authz.Member), teamID: teamID, target: tMember, role: authz.Admin,
			setup: func(s *fakeStore) {
				s.BeforeWrite = once(func() { s.change(tMember, func(m *membership.Membership) { m.Role = authz.Owner }) })
			},
			want: fails(errs.Forbidden, "forbidden"), callerReads: 1, targetReads: 1, after: authz.Owner},
		{name: "no If-Match: always changed concurrently", p: as(orgAdmin, authz.Admin), teamID: teamID, target: tMember, role: authz.Admin,
			setup: func(s *fakeStore) { s.BeforeWrite = func() { s.change(tMember, func(*membership.Membership) {}) } },
			want:  fails(errs.Unavailable, "busy"), targetReads: 11, after: authz.Member},
	}
	for _, c := range cases {
		t.Run(c.want.Name(map[bool]string{true: "201", false: "200"}[c.created], "PutTeamMember", c.name), func(t *testing.T) {
			s := newFake()
			// first is the target's edge as stored (nil when there is
			// none), as a route's authorization read passes it.
			var first *membership.Membership
			if m, ok := s.members[edgeKey(c.teamID, c.target)]; ok {
				first = &m
			}
			if c.setup != nil {
				c.setup(s)
			}
			before := s.members[edgeKey(c.teamID, c.target)]
			m, created, err := service(s).PutTeamMember(context.Background(), c.p, c.teamID, c.target, first, c.role, c.ifMatch)
			c.want.Check(t, err)
			for id, want := range edgeReadsWant(c.p.UserID, c.target, c.callerReads, c.targetReads) {
				if got := s.edgeReads[id]; got != want {
					t.Errorf("reads of %s's edge: got %d, want %d", id, got, want)
				}
			}
			stored, ok := s.members[edgeKey(c.teamID, c.target)]
			if after := map[bool]authz.Role{true: stored.Role}[ok]; after != c.after {
				t.Errorf("stored role: got %q, want %q", after, c.after)
			}
			if !c.want.OK {
				s.WantNoEvent(t)
				if c.setup == nil && stored != before {
					t.Errorf("stored: got %+v, want it unchanged %+v", stored, before)
				}
				return
			}
			if created != c.created {
				t.Errorf("created: got %v, want %v", created, c.created)
			}
			if m != stored {
				t.Errorf("returned %+v, stored %+v", m, stored)
			}
			if c.action == "" {
				s.WantNoEvent(t)
				if s.Calls["UpdateTeamMember"] != 0 {
					t.Errorf("UpdateTeamMember was called")
				}
				return
			}
			if m.UpdatedAt != t1 {
				t.Errorf("updated at: got %v, want %v", m.UpdatedAt, t1)
			}
			if c.created && (m.Version != 1 || m.JoinedAt != t1) {
				t.Errorf("created edge: got %+v, want version 1 joined at %v", m, t1)
			}
			s.WantEvent(t, c.action, "member", teamID+"/"+c.target, c.p.UserID, c.g, "role")
		})
	}
}

func TestRemoveTeamMember(t *testing.T) {
	cases := []struct {
		name    string
		p       authz.Principal
		teamID  string
		target  string
		ifMatch ifmatch.Match
		first   bool
		setup   func(s *fakeStore)
		want    outcome
		g       grant
		// callerReads and targetReads are reads of the caller's and the
		// target's team edges.
		callerReads, targetReads int
	}{
		{name: "org admin removes a member", p: as(orgAdmin, authz.Admin), teamID: teamID, target: tMember, want: succeeds, g: byOrg(authz.Admin), targetReads: 1},
		{name: "org admin removes a team owner", p: as(orgAdmin, authz.Admin), teamID: teamID, target: tOwner, want: succeeds, g: byOrg(authz.Admin), targetReads: 1},
		{name: "team admin removes a member", p: as(tAdmin, authz.Member), teamID: teamID, target: tMember, want: succeeds, g: byTeam(authz.Admin),
			callerReads: 1, targetReads: 1},
		{name: "team admin leaves", p: as(tAdmin, authz.Member), teamID: teamID, target: tAdmin, want: succeeds, g: byTeam(authz.Admin),
			callerReads: 1, targetReads: 1},
		{name: "team owner removes another owner", p: as(tOwner, authz.Member), teamID: teamID, target: tOwner2, want: succeeds, g: byTeam(authz.Owner),
			callerReads: 1, targetReads: 1},
		{name: "team admin removes a team owner", p: as(tAdmin, authz.Member), teamID: teamID, target: tOwner, want: fails(errs.Forbidden, "forbidden"),
			callerReads: 1, targetReads: 1},
		{name: "team member removes another", p: as(tMember, authz.Member), teamID: teamID, target: tAdmin, want: fails(errs.Forbidden, "forbidden"),
			callerReads: 1},
		{name: "team member leaves", p: as(tMember, authz.Member), teamID: teamID, target: tMember, want: fails(errs.Forbidden, "forbidden"), callerReads: 1},
		{name: "org member removes a missing edge", p: as(outsider, authz.Member), teamID: teamID, target: nobody, want: fails(errs.Forbidden, "forbidden"),
			callerReads: 1},
		{name: "org admin removes a missing edge", p: as(orgAdmin, authz.Admin), teamID: teamID, target: outsider,
			want: fails(errs.NotFound, "member_not_found"), targetReads: 1},
		{name: "last team owner", p: as(orgAdmin, authz.Admin), teamID: teamID, target: tOwner,
			setup: func(s *fakeStore) { delete(s.members, edgeKey(teamID, tOwner2)); s.recount(teamID) },
			want:  fails(errs.Conflict, "last_team_owner"), targetReads: 1},
		{name: "stale If-Match", p: as(orgAdmin, authz.Admin), teamID: teamID, target: tMember, ifMatch: ifmatch.Versions(2),
			want: fails(errs.PreconditionFailed, "version_mismatch"), targetReads: 1},
		{name: "If-Match *", p: as(orgAdmin, authz.Admin), teamID: teamID, target: tMember, ifMatch: ifmatch.Any(), want: succeeds, g: byOrg(authz.Admin),
			targetReads: 1},
		{name: "first is used without a read", p: as(tAdmin, authz.Member), teamID: teamID, target: tMember, first: true, want: succeeds,
			g: byTeam(authz.Admin), callerReads: 1},
		{name: "If-Match: a concurrent change is not retried", p: as(orgAdmin, authz.Admin), teamID: teamID, target: tMember, first: true,
			ifMatch: ifmatch.Versions(1),
			setup: func(s *fakeStore) {
				s.BeforeWrite = once(func() { s.change(tMember, func(*membership.Membership) {}) })
			},
			want: fails(errs.PreconditionFailed, "version_mismatch")},
		{name: "no If-Match: a concurrent change is read again", p: as(orgAdmin, authz.Admin), teamID: teamID, target: tMember, first: true,
			setup: func(s *fakeStore) {
				s.BeforeWrite = once(func() { s.change(tMember, func(*membership.Membership) {}) })
			},
			want: succeeds, g: byOrg(authz.Admin), targetReads: 1},
		{name: "retry decides again: the target became a team owner", p: as(tAdmin, authz.Member), teamID: teamID, target: tMember, first: true,
			setup: func(s *fakeStore) {
				s.BeforeWrite = once(func() { s.change(tMember, func(m *membership.Membership) { m.Role = authz.Owner }) })
			},
			want: fails(errs.Forbidden, "forbidden"), callerReads: 1, targetReads: 1},
		{name: "no If-Match: always changed concurrently", p: as(orgAdmin, authz.Admin), teamID: teamID, target: tMember,
			setup: func(s *fakeStore) { s.BeforeWrite = func() { s.change(tMember, func(*membership.Membership) {}) } },
			want:  fails(errs.Unavailable, "busy"), targetReads: 12},
	}
	for _, c := range cases {
		t.Run(c.want.Name("204", "RemoveTeamMember", c.name), func(t *testing.T) {
			s := newFake()
			var first *membership.Membership
			if c.first {
				m := s.edge(t, c.target)
				first = &m
			}
			if c.setup != nil {
				c.setup(s)
			}
			_, had := s.members[edgeKey(c.teamID, c.target)]
			err := service(s).RemoveTeamMember(context.Background(), c.p, c.teamID, c.target, first, c.ifMatch)
			c.want.Check(t, err)
			for id, want := range edgeReadsWant(c.p.UserID, c.target, c.callerReads, c.targetReads) {
				if got := s.edgeReads[id]; got != want {
					t.Errorf("reads of %s's edge: got %d, want %d", id, got, want)
				}
			}
			_, has := s.members[edgeKey(c.teamID, c.target)]
			if !c.want.OK {
				s.WantNoEvent(t)
				if has != had {
					t.Errorf("the edge was removed")
				}
				return
			}
			if has {
				t.Errorf("the edge is still stored")
			}
			s.WantEvent(t, "member.remove", "member", teamID+"/"+c.target, c.p.UserID, c.g, "role")
		})
	}
}

func TestReadMembers(t *testing.T) {
	t.Run("200/GetTeamMember/first is used without a read", func(t *testing.T) {
		s := newFake()
		m := s.edge(t, tMember)
		got, err := service(s).GetTeamMember(context.Background(), as(outsider, authz.Member), teamID, tMember, &m)
		succeeds.Check(t, err)
		if got != m || s.edgeReads[tMember] != 0 {
			t.Errorf("got %+v after %d reads, want %+v and none", got, s.edgeReads[tMember], m)
		}
	})
	t.Run("404/GetTeamMember/missing edge", func(t *testing.T) {
		s := newFake()
		_, err := service(s).GetTeamMember(context.Background(), as(outsider, authz.Member), teamID, outsider, nil)
		fails(errs.NotFound, "member_not_found").Check(t, err)
	})
	t.Run("403/GetTeamMember/no role", func(t *testing.T) {
		s := newFake()
		_, err := service(s).GetTeamMember(context.Background(), as(nobody, ""), teamID, tMember, nil)
		fails(errs.Forbidden, "forbidden").Check(t, err)
		if s.edgeReads[tMember] != 0 {
			t.Errorf("the edge was read")
		}
	})

	cases := []struct {
		name      string
		withUsers bool
		batches   int
		embedded  int
	}{
		{name: "with users, one batch read; a user who left stays unexpanded", withUsers: true, batches: 1, embedded: 3},
		{name: "without users", batches: 0, embedded: 0},
	}
	for _, c := range cases {
		t.Run("200/ListTeamMembers/"+c.name, func(t *testing.T) {
			s := newFake()
			delete(s.users, tOwner2) // left the org; the edge is not gone yet
			r, err := service(s).ListTeamMembers(context.Background(), as(outsider, authz.Member), teamID, c.withUsers, page.Request{Limit: 10})
			succeeds.Check(t, err)
			embedded := 0
			for _, m := range r.Items {
				if m.User != nil {
					embedded++
					if m.User.UserID != m.UserID {
						t.Errorf("edge of %s embeds %s", m.UserID, m.User.UserID)
					}
				}
			}
			if len(r.Items) != 4 || embedded != c.embedded || s.Calls["BatchGetOrgUsers"] != c.batches {
				t.Errorf("got %d members, %d embedded, %d batch reads; want 4, %d, %d", len(r.Items), embedded, s.Calls["BatchGetOrgUsers"], c.embedded, c.batches)
			}
		})
	}
	t.Run("404/ListTeamMembers/missing team", func(t *testing.T) {
		s := newFake()
		_, err := service(s).ListTeamMembers(context.Background(), as(outsider, authz.Member), team2, true, page.Request{Limit: 10})
		fails(errs.NotFound, "team_not_found").Check(t, err)
	})
	t.Run("200/ListUserTeams/with names, one batch read", func(t *testing.T) {
		s := newFake()
		s.teams[team2] = membership.Team{OrgID: orgID, ID: team2, Name: "Billing", Version: 1}
		m := seedEdge(tMember, authz.Owner)
		m.TeamID = team2
		s.putEdge(m)
		r, err := service(s).ListUserTeams(context.Background(), as(outsider, authz.Member), tMember, true, page.Request{Limit: 10})
		succeeds.Check(t, err)
		if len(r.Items) != 2 || r.Items[0].TeamName != "Support" || r.Items[1].TeamName != "Billing" || s.Calls["BatchGetTeams"] != 1 {
			t.Errorf("got %+v after %d batch reads", r.Items, s.Calls["BatchGetTeams"])
		}
	})
	t.Run("200/ListUserTeams/without names", func(t *testing.T) {
		s := newFake()
		r, err := service(s).ListUserTeams(context.Background(), as(outsider, authz.Member), tMember, false, page.Request{Limit: 10})
		succeeds.Check(t, err)
		if len(r.Items) != 1 || r.Items[0].TeamName != "" || s.Calls["BatchGetTeams"] != 0 {
			t.Errorf("got %+v after %d batch reads", r.Items, s.Calls["BatchGetTeams"])
		}
	})
	t.Run("404/ListUserTeams/user not in the org", func(t *testing.T) {
		s := newFake()
		_, err := service(s).ListUserTeams(context.Background(), as(outsider, authz.Member), nobody, true, page.Request{Limit: 10})
		fails(errs.NotFound, "user_not_found").Check(t, err)
	})
}
