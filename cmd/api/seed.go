package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
)

// devHS256Secret is the HS256 secret scripts/run.sh (make run) uses when
// AUTH_HS256_SECRET is not set: dev only, never production.
const devHS256Secret = "dev-secret-change-me-0123456789abcdef"

// seedID returns the n-th fixed demo ID: the same on every run, so seeding
// twice writes nothing new.
func seedID(n int) string {
	t := time.Date(2026, 1, 1, 0, 0, n, 0, time.UTC)
	return ulid.MustNew(ulid.Timestamp(t), bytes.NewReader(make([]byte, 16))).String()
}

// seed loads seed 000's demo tenant (Alice owns Engineering and is an admin
// of Design; Bob is in Engineering; a team keeps an owner in tenantd, so
// Dana owns Design) with a few tickets and comments.
// Existing items are left alone, so it is idempotent and resumes a
// partial run.
func seed(ctx context.Context, db *store.DB, out io.Writer) error {
	orgs, teams, tickets := &store.Orgs{DB: db}, &store.Teams{DB: db}, &store.Tickets{DB: db}
	now := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	acme := tenant.Org{ID: seedID(0), Name: "Acme (demo)", Version: 1, CreatedAt: now, UpdatedAt: now}
	user := func(id, email, name string, r authz.Role) tenant.User {
		return tenant.User{OrgID: acme.ID, UserID: id, Email: email, Name: name, Role: r, JoinedAt: now, UpdatedAt: now, Version: 1}
	}
	alice, bob := user("u_alice", "alice@example.com", "Alice Chen", authz.Owner), user("u_bob", "bob@example.com", "Bob Park", authz.Member)
	dana := user("u_dana", "dana@example.com", "Dana Reyes", authz.Member)
	newTeam := func(id, name string) membership.Team {
		return membership.Team{OrgID: acme.ID, ID: id, Name: name, MemberCount: 1, OwnerCount: 1, Version: 1, CreatedAt: now, UpdatedAt: now}
	}
	member := func(t membership.Team, uid string, r authz.Role) membership.Membership {
		return membership.Membership{OrgID: acme.ID, TeamID: t.ID, UserID: uid, Role: r, JoinedAt: now, UpdatedAt: now, Version: 1}
	}
	eng, design := newTeam(seedID(1), "Engineering"), newTeam(seedID(2), "Design")
	tk := func(n int, title string, s ticket.Status, requester, assignee, teamID string, tags ...string) ticket.Ticket {
		at := now.Add(time.Duration(n) * time.Hour)
		return ticket.Ticket{OrgID: acme.ID, ID: seedID(10 + n), Title: title, Status: s, Priority: ticket.PriorityNormal,
			RequesterID: requester, AssigneeID: assignee, TeamID: teamID, Tags: tags, Version: 1, CreatedAt: at, UpdatedAt: at}
	}
	demo := []ticket.Ticket{
		tk(1, "Login page times out", ticket.StatusOpen, "u_bob", "u_alice", eng.ID, "auth", "bug"),
		tk(2, "Dark mode for the dashboard", ticket.StatusNew, "u_bob", "", design.ID, "feature"),
		tk(3, "Invoice total is wrong", ticket.StatusPending, "u_alice", "u_bob", "", "billing"),
	}
	// Every write records its audit event, made by Alice, the org's creator
	// (from outside the org: no role fence, the seed runs unauthenticated).
	evIDs := ids.NewGenerator(func() time.Time { return now })
	ev := func(action, targetType, targetID string, at time.Time) audit.Event {
		return audit.NewEvent(ctx, evIDs, audit.Outsider(acme.ID, "u_alice"), action, targetType, targetID, at, nil)
	}
	type step struct {
		what string
		run  func() error
	}
	steps := []step{
		{"org Acme (demo) with owner Alice", func() error { return orgs.CreateOrg(ctx, acme, alice, ev("org.create", "org", acme.ID, now)) }},
		{"user Bob", func() error { return orgs.AddOrgUser(ctx, bob, ev("user.add", "user", bob.UserID, now)) }},
		{"user Dana", func() error { return orgs.AddOrgUser(ctx, dana, ev("user.add", "user", dana.UserID, now)) }},
		{"team Engineering", func() error {
			return teams.CreateTeam(ctx, eng, member(eng, "u_alice", authz.Owner), ev("team.create", "team", eng.ID, now))
		}},
		{"Bob in Engineering", func() error {
			return teams.AddTeamMember(ctx, member(eng, "u_bob", authz.Member), ev("member.add", "member", eng.ID+"/u_bob", now))
		}},
		{"team Design", func() error {
			return teams.CreateTeam(ctx, design, member(design, "u_dana", authz.Owner), ev("team.create", "team", design.ID, now))
		}},
		{"Alice in Design", func() error {
			return teams.AddTeamMember(ctx, member(design, "u_alice", authz.Admin), ev("member.add", "member", design.ID+"/u_alice", now))
		}},
	}
	for i, t := range demo {
		c := ticket.Comment{OrgID: acme.ID, TicketID: t.ID, ID: seedID(20 + i), AuthorID: "u_alice", Body: "Looking into it.", CreatedAt: t.CreatedAt.Add(time.Minute)}
		steps = append(steps,
			step{"ticket " + t.Title, func() error { return tickets.CreateTicket(ctx, t, ev("ticket.create", "ticket", t.ID, t.CreatedAt)) }},
			step{"comment on " + t.Title, func() error {
				return tickets.CreateComment(ctx, c, ev("comment.create", "comment", t.ID+"/"+c.ID, c.CreatedAt))
			}})
	}
	for _, s := range steps {
		err := s.run()
		switch {
		case err == nil:
			fmt.Fprintln(out, "seed: added", s.what)
		case errs.Is(err, errs.Conflict):
			fmt.Fprintln(out, "seed: kept", s.what)
		default:
			return fmt.Errorf("seed %s: %w", s.what, err)
		}
	}
	fmt.Fprintf(out, "seed: org %s; mint a token for Alice with (the dev secret of make run):\n"+
		"  AUTH_HS256_SECRET=%s go run ./cmd/api token --sub u_alice --email alice@example.com --name 'Alice Chen'\n", acme.ID, devHS256Secret)
	return nil
}
