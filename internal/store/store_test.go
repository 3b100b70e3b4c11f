package store_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantd/tenantd/internal/access"
	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/invitation"
	"github.com/tenantd/tenantd/internal/page"
	orgpkg "github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
)

// The rules every store method keeps: IDs are checked before they reach a
// key, pages are bounded and cursors cannot leave their listing, and every
// write carries its audit event.

// TestInvalidIDsNeverReachDynamoDB: a malformed ID is refused with Invalid
// before any request is made.
func TestInvalidIDsNeverReachDynamoDB(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, s := MustSampled(t)
	org, eng := s.Org.ID, s.Eng.ID
	all := page.Request{}

	badUsers := []string{"a#b", "u_bob#", "#METADATA", "%23", "u%23bob", strings.Repeat("a", 129), "a\x00b", "bob\n",
		"\tbob", "u bob", "\u0430lice" /* Cyrillic а */, "\uff42ob" /* fullwidth b */, "bob\u200b", "b\xffob", "", "USER#u_bob"}
	badResources := []string{"not-a-ulid", strings.ToLower(eng), eng[:25], eng + "0", eng[:25] + "#", "8" + eng[1:],
		"01ARZ3NDEKTSV4RRFFQ69G5FAI", "%23", "", "01ARZ3NDEKTSV4RRFFQ69G5F\u0410" /* Cyrillic А */, eng[:25] + "\x00"}

	type call struct {
		name string
		fn   func(bad string) error
	}
	userCalls := []call{
		{"GetUser", func(b string) error { _, err := f.Orgs.GetOrgUser(ctx, org, b); return err }},
		{"ListUserOrgs", func(b string) error { _, err := f.Orgs.ListOrgs(ctx, b, all); return err }},
		{"ListUserTeams", func(b string) error { _, err := f.Teams.ListUserTeams(ctx, org, b, all); return err }},
		{"GetMember", func(b string) error { _, err := f.Teams.GetTeamMember(ctx, org, eng, b); return err }},
		{"AddUser", func(b string) error {
			return f.Orgs.AddOrgUser(ctx, f.user(org, b, "new@example.com", "New", authz.Member), evOrg(org))
		}},
		{"RemoveUser", func(b string) error {
			return f.Orgs.RemoveOrgUser(ctx, f.user(org, b, "new@example.com", "New", authz.Member), evOrg(org))
		}},
		{"AddMember", func(b string) error {
			return f.Teams.AddTeamMember(ctx, f.member(s.Eng, b, authz.Member), ev(s.Eng))
		}},
		{"RemoveMember", func(b string) error {
			return f.Teams.RemoveTeamMember(ctx, f.member(s.Eng, b, authz.Member), ev(s.Eng))
		}},
		{"CreateTeam", func(b string) error {
			tm := f.team(org, "T")
			return f.Teams.CreateTeam(ctx, tm, f.member(tm, b, authz.Owner), ev(tm))
		}},
		{"BatchGetUsers", func(b string) error {
			if b == "" { // empty IDs are skipped by design
				b = "a#b"
			}
			_, err := f.Orgs.BatchGetOrgUsers(ctx, org, []string{"u_alice", b})
			return err
		}},
		{"ListAssignedTickets", func(b string) error { _, err := f.Tickets.ListAssignedTickets(ctx, org, b, all); return err }},
		{"ListRequestedTickets", func(b string) error {
			_, err := f.Tickets.ListUserTickets(ctx, org, b, all)
			return err
		}},
		{"CreateTicket requester", func(b string) error {
			return f.Tickets.CreateTicket(ctx, f.ticket(org, b, "T", ticket.StatusNew), evOrg(org))
		}},
		{"CreateTicket assignee", func(b string) error {
			if b == "" { // no assignee is fine
				b = "a#b"
			}
			tk := f.ticket(org, "u_alice", "T", ticket.StatusNew)
			tk.AssigneeID = b
			return f.Tickets.CreateTicket(ctx, tk, ev(tk))
		}},
		{"AddComment author", func(b string) error {
			return f.Tickets.CreateComment(ctx, ticket.Comment{OrgID: org, TicketID: f.ids.New(), ID: f.ids.New(), AuthorID: b, Body: "x"}, evOrg(org))
		}},
	}
	resourceCalls := []call{
		{"GetOrg", func(b string) error { _, err := f.Orgs.GetOrg(ctx, b); return err }},
		{"GetOrgWithUsers", func(b string) error { _, _, err := f.Orgs.GetOrgWithUsers(ctx, b, 10); return err }},
		{"StartOffboarding", func(b string) error {
			_, _, err := f.Orgs.StartOffboarding(ctx, b, "u_alice", 0, "me", f.now)
			return err
		}},
		{"ListUsers", func(b string) error { _, err := f.Orgs.ListOrgUsers(ctx, b, all); return err }},
		{"GetUser org", func(b string) error { _, err := f.Orgs.GetOrgUser(ctx, b, "u_alice"); return err }},
		{"BatchGetOrgs", func(b string) error { _, err := f.Orgs.BatchGetOrgs(ctx, []string{org, b}); return err }},
		{"CreateOrg", func(b string) error {
			return f.Orgs.CreateOrg(ctx, orgpkg.Org{ID: b, Name: "X", Version: 1}, f.user(b, "u_x", "x@example.com", "X", authz.Owner), evOrg(b))
		}},
		{"GetTeam", func(b string) error { _, err := f.Teams.GetTeam(ctx, org, b); return err }},
		{"GetTeam org", func(b string) error { _, err := f.Teams.GetTeam(ctx, b, eng); return err }},
		{"GetTeamWithMembers", func(b string) error { _, _, err := f.Teams.GetTeamWithMembers(ctx, org, b, 10); return err }},
		{"ListMembers", func(b string) error { _, err := f.Teams.ListTeamMembers(ctx, org, b, all); return err }},
		{"ListTeams", func(b string) error { _, err := f.Teams.ListTeams(ctx, b, all); return err }},
		{"BatchGetTeams", func(b string) error { _, err := f.Teams.BatchGetTeams(ctx, org, []string{eng, b}); return err }},
		{"DeleteTeam", func(b string) error { return f.Teams.DeleteTeam(ctx, org, b, 0, evOrg(org)) }},
		{"CreateTeam", func(b string) error {
			tm := f.team(org, "T")
			tm.ID = b
			return f.Teams.CreateTeam(ctx, tm, f.member(tm, "u_alice", authz.Owner), ev(tm))
		}},
		{"RemoveMember", func(b string) error {
			m := f.member(s.Eng, "u_bob", authz.Member)
			m.TeamID = b
			return f.Teams.RemoveTeamMember(ctx, m, ev(m))
		}},
		{"GetTicket", func(b string) error { _, err := f.Tickets.GetTicket(ctx, org, b); return err }},
		{"GetTicketWithComments", func(b string) error { _, _, err := f.Tickets.GetTicketWithComments(ctx, org, b, 10); return err }},
		{"DeleteTicket", func(b string) error { return f.Tickets.DeleteTicket(ctx, org, b, 0, evOrg(org)) }},
		{"ListComments", func(b string) error { _, err := f.Tickets.ListComments(ctx, org, b, all); return err }},
		{"ListTickets", func(b string) error { _, err := f.Tickets.ListTickets(ctx, b, ticket.Filter{}, all); return err }},
		{"ListTeamTickets", func(b string) error { _, err := f.Tickets.ListTeamTickets(ctx, org, b, "", all); return err }},
		{"CreateTicket team", func(b string) error {
			if b == "" { // no team is fine
				b = "not-a-ulid"
			}
			tk := f.ticket(org, "u_alice", "T", ticket.StatusNew)
			tk.TeamID = b
			return f.Tickets.CreateTicket(ctx, tk, ev(tk))
		}},
		{"CreateTicket id", func(b string) error {
			tk := f.ticket(org, "u_alice", "T", ticket.StatusNew)
			tk.ID = b
			return f.Tickets.CreateTicket(ctx, tk, ev(tk))
		}},
		{"AddComment id", func(b string) error {
			return f.Tickets.CreateComment(ctx, ticket.Comment{OrgID: org, TicketID: f.ids.New(), ID: b, AuthorID: "u_bob", Body: "x"}, evOrg(org))
		}},
	}
	run := func(calls []call, bads []string) {
		for _, c := range calls {
			for _, bad := range bads {
				t.Run(fmt.Sprintf("%s/%q", c.name, bad), func(t *testing.T) {
					f.Rec.Reset()
					err := c.fn(bad)
					wantErr(t, err, errs.Invalid, "invalid_id")
					f.wantNoCalls(t)
				})
			}
		}
	}
	run(userCalls, badUsers)
	run(resourceCalls, badResources)

	t.Run("emails that cannot be keys", func(t *testing.T) {
		for _, email := range []string{"a#b@example.com", "a\x00b@example.com", "bob\n@example.com", ""} {
			f.Rec.Reset()
			err := f.Orgs.AddOrgUser(ctx, f.user(org, "u_new", email, "New", authz.Member), evOrg(org))
			if got, want := errs.KindOf(err), errs.Invalid; got != want {
				t.Errorf("AddUser(email %q): got %v, want %v", email, err, want)
			}
			f.wantNoCalls(t)
		}
	})
}

// encodeCursor builds a start key the way a forger would.
func encodeCursor(m map[string]any) string {
	b, _ := json.Marshal(m)
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestPagination(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	orgA := f.newOrg(t, "Eight", "u_000").ID
	f.seedUsers(t, orgA, seqIDs("u_", 7)[1:])
	orgB := f.newOrg(t, "Six", "u_alice").ID
	f.seedUsers(t, orgB, seqIDs("u_b", 5))
	must(t, f.Orgs.AddOrgUser(ctx, f.user(orgA, "u_alice", "alice@example.com", "Alice", authz.Member), evOrg(orgA)))
	teamA := f.team(orgA, "A")
	must(t, f.Teams.CreateTeam(ctx, teamA, f.member(teamA, "u_alice", authz.Owner), ev(teamA)))
	must(t, f.Teams.AddTeamMember(ctx, f.member(teamA, "u_000", authz.Member), ev(teamA)))
	teamA2 := f.team(orgA, "A2")
	must(t, f.Teams.CreateTeam(ctx, teamA2, f.member(teamA2, "u_alice", authz.Owner), ev(teamA2)))
	teamB := f.team(orgB, "B")
	must(t, f.Teams.CreateTeam(ctx, teamB, f.member(teamB, "u_alice", authz.Owner), ev(teamB)))
	var tickets []string // oldest first
	for i := range 5 {
		status := ticket.StatusNew
		if i >= 3 {
			status = ticket.StatusOpen
		}
		tk := f.ticket(orgA, "u_alice", fmt.Sprint("T", i), status)
		must(t, f.Tickets.CreateTicket(ctx, tk, ev(tk)))
		tickets = append(tickets, tk.ID)
	}
	newestFirst := slices.Clone(tickets)
	slices.Reverse(newestFirst)
	orgC := f.newOrg(t, "Seven", "u_c000").ID
	f.seedUsers(t, orgC, seqIDs("u_c", 7)[1:])

	t.Run("OK users 3,3,1", func(t *testing.T) {
		f.Rec.Reset()
		sizes, users := allPages(t, func(after string) (page.Result[orgpkg.User], error) {
			return f.Orgs.ListOrgUsers(ctx, orgC, page.Request{Limit: 3, After: after})
		})
		if got, want := sizes, []int{3, 3, 1}; !slices.Equal(got, want) {
			t.Errorf("page sizes: got %v, want %v", got, want)
		}
		if got, want := userIDs(users...), seqIDs("u_c", 7); !slices.Equal(got, want) {
			t.Errorf("users: got %v, want %v (each once, in order)", got, want)
		}
		if got, want := f.Rec.Names(), "Query, Query, Query"; got != want {
			t.Errorf("operations: got %q, want %q", got, want)
		}
	})

	t.Run("OK an exact multiple has no empty last page", func(t *testing.T) {
		sizes, users := allPages(t, func(after string) (page.Result[orgpkg.User], error) {
			return f.Orgs.ListOrgUsers(ctx, orgB, page.Request{Limit: 3, After: after})
		})
		if got, want := sizes, []int{3, 3}; !slices.Equal(got, want) {
			t.Errorf("page sizes: got %v, want %v", got, want)
		}
		if got, want := len(users), 6; got != want {
			t.Errorf("users: got %d, want %d", got, want)
		}
	})

	t.Run("OK tickets newest first 2,2,1", func(t *testing.T) {
		sizes, got := allPages(t, func(after string) (page.Result[ticket.Ticket], error) {
			return f.Tickets.ListTickets(ctx, orgA, ticket.Filter{}, page.Request{Limit: 2, After: after})
		})
		if want := []int{2, 2, 1}; !slices.Equal(sizes, want) {
			t.Errorf("page sizes: got %v, want %v", sizes, want)
		}
		if got, want := ticketIDs(got), newestFirst; !slices.Equal(got, want) {
			t.Errorf("tickets: got %v, want %v", got, want)
		}
	})

	t.Run("OK a status queue 2,1", func(t *testing.T) {
		sizes, got := allPages(t, func(after string) (page.Result[ticket.Ticket], error) {
			return f.Tickets.ListTickets(ctx, orgA, ticket.Filter{Status: ticket.StatusNew}, page.Request{Limit: 2, After: after})
		})
		if want := []int{2, 1}; !slices.Equal(sizes, want) {
			t.Errorf("page sizes: got %v, want %v", sizes, want)
		}
		if got, want := ticketIDs(got), newestFirst[2:]; !slices.Equal(got, want) {
			t.Errorf("tickets: got %v, want %v", got, want)
		}
	})

	t.Run("OK requested tickets 2,2,1", func(t *testing.T) {
		sizes, got := allPages(t, func(after string) (page.Result[ticket.Ticket], error) {
			return f.Tickets.ListUserTickets(ctx, orgA, "u_alice", page.Request{Limit: 2, After: after})
		})
		if want := []int{2, 2, 1}; !slices.Equal(sizes, want) {
			t.Errorf("page sizes: got %v, want %v", sizes, want)
		}
		if got, want := ticketIDs(got), newestFirst; !slices.Equal(got, want) {
			t.Errorf("tickets: got %v, want %v", got, want)
		}
	})

	cursor := func(t *testing.T, r page.Result[orgpkg.User], err error) string {
		t.Helper()
		must(t, err)
		if r.Next == "" {
			t.Fatal("no next cursor")
		}
		return r.Next
	}
	usersB, err := f.Orgs.ListOrgUsers(ctx, orgB, page.Request{Limit: 1})
	otherOrgCursor := cursor(t, usersB, err)
	membersA, err := f.Teams.ListTeamMembers(ctx, orgA, teamA.ID, page.Request{Limit: 1})
	must(t, err)
	memberCursor := membersA.Next
	teamsA, err := f.Teams.ListTeams(ctx, orgA, page.Request{Limit: 1})
	must(t, err)
	teamsCursor := teamsA.Next
	ticketsA, err := f.Tickets.ListTickets(ctx, orgA, ticket.Filter{}, page.Request{Limit: 1})
	must(t, err)
	allTicketsCursor := ticketsA.Next
	newA, err := f.Tickets.ListTickets(ctx, orgA, ticket.Filter{Status: ticket.StatusNew}, page.Request{Limit: 1})
	must(t, err)
	newCursor := newA.Next
	aliceTeamsA, err := f.Teams.ListUserTeams(ctx, orgA, "u_alice", page.Request{Limit: 1})
	must(t, err)
	aliceTeamsCursor := aliceTeamsA.Next
	for name, c := range map[string]string{"member": memberCursor, "teams": teamsCursor, "tickets": allTicketsCursor,
		"new": newCursor, "alice's teams": aliceTeamsCursor} {
		if c == "" {
			t.Fatalf("no %s cursor", name)
		}
	}

	refused := []struct {
		name string
		run  func() error
	}{
		{"another org's users to ListUsers", func() error {
			_, err := f.Orgs.ListOrgUsers(ctx, orgA, page.Request{Limit: 3, After: otherOrgCursor})
			return err
		}},
		{"a team's members to ListUsers", func() error {
			_, err := f.Orgs.ListOrgUsers(ctx, orgA, page.Request{After: memberCursor})
			return err
		}},
		{"a team's members to another team", func() error {
			_, err := f.Teams.ListTeamMembers(ctx, orgA, teamA2.ID, page.Request{After: memberCursor})
			return err
		}},
		{"teams to ListTickets (same index and partition)", func() error {
			_, err := f.Tickets.ListTickets(ctx, orgA, ticket.Filter{}, page.Request{After: teamsCursor})
			return err
		}},
		{"all tickets to a status queue", func() error {
			_, err := f.Tickets.ListTickets(ctx, orgA, ticket.Filter{Status: ticket.StatusNew}, page.Request{After: allTicketsCursor})
			return err
		}},
		{"one status queue to another", func() error {
			_, err := f.Tickets.ListTickets(ctx, orgA, ticket.Filter{Status: ticket.StatusOpen}, page.Request{After: newCursor})
			return err
		}},
		{"tickets to another org's tickets", func() error {
			_, err := f.Tickets.ListTickets(ctx, orgB, ticket.Filter{}, page.Request{After: allTicketsCursor})
			return err
		}},
		{"a user's teams in one org to another org", func() error {
			_, err := f.Teams.ListUserTeams(ctx, orgB, "u_alice", page.Request{After: aliceTeamsCursor})
			return err
		}},
		{"users to ListTeams", func() error {
			_, err := f.Teams.ListTeams(ctx, orgB, page.Request{After: otherOrgCursor})
			return err
		}},
	}
	garbage := map[string]string{
		"not base64":        "garbage!!",
		"std base64":        base64.StdEncoding.EncodeToString([]byte(`{"pk":"x"}`)),
		"not JSON":          base64.RawURLEncoding.EncodeToString([]byte("hello")),
		"JSON null":         encodeCursor(nil),
		"empty object":      encodeCursor(map[string]any{}),
		"numbers":           encodeCursor(map[string]any{"pk": 1, "sk": 2}),
		"org item":          encodeCursor(map[string]any{"pk": "ORG#" + orgA, "sk": "#METADATA"}),
		"email claim":       encodeCursor(map[string]any{"pk": "ORG#" + orgA + "#EMAIL#x", "sk": "#CLAIM"}),
		"other org by hand": encodeCursor(map[string]any{"pk": "ORG#" + orgB, "sk": "USER#u_b000"}),
		"extra attribute":   encodeCursor(map[string]any{"pk": "ORG#" + orgA, "sk": "USER#u_000", "gsi1pk": "x"}),
		"missing sk":        encodeCursor(map[string]any{"pk": "ORG#" + orgA}),
		"GSI keys":          encodeCursor(map[string]any{"pk": "ORG#" + orgA, "sk": "USER#u_000", "gsi1pk": "USER#u_000", "gsi1sk": "ORG#" + orgA}),
		"very long":         strings.Repeat("A", 10000),
	}
	for name, g := range garbage {
		refused = append(refused, struct {
			name string
			run  func() error
		}{"garbage " + name, func() error {
			_, err := f.Orgs.ListOrgUsers(ctx, orgA, page.Request{After: g})
			return err
		}})
	}
	for _, c := range refused {
		t.Run("ErrCursor "+c.name, func(t *testing.T) {
			f.Rec.Reset()
			err := c.run()
			wantErr(t, err, errs.Invalid, "invalid_cursor")
			f.wantNoCalls(t)
		})
	}

	t.Run("ErrLimit", func(t *testing.T) {
		for _, limit := range []int{-1, page.MaxLimit + 1} {
			f.Rec.Reset()
			_, err := f.Orgs.ListOrgUsers(ctx, orgA, page.Request{Limit: limit})
			wantErr(t, err, errs.Invalid, "invalid_limit")
			f.wantNoCalls(t)
		}
	})

	t.Run("OK a well-formed cursor of the same listing is followed", func(t *testing.T) {
		r, err := f.Orgs.ListOrgUsers(ctx, orgC, page.Request{Limit: 10,
			After: encodeCursor(map[string]any{"pk": "ORG#" + orgC, "sk": "USER#u_c004"})})
		must(t, err)
		if got, want := userIDs(r.Items...), []string{"u_c005", "u_c006"}; !slices.Equal(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})
}

// TestWritesRefuseZeroEvent: every write of the store takes the audit
// event of its change, and one that forgets it (the zero Event) is refused
// before it writes anything, so a change can never go unrecorded.
func TestWritesRefuseZeroEvent(t *testing.T) {
	f, s := MustSampled(t)
	ctx := context.Background()
	var none audit.Event
	org := s.Org.ID
	tk := f.ticket(org, "u_alice", "Unrecorded", ticket.StatusNew)
	bob2 := s.Bob
	bob2.Name, bob2.Version = "Robert", 2
	inv := invitation.Invitation{OrgID: org, ID: f.ids.New(), Email: "erin@example.com", Role: authz.Member, InvitedBy: "u_alice",
		TokenHash: "h", CreatedAt: f.now, ExpiresAt: f.now.Add(time.Hour)}
	writes := map[string]func() error{
		"CreateOrg": func() error {
			o := orgpkg.Org{ID: f.ids.New(), Name: "Unrecorded", Version: 1, CreatedAt: f.now, UpdatedAt: f.now}
			return f.Orgs.CreateOrg(ctx, o, f.user(o.ID, "u_alice", "alice@example.com", "Alice", authz.Owner), none)
		},
		"UpdateOrg": func() error {
			next := s.Org
			next.Name, next.Version = "X", 2
			return f.Orgs.UpdateOrg(ctx, s.Org, next, none)
		},
		"AddOrgUser": func() error {
			return f.Orgs.AddOrgUser(ctx, f.user(org, "u_erin", "erin@example.com", "Erin", authz.Member), none)
		},
		"UpdateOrgUser": func() error { return f.Orgs.UpdateOrgUser(ctx, s.Bob, bob2, none) },
		"RemoveOrgUser": func() error { return f.Orgs.RemoveOrgUser(ctx, s.Bob, none) },
		"CreateTeam": func() error {
			tm := f.team(org, "Ops")
			return f.Teams.CreateTeam(ctx, tm, f.member(tm, "u_alice", authz.Owner), none)
		},
		"UpdateTeam": func() error {
			next := s.Eng
			next.Name, next.Version = "X", 2
			return f.Teams.UpdateTeam(ctx, s.Eng, next, none)
		},
		"DeleteTeam":    func() error { return f.Teams.DeleteTeam(ctx, org, s.Eng.ID, 0, none) },
		"AddTeamMember": func() error { return f.Teams.AddTeamMember(ctx, f.member(s.Design, "u_bob", authz.Member), none) },
		"UpdateTeamMember": func() error {
			prev := f.member(s.Eng, "u_bob", authz.Member)
			next := prev
			next.Role, next.Version = authz.Admin, 2
			return f.Teams.UpdateTeamMember(ctx, prev, next, none)
		},
		"RemoveTeamMember": func() error { return f.Teams.RemoveTeamMember(ctx, f.member(s.Eng, "u_bob", authz.Member), none) },
		"CreateTicket":     func() error { return f.Tickets.CreateTicket(ctx, tk, none) },
		"CreateInvitation": func() error { return errOf(f.Invitations.CreateInvitation(ctx, inv, none)) },
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			f.Rec.Reset()
			err := f.mustUnchanged(t, write)
			if !strings.Contains(err.Error(), "audit") {
				t.Errorf("%s without its event: %v, want the audit event refused", name, err)
			}
			if w := writeCalls(f.Rec); len(w) != 0 {
				t.Errorf("%s without its event wrote: %v", name, w)
			}
		})
	}
	// And the writes on existing tickets and comments, once a ticket exists.
	must(t, f.Tickets.CreateTicket(ctx, tk, evOrg(org)))
	next := tk
	next.Title, next.Version = "X", 2
	c := ticket.Comment{OrgID: org, TicketID: tk.ID, ID: f.ids.New(), AuthorID: "u_bob", Body: "b", CreatedAt: f.now}
	for name, write := range map[string]func() error{
		"UpdateTicket":  func() error { return f.Tickets.UpdateTicket(ctx, tk, next, none) },
		"DeleteTicket":  func() error { return f.Tickets.DeleteTicket(ctx, org, tk.ID, 0, none) },
		"CreateComment": func() error { return f.Tickets.CreateComment(ctx, c, none) },
	} {
		t.Run(name, func(t *testing.T) {
			f.Rec.Reset()
			_ = f.mustUnchanged(t, write)
			if w := writeCalls(f.Rec); len(w) != 0 {
				t.Errorf("%s without its event wrote: %v", name, w)
			}
		})
	}
}

// writeCalls are the recorded calls that write.
func writeCalls(r *dynamotest.Recorder) []string {
	var w []string
	for _, op := range r.Ops() {
		switch op.Name {
		case "GetItem", "BatchGetItem", "Query", "Scan":
		default:
			w = append(w, op.Name)
		}
	}
	return w
}

// TestListingsUnderParentBeingDeleted: a team or ticket marked for
// deletion (a large one, deleted in parts, or one whose run crashed) is
// gone for readers, its listings included, although children are left: a
// listing under a named parent loads it in the authorization read, which
// finds it missing. (Found by an outside attack: GET .../members answered
// 200 with 72 members of a team that answered 404.)
func TestListingsUnderParentBeingDeleted(t *testing.T) {
	f, s := MustSampled(t)
	ctx := context.Background()
	org := s.Org.ID
	tk := f.ticket(org, "u_alice", "Doomed", ticket.StatusOpen)
	must(t, f.Tickets.CreateTicket(ctx, tk, evOrg(org)))
	must(t, f.Tickets.CreateComment(ctx, ticket.Comment{OrgID: org, TicketID: tk.ID, ID: f.ids.New(), AuthorID: "u_bob", Body: "b", CreatedAt: f.now}, evOrg(org)))
	team := access.Target{Kind: access.Team, TeamID: s.Eng.ID}
	tick := access.Target{Kind: access.Ticket, TicketID: tk.ID}
	for _, k := range []rawKey{{"ORG#" + org + "#TEAM#" + s.Eng.ID, "#METADATA"}, {"ORG#" + org + "#TICKET#" + tk.ID, "#METADATA"}} {
		_, err := f.raw.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(f.DB.TableName()),
			Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: k.PK}, "sk": &types.AttributeValueMemberS{Value: k.SK}},
			UpdateExpression:          aws.String("SET deleting = :t"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberBOOL{Value: true}}})
		must(t, err)
	}
	r, err := f.Teams.ListTeamMembers(ctx, org, s.Eng.ID, page.Request{Limit: 100})
	if must(t, err); len(r.Items) == 0 {
		t.Fatal("the team's edges are gone already: nothing to hide")
	}
	for target, code := range map[access.Target]string{team: "team_not_found", tick: "ticket_not_found"} {
		found, err := f.Orgs.OrgAccess(ctx, org, "u_alice", target)
		must(t, err)
		wantErr(t, found.Missing, errs.NotFound, code)
	}
}

// TestServerKey: the API keys' server key is one item, made by the first
// replica that needs it; those racing it end with its key, later ones read
// it, and offboarding an org leaves it.
func TestServerKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := MustFixture(t)
	fresh := func(i int) []byte { return bytes.Repeat([]byte{byte(i + 1)}, 32) }
	got := make([][]byte, 8)
	t.Run("replicas racing to make it end with one", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := range got {
			wg.Go(func() {
				k, err := f.APIKeys.ServerKey(ctx, fresh(i))
				if err != nil {
					t.Errorf("replica %d: %v", i, err)
				}
				got[i] = k
			})
		}
		wg.Wait()
		for i, k := range got {
			if !bytes.Equal(k, got[0]) {
				t.Errorf("replica %d has %x, replica 0 %x", i, k, got[0])
			}
		}
		if got[0][0] == 0 || !bytes.Equal(got[0], fresh(int(got[0][0])-1)) {
			t.Errorf("the key %x is none of the replicas' fresh ones", got[0])
		}
	})
	t.Run("a later replica reads it, writes nothing", func(t *testing.T) {
		f.Rec.Reset()
		k, err := f.APIKeys.ServerKey(ctx, fresh(99))
		if err != nil || !bytes.Equal(k, got[0]) {
			t.Fatalf("%x, %v; want %x", k, err, got[0])
		}
		if ops := f.Rec.Names(); ops != "GetItem+consistent" {
			t.Errorf("DynamoDB calls %s, want one consistent GetItem", ops)
		}
	})
	t.Run("offboarding an org leaves it", func(t *testing.T) {
		org := f.newOrg(t, "Leaving", "u_alice")
		f.offboard(t, org.ID, "u_alice")
		if k, err := f.APIKeys.ServerKey(ctx, fresh(100)); err != nil || !bytes.Equal(k, got[0]) {
			t.Errorf("after offboarding: %x, %v; want %x", k, err, got[0])
		}
	})
}
