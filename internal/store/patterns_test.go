package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/access"
	"github.com/tenantd/tenantd/internal/apikey"
	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/invitation"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/store"
	orgpkg "github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
)

// TestAccessPatterns is the executable form of the access-pattern chart in
// docs/data-model.md: each row runs one store method on seed 000's sample
// and asserts both the answer and the exact DynamoDB operations made.
// "Query(GSI1)+desc" reads "one Query on GSI1 with ScanIndexForward=false".
func TestAccessPatterns(t *testing.T) {
	f, s := MustSampled(t)
	ctx := context.Background()
	org := s.Org.ID

	// Tickets: Alice requested t1 (Eng, open) and t3 (new, assigned to Bob);
	// Bob requested t2 (Eng, new). IDs are ULIDs: t3 is the newest.
	t1 := f.ticket(org, "u_alice", "Login broken", ticket.StatusOpen)
	t1.TeamID = s.Eng.ID
	t2 := f.ticket(org, "u_bob", "Dark mode", ticket.StatusNew)
	t2.TeamID = s.Eng.ID
	t3 := f.ticket(org, "u_alice", "Invoice wrong", ticket.StatusNew)
	t3.AssigneeID, t3.Priority = "u_bob", ticket.PriorityHigh
	for _, tk := range []ticket.Ticket{t1, t2, t3} {
		must(t, f.Tickets.CreateTicket(ctx, tk, ev(tk)))
	}
	c1 := ticket.Comment{OrgID: org, TicketID: t1.ID, ID: f.ids.New(), AuthorID: "u_bob", Body: "Same here", CreatedAt: f.now}
	// The comment is audited, as every mutation made through a service is.
	audited := audit.NewEvent(ctx, f.ids, audit.Outsider(org, "u_bob"), "comment.create", "comment", t1.ID+"/"+c1.ID, f.now, nil)
	must(t, f.Tickets.CreateComment(ctx, c1, audited))
	inv := invitation.Invitation{OrgID: org, ID: f.ids.New(), Email: "carol@example.com", Role: authz.Member,
		TeamIDs: []string{s.Design.ID}, InvitedBy: "u_alice", TokenHash: "h", CreatedAt: f.now, ExpiresAt: f.now.Add(time.Hour)}
	must(t, errOf(f.Invitations.CreateInvitation(ctx, inv, ev(inv))))
	hook := f.mustWebhook(t, &store.Webhooks{DB: f.DB}, org, "https://hooks.example.com/chart", -1)
	key := apikey.Key{OrgID: org, ID: f.ids.New(), Name: "CI bot", Role: authz.Member, CreatedAt: f.now, CreatedBy: "u_alice"}
	must(t, f.APIKeys.CreateApiKey(ctx, key, evOrg(org)))
	all := page.Request{Limit: 100}

	rows := []struct {
		pattern string
		ops     string
		run     func() (string, error)
	}{
		{"get org", "GetItem", func() (string, error) {
			o, err := f.Orgs.GetOrg(ctx, org)
			return o.Name, err
		}},
		{"get org + users", "Query", func() (string, error) {
			o, users, err := f.Orgs.GetOrgWithUsers(ctx, org, 100)
			return fmt.Sprint(o.Name, userIDs(users...)), err
		}},
		{"org users only", "Query", func() (string, error) {
			r, err := f.Orgs.ListOrgUsers(ctx, org, all)
			return fmt.Sprint(userIDs(r.Items...)), err
		}},
		{"the authorization read", "BatchGetItem+consistent", func() (string, error) {
			a, err := f.Orgs.OrgAccess(ctx, org, "u_bob", access.Target{})
			return fmt.Sprint(a.Role, " ", a.OrgDeleting), err
		}},
		{"get one org user", "GetItem+consistent", func() (string, error) {
			u, err := f.Orgs.GetOrgUser(ctx, org, "u_bob")
			return fmt.Sprint(u.Name, " ", u.Role), err
		}},
		{"a user's orgs", "Query(GSI1)", func() (string, error) {
			r, err := f.Orgs.ListOrgs(ctx, "u_alice", all)
			if err != nil || len(r.Items) != 1 {
				return fmt.Sprint(r.Items), err
			}
			return fmt.Sprint(r.Items[0].OrgID == org, " ", r.Items[0].Role), err
		}},
		{"orgs by ID (names)", "BatchGetItem", func() (string, error) {
			m, err := f.Orgs.BatchGetOrgs(ctx, []string{org})
			return m[org].Name, err
		}},
		{"an org's teams", "Query(GSI1)", func() (string, error) {
			r, err := f.Teams.ListTeams(ctx, org, all)
			var names []string
			for _, tm := range r.Items {
				names = append(names, tm.Name)
			}
			return fmt.Sprint(names), err
		}},
		{"AP1 team members", "Query", func() (string, error) {
			r, err := f.Teams.ListTeamMembers(ctx, org, s.Eng.ID, all)
			var out []string
			for _, m := range r.Items {
				out = append(out, m.UserID+":"+string(m.Role))
			}
			return fmt.Sprint(out), err
		}},
		{"AP2 a user's teams in an org", "Query(GSI1)", func() (string, error) {
			r, err := f.Teams.ListUserTeams(ctx, org, "u_alice", all)
			var out []string
			for _, m := range r.Items {
				out = append(out, string(m.Role))
			}
			slices.Sort(out)
			return fmt.Sprint(out), err
		}},
		{"teams by ID (names)", "BatchGetItem", func() (string, error) {
			m, err := f.Teams.BatchGetTeams(ctx, org, []string{s.Eng.ID, s.Design.ID})
			return m[s.Eng.ID].Name + "," + m[s.Design.ID].Name, err
		}},
		{"AP3 membership and role", "GetItem+consistent", func() (string, error) {
			m, err := f.Teams.GetTeamMember(ctx, org, s.Design.ID, "u_alice")
			return string(m.Role), err
		}},
		{"AP4 team + members", "Query", func() (string, error) {
			tm, ms, err := f.Teams.GetTeamWithMembers(ctx, org, s.Eng.ID, 100)
			return fmt.Sprint(tm.Name, " ", tm.MemberCount, " ", len(ms)), err
		}},
		{"get ticket", "GetItem", func() (string, error) {
			tk, err := f.Tickets.GetTicket(ctx, org, t1.ID)
			return fmt.Sprint(tk.Title, " ", tk.CommentCount), err
		}},
		{"get ticket + comments", "Query", func() (string, error) {
			tk, cs, err := f.Tickets.GetTicketWithComments(ctx, org, t1.ID, 100)
			return fmt.Sprint(tk.Title, " ", len(cs), " ", cs[0].Body), err
		}},
		{"comments of a ticket", "Query", func() (string, error) {
			r, err := f.Tickets.ListComments(ctx, org, t1.ID, all)
			return fmt.Sprint(len(r.Items)), err
		}},
		{"org tickets newest first", "Query(GSI1)+desc", func() (string, error) {
			r, err := f.Tickets.ListTickets(ctx, org, ticket.Filter{}, all)
			return titles(r.Items), err
		}},
		{"org tickets oldest first", "Query(GSI1)", func() (string, error) {
			r, err := f.Tickets.ListTickets(ctx, org, ticket.Filter{Oldest: true}, all)
			return titles(r.Items), err
		}},
		{"org tickets of a priority, by status", "Query(GSI6)+desc", func() (string, error) {
			r, err := f.Tickets.ListTickets(ctx, org, ticket.Filter{Priority: ticket.PriorityNormal}, all)
			return titles(r.Items), err
		}},
		{"org tickets of a priority and status", "Query(GSI6)+desc", func() (string, error) {
			r, err := f.Tickets.ListTickets(ctx, org, ticket.Filter{Priority: ticket.PriorityHigh, Status: ticket.StatusNew}, all)
			return titles(r.Items), err
		}},
		{"tickets assigned to a user, of a status", "Query(GSI7)+desc", func() (string, error) {
			r, err := f.Tickets.ListTickets(ctx, org, ticket.Filter{AssigneeID: "u_bob", Status: ticket.StatusNew}, all)
			return titles(r.Items), err
		}},
		{"user's tickets newest first", "Query(GSI2)+desc", func() (string, error) {
			r, err := f.Tickets.ListUserTickets(ctx, org, "u_alice", all)
			return titles(r.Items), err
		}},
		{"org queue by status", "Query(GSI3)+desc", func() (string, error) {
			r, err := f.Tickets.ListTickets(ctx, org, ticket.Filter{Status: ticket.StatusNew}, all)
			return titles(r.Items), err
		}},
		{"team tickets grouped by status", "Query(GSI5)+desc", func() (string, error) {
			r, err := f.Tickets.ListTeamTickets(ctx, org, s.Eng.ID, "", all)
			return titles(r.Items), err
		}},
		{"team tickets of one status", "Query(GSI5)+desc", func() (string, error) {
			r, err := f.Tickets.ListTeamTickets(ctx, org, s.Eng.ID, ticket.StatusOpen, all)
			return titles(r.Items), err
		}},
		{"tickets assigned to a user", "Query(GSI4)+desc", func() (string, error) {
			r, err := f.Tickets.ListAssignedTickets(ctx, org, "u_bob", all)
			return titles(r.Items), err
		}},
		{"org users by ID (no N+1)", "BatchGetItem", func() (string, error) {
			m, err := f.Orgs.BatchGetOrgUsers(ctx, org, []string{"u_bob", "u_alice", "u_bob", "u_nobody"})
			return fmt.Sprint(len(m), " ", m["u_alice"].Name), err
		}},
		{"pending invitations", "Query(GSI1)", func() (string, error) {
			r, err := f.Invitations.ListInvitations(ctx, org, f.now, all)
			var out []string
			for _, i := range r.Items {
				out = append(out, i.Email)
			}
			return fmt.Sprint(out), err
		}},
		{"an org's webhooks", "Query(GSI1)", func() (string, error) {
			r, err := (&store.Webhooks{DB: f.DB}).ListWebhooks(ctx, org, all)
			var out []string
			for _, w := range r.Items {
				out = append(out, w.ID+" "+w.URL)
			}
			return fmt.Sprint(out), err
		}},
		{"an invitation (accept reads it)", "GetItem+consistent", func() (string, error) {
			i, err := f.Invitations.GetInvitation(ctx, org, inv.ID)
			return i.Email, err
		}},
		{"an org's API keys", "Query(GSI1)", func() (string, error) {
			r, err := f.APIKeys.ListApiKeys(ctx, org, all)
			var out []string
			for _, k := range r.Items {
				out = append(out, k.Name)
			}
			return fmt.Sprint(out), err
		}},
		{"an API key", "GetItem+consistent", func() (string, error) {
			k, err := f.APIKeys.GetApiKey(ctx, org, key.ID)
			return k.Name + " " + string(k.Role), err
		}},
		{"audit log newest first", "Query+desc", func() (string, error) {
			r, err := (&store.Audit{DB: f.DB}).ListAuditEvents(ctx, audit.Query{OrgID: org, Since: f.now.Add(-time.Hour), Until: f.now.Add(time.Minute), Page: all})
			var out []string
			for _, e := range r.Items {
				out = append(out, e.Action)
			}
			return fmt.Sprint(out), err
		}},
		{"an org's offboarding", "GetItem+consistent", func() (string, error) {
			_, err := f.Orgs.GetOffboarding(ctx, org)
			if errs.Is(err, errs.NotFound) {
				return "not offboarded", nil
			}
			return "offboarded", err
		}},
		{"unfinished deletions", "Query(GSI3)", func() (string, error) {
			jobs, err := (&store.Deletions{DB: f.DB}).ListJobs(ctx, 10)
			return fmt.Sprint(len(jobs)), err
		}},
		{"AP5 remove a member", "TransactWriteItems", func() (string, error) {
			m, err := f.Teams.GetTeamMember(ctx, org, s.Eng.ID, "u_bob")
			if err != nil {
				return "", err
			}
			f.Rec.Reset()
			err = f.Teams.RemoveTeamMember(ctx, m, ev(m))
			return "", err
		}},
	}
	want := map[string]string{
		"get org":                                 "Acme",
		"get org + users":                         "Acme[u_alice u_bob u_dana]",
		"org users only":                          "[u_alice u_bob u_dana]",
		"the authorization read":                  "member false",
		"get one org user":                        "Bob Park member",
		"a user's orgs":                           "true owner",
		"orgs by ID (names)":                      "Acme",
		"an org's teams":                          "[Engineering Design]",
		"AP1 team members":                        "[u_alice:owner u_bob:member]",
		"AP2 a user's teams in an org":            "[admin owner]",
		"teams by ID (names)":                     "Engineering,Design",
		"AP3 membership and role":                 "admin",
		"AP4 team + members":                      "Engineering 2 2",
		"get ticket":                              "Login broken 1",
		"get ticket + comments":                   "Login broken 1 Same here",
		"comments of a ticket":                    "1",
		"org tickets newest first":                "Invoice wrong|Dark mode|Login broken",
		"user's tickets newest first":             "Invoice wrong|Login broken",
		"org queue by status":                     "Invoice wrong|Dark mode",
		"org tickets oldest first":                "Login broken|Dark mode|Invoice wrong",
		"org tickets of a priority, by status":    "Login broken|Dark mode", // STATUS#open > STATUS#new, descending
		"org tickets of a priority and status":    "Invoice wrong",
		"tickets assigned to a user, of a status": "Invoice wrong",
		"team tickets grouped by status":          "Login broken|Dark mode", // STATUS#open > STATUS#new, descending
		"team tickets of one status":              "Login broken",
		"tickets assigned to a user":              "Invoice wrong",
		"org users by ID (no N+1)":                "2 Alice Chen",
		"pending invitations":                     "[carol@example.com]",
		"an invitation (accept reads it)":         "carol@example.com",
		"an org's webhooks":                       "[" + hook.ID + " https://hooks.example.com/chart]",
		"an org's API keys":                       "[CI bot]",
		"an API key":                              "CI bot member",
		"audit log newest first":                  "[comment.create]",
		"AP5 remove a member":                     "",
		"unfinished deletions":                    "0",
		"an org's offboarding":                    "not offboarded",
	}
	for _, row := range rows {
		t.Run(row.pattern, func(t *testing.T) {
			f.Rec.Reset()
			got, err := row.run()
			if err != nil {
				t.Fatal(err)
			}
			if got != want[row.pattern] {
				t.Errorf("result: got %q, want %q", got, want[row.pattern])
			}
			if gotOps := f.Rec.Names(); gotOps != row.ops {
				t.Errorf("operations: got %q, want %q", gotOps, row.ops)
			}
			for _, op := range f.Rec.Ops() {
				if op.Name == "Scan" {
					t.Errorf("a Scan was made")
				}
			}
		})
	}

	t.Run("the chart in docs/data-model.md is these rows", func(t *testing.T) {
		ops := map[string]string{}
		for _, row := range rows {
			ops[row.pattern] = row.ops
		}
		checkChart(t, ops)
	})

	t.Run("AP5 left the count exact", func(t *testing.T) {
		tm, err := f.Teams.GetTeam(ctx, org, s.Eng.ID)
		must(t, err)
		if got, want := tm.MemberCount, 1; got != want {
			t.Errorf("memberCount: got %d, want %d", got, want)
		}
		if _, err := f.Teams.GetTeamMember(ctx, org, s.Eng.ID, "u_bob"); err == nil {
			t.Error("Bob is still a member")
		}
		r, err := f.Teams.ListUserTeams(ctx, org, "u_bob", all)
		must(t, err)
		if len(r.Items) != 0 {
			t.Errorf("GSI1 still lists Bob's team: %v", r.Items)
		}
	})
}

func userIDs(us ...orgpkg.User) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.UserID
	}
	return out
}

func titles(ts []ticket.Ticket) string {
	s := ""
	for i, tk := range ts {
		if i > 0 {
			s += "|"
		}
		s += tk.Title
	}
	return s
}
