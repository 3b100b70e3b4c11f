package export_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/export"
	"github.com/tenantd/tenantd/internal/invitation"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
	"github.com/tenantd/tenantd/internal/webhook"
)

const orgID = "01KDVDNA000000000000000000"

var (
	created = time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)
	now     = time.Date(2026, 3, 2, 9, 0, 0, 123456789, time.UTC)
)

// fakeStore pages its listings two items at a time; a position is the ID
// of the item before it. It records the listings read.
type fakeStore struct {
	users    []tenant.User
	teams    []membership.Team
	members  map[string][]membership.Membership
	tickets  []ticket.Ticket
	comments map[string][]ticket.Comment
	invs     []invitation.Invitation
	hooks    []webhook.Subscription
	events   []audit.Event
	reads    []string
	query    audit.Query
}

func listOf[T any](s *fakeStore, name string, items []T, id func(T) string, p page.Request) (page.Result[T], error) {
	s.reads = append(s.reads, name)
	if p.Limit != page.MaxLimit {
		return page.Result[T]{}, fmt.Errorf("%s: limit %d, want pages of %d", name, p.Limit, page.MaxLimit)
	}
	start := 0
	if p.After != "" {
		start = slices.IndexFunc(items, func(v T) bool { return id(v) == p.After }) + 1
		if start == 0 {
			return page.Result[T]{}, fmt.Errorf("%s: unknown position %q", name, p.After)
		}
	}
	end := min(start+2, len(items))
	r := page.Result[T]{Items: items[start:end]}
	for _, v := range r.Items {
		r.After = append(r.After, id(v))
	}
	if end < len(items) {
		r.Next = id(items[end-1])
	}
	return r, nil
}

func (s *fakeStore) ListOrgUsers(_ context.Context, o string, p page.Request) (page.Result[tenant.User], error) {
	return listOf(s, "users", s.users, func(u tenant.User) string { return u.UserID }, p)
}
func (s *fakeStore) ListTeams(_ context.Context, o string, p page.Request) (page.Result[membership.Team], error) {
	return listOf(s, "teams", s.teams, func(t membership.Team) string { return t.ID }, p)
}
func (s *fakeStore) ListTeamMembers(_ context.Context, o, teamID string, p page.Request) (page.Result[membership.Membership], error) {
	return listOf(s, "members of "+teamID, s.members[teamID], func(m membership.Membership) string { return m.UserID }, p)
}
func (s *fakeStore) ListTickets(_ context.Context, o string, f ticket.Filter, p page.Request) (page.Result[ticket.Ticket], error) {
	if !f.Oldest || f != (ticket.Filter{Oldest: true}) {
		return page.Result[ticket.Ticket]{}, fmt.Errorf("tickets: filter %+v, want oldest first, unfiltered", f)
	}
	return listOf(s, "tickets", s.tickets, func(t ticket.Ticket) string { return t.ID }, p)
}
func (s *fakeStore) ListComments(_ context.Context, o, ticketID string, p page.Request) (page.Result[ticket.Comment], error) {
	return listOf(s, "comments of "+ticketID, s.comments[ticketID], func(c ticket.Comment) string { return c.ID }, p)
}
func (s *fakeStore) ListInvitations(_ context.Context, o string, at time.Time, p page.Request) (page.Result[invitation.Invitation], error) {
	return listOf(s, "invitations", s.invs, func(i invitation.Invitation) string { return i.ID }, p)
}
func (s *fakeStore) ListWebhooks(_ context.Context, o string, p page.Request) (page.Result[webhook.Subscription], error) {
	return listOf(s, "webhooks", s.hooks, func(w webhook.Subscription) string { return w.ID }, p)
}
func (s *fakeStore) ListAuditEvents(_ context.Context, q audit.Query) (page.Result[audit.Event], error) {
	s.query = q
	return listOf(s, "audit", s.events, func(e audit.Event) string { return e.ID }, q.Page)
}

func id(n int) string { return fmt.Sprintf("01KDVDNB%018d", n) }

func newStore() *fakeStore {
	s := &fakeStore{members: map[string][]membership.Membership{}, comments: map[string][]ticket.Comment{}}
	for i := range 3 {
		s.users = append(s.users, tenant.User{OrgID: orgID, UserID: fmt.Sprintf("u%d", i)})
	}
	s.teams = []membership.Team{{OrgID: orgID, ID: id(1)}, {OrgID: orgID, ID: id(2)}, {OrgID: orgID, ID: id(3)}}
	s.members[id(1)] = []membership.Membership{{TeamID: id(1), UserID: "u0"}, {TeamID: id(1), UserID: "u1"}, {TeamID: id(1), UserID: "u2"}}
	s.members[id(3)] = []membership.Membership{{TeamID: id(3), UserID: "u2"}}
	// t12 has 3 comments, t13 none (no Query for them), t14 one.
	s.tickets = []ticket.Ticket{{ID: id(12), CommentCount: 3}, {ID: id(13)}, {ID: id(14), CommentCount: 1}}
	s.comments[id(12)] = []ticket.Comment{{TicketID: id(12), ID: id(20)}, {TicketID: id(12), ID: id(21)}, {TicketID: id(12), ID: id(22)}}
	s.comments[id(14)] = []ticket.Comment{{TicketID: id(14), ID: id(23)}}
	s.invs = []invitation.Invitation{{ID: id(30)}}
	s.hooks = []webhook.Subscription{{ID: id(40)}}
	s.events = []audit.Event{{ID: id(52)}, {ID: id(51)}, {ID: id(50)}}
	return s
}

// sink collects what an export writes, one line per record, and counts the
// reads it is told of.
type sink struct {
	records []export.Record
	reads   int
	failAt  int // the read that fails (0: none)
}

var errSink = errors.New("the client went away")

func (s *sink) Read(context.Context) error {
	if s.reads++; s.reads == s.failAt {
		return errSink
	}
	return nil
}

func (s *sink) Write(r export.Record) error {
	s.records = append(s.records, r)
	return nil
}

func (s *sink) lines() []string {
	var out []string
	for _, r := range s.records {
		out = append(out, line(r))
	}
	return out
}

// line names a record by its type and its object's ID.
func line(r export.Record) string {
	switch v := r.Value.(type) {
	case tenant.Org:
		return "org " + v.ID
	case tenant.User:
		return "user " + v.UserID
	case membership.Team:
		return "team " + v.ID
	case membership.Membership:
		return "teamMember " + v.TeamID + "/" + v.UserID
	case ticket.Ticket:
		return "ticket " + v.ID
	case ticket.Comment:
		return "comment " + v.TicketID + "/" + v.ID
	case invitation.Invitation:
		return "invitation " + v.ID
	case webhook.Subscription:
		return "webhook " + v.ID
	case audit.Event:
		return "auditEvent " + v.ID
	case export.Summary:
		return fmt.Sprintf("summary %v %s", v.Counts, v.Audit.Format(time.RFC3339Nano))
	}
	return fmt.Sprintf("? %T", r.Value)
}

var (
	owner = authz.Principal{OrgID: orgID, OrgRole: authz.Owner}
	org   = tenant.Org{ID: orgID, CreatedAt: created}
)

func newService(s *fakeStore) *export.Service {
	return export.NewService(s, func() time.Time { return now })
}

func mustRun(t *testing.T, svc *export.Service, at string) *sink {
	t.Helper()
	x, err := svc.ExportOrg(owner, org, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if at != "" {
		if err := x.Resume(at); err != nil {
			t.Fatal(err)
		}
	}
	out := &sink{}
	if err := x.Run(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestExportOrg(t *testing.T) {
	position := now.Add(-15 * time.Second).Truncate(time.Millisecond)
	want := []string{"org " + orgID, "user u0", "user u1", "user u2",
		"team " + id(1), "teamMember " + id(1) + "/u0", "teamMember " + id(1) + "/u1", "teamMember " + id(1) + "/u2",
		"team " + id(2), "team " + id(3), "teamMember " + id(3) + "/u2",
		"ticket " + id(12), "comment " + id(12) + "/" + id(20), "comment " + id(12) + "/" + id(21), "comment " + id(12) + "/" + id(22),
		"ticket " + id(13), "ticket " + id(14), "comment " + id(14) + "/" + id(23),
		"invitation " + id(30), "webhook " + id(40), "auditEvent " + id(52), "auditEvent " + id(51), "auditEvent " + id(50),
		fmt.Sprintf("summary [1 3 3 4 3 4 1 1 3] %s", position.Format(time.RFC3339Nano))}

	t.Run("the org's objects in order, each parent with its children, then the summary", func(t *testing.T) {
		st := newStore()
		out := mustRun(t, newService(st), "")
		if got := out.lines(); !slices.Equal(got, want) {
			t.Errorf("records:\n got  %q\n want %q", got, want)
		}
		// Pages of 2: every listing to its end, no comment Query for
		// the ticket without comments; the sink hears of each read first.
		reads := []string{"users", "users", "teams", "members of " + id(1), "members of " + id(1), "members of " + id(2),
			"teams", "members of " + id(3), "tickets", "comments of " + id(12), "comments of " + id(12), "tickets",
			"comments of " + id(14), "invitations", "webhooks", "audit", "audit"}
		if !slices.Equal(st.reads, reads) {
			t.Errorf("reads:\n got  %q\n want %q", st.reads, reads)
		}
		if out.reads != len(reads) {
			t.Errorf("the sink heard of %d reads, want %d", out.reads, len(reads))
		}
		// The audit log before the position, from the org's creation.
		if q := st.query; q.OrgID != orgID || !q.Since.Equal(created) || !q.Until.Equal(position.Add(-time.Millisecond)) {
			t.Errorf("audit query: %+v, want %s from %v to %v", q, orgID, created, position.Add(-time.Millisecond))
		}
	})

	t.Run("resuming right after any record sends the rest, with the same summary", func(t *testing.T) {
		full := mustRun(t, newService(newStore()), "")
		for i, r := range full.records {
			at := r.After.String()
			got := mustRun(t, newService(newStore()), at).lines()
			if !slices.Equal(got, want[i+1:]) && !(i == len(want)-1 && slices.Equal(got, want[i:])) {
				t.Errorf("resumed after %q (%s):\n got  %q\n want %q", want[i], at, got, want[i+1:])
			}
		}
	})

	t.Run("403: only owners export", func(t *testing.T) {
		for _, role := range []authz.Role{authz.Admin, authz.Member} {
			_, err := newService(newStore()).ExportOrg(authz.Principal{OrgID: orgID, OrgRole: role}, org, time.Second)
			if !errs.Is(err, errs.Forbidden) {
				t.Errorf("%s: %v, want Forbidden", role, err)
			}
		}
	})

	t.Run("a malformed position is refused", func(t *testing.T) {
		x, err := newService(newStore()).ExportOrg(owner, org, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		good := (export.Position{Phase: 3, Audit: now}).String()
		for _, at := range []string{"", "x", strings.Replace(good, "1|", "2|", 1), strings.Replace(good, "|3|", "|9|", 1),
			strings.Replace(good, "|3|", "|-1|", 1), good + ",1", strings.Replace(good, "|||", "||not-an-id|", 1)} {
			if err := x.Resume(at); err == nil {
				t.Errorf("Resume(%q): nil error", at)
			}
		}
		if err := x.Resume(good); err != nil {
			t.Errorf("Resume(%q): %v", good, err)
		}
	})

	t.Run("a read the sink refuses ends the export there", func(t *testing.T) {
		x, err := newService(newStore()).ExportOrg(owner, org, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		out := &sink{failAt: 3}
		if err := x.Run(context.Background(), out); !errors.Is(err, errSink) {
			t.Fatalf("Run: %v, want the sink's error", err)
		}
		if got := out.lines(); !slices.Equal(got, want[:4]) {
			t.Errorf("records: got %q, want %q", got, want[:4])
		}
	})

	t.Run("an org younger than the position has no audit events before it", func(t *testing.T) {
		st := newStore()
		young := tenant.Org{ID: orgID, CreatedAt: now.Add(-time.Second)}
		x, err := newService(st).ExportOrg(owner, young, 15*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		out := &sink{}
		if err := x.Run(context.Background(), out); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(st.reads, "audit") {
			t.Errorf("read the audit log: %q", st.reads)
		}
	})
}
