package ticket_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/ifmatch"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/ticket"
)

func ptr[T any](v T) *T { return &v }

// tags returns n distinct tags.
func tags(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("tag-%02d", i)
	}
	return out
}

// distinct is each batch of IDs sorted, without duplicates: the users a
// batch read asks for, whatever their order.
func distinct(batches [][]string) [][]string {
	var out [][]string
	for _, b := range batches {
		b = slices.Clone(b)
		slices.Sort(b)
		out = append(out, slices.Compact(b))
	}
	return out
}

func TestCreateTicket(t *testing.T) {
	const newID = "01BX5ZZKBKACTAV9WEVGEMMVT3"
	in := ticket.NewTicket{ID: newID, Title: "VPN down", Description: "Since 9am", Priority: ticket.PriorityUrgent}
	with := func(f func(*ticket.NewTicket)) ticket.NewTicket { n := in; f(&n); return n }
	cases := []struct {
		name string
		p    authz.Principal
		in   ticket.NewTicket
		want outcome
		// created: the call writes the ticket (and its event), changing
		// fields; tags are the ticket's, priority its priority.
		created  bool
		fields   []string
		tags     []string
		priority ticket.Priority
	}{
		{name: "member opens one", p: as(bystander, authz.Member), in: in, want: succeeds, created: true,
			fields: []string{"title", "description", "status", "priority"}, priority: ticket.PriorityUrgent},
		{name: "minted ID, normal priority", p: as(bystander, authz.Member), in: with(func(n *ticket.NewTicket) { n.ID, n.Priority = "", "" }),
			want: succeeds, created: true, fields: []string{"title", "description", "status", "priority"}, priority: ticket.PriorityNormal},
		{name: "assigned to a team", p: as(bystander, authz.Member), in: with(func(n *ticket.NewTicket) { n.AssigneeID, n.TeamID = teamMate, teamID }),
			want: succeeds, created: true, fields: []string{"title", "description", "status", "priority", "assigneeId", "teamId"}, priority: ticket.PriorityUrgent},
		{name: "duplicate tags dropped", p: as(bystander, authz.Member), in: with(func(n *ticket.NewTicket) { n.Tags = []string{"vpn", "net", "vpn"} }),
			want: succeeds, created: true, fields: []string{"title", "description", "status", "priority", "tags"}, tags: []string{"vpn", "net"}, priority: ticket.PriorityUrgent},
		{name: "21 tags of which 20 distinct", p: as(bystander, authz.Member),
			in:   with(func(n *ticket.NewTicket) { n.Tags = append(tags(ticket.MaxTags), "tag-00") }),
			want: succeeds, created: true, fields: []string{"title", "description", "status", "priority", "tags"}, tags: tags(ticket.MaxTags), priority: ticket.PriorityUrgent},
		{name: "21 tags", p: as(bystander, authz.Member), in: with(func(n *ticket.NewTicket) { n.Tags = tags(ticket.MaxTags + 1) }),
			want: fails(errs.Invalid, "too_many_tags")},
		{name: "tag of 51 characters", p: as(bystander, authz.Member), in: with(func(n *ticket.NewTicket) { n.Tags = []string{strings.Repeat("t", ticket.MaxTagLen+1)} }),
			want: fails(errs.Invalid, "too_long")},
		{name: "empty tag", p: as(bystander, authz.Member), in: with(func(n *ticket.NewTicket) { n.Tags = []string{""} }),
			want: fails(errs.Invalid, "required")},
		{name: "empty title", p: as(bystander, authz.Member), in: with(func(n *ticket.NewTicket) { n.Title = "" }), want: fails(errs.Invalid, "required")},
		{name: "title of 201 characters", p: as(bystander, authz.Member), in: with(func(n *ticket.NewTicket) { n.Title = strings.Repeat("t", ticket.MaxTitleLen+1) }),
			want: fails(errs.Invalid, "too_long")},
		{name: "title on two lines", p: as(bystander, authz.Member), in: with(func(n *ticket.NewTicket) { n.Title = "VPN\ndown" }),
			want: fails(errs.Invalid, "invalid_text")},
		{name: "description of 20001 characters", p: as(bystander, authz.Member),
			in:   with(func(n *ticket.NewTicket) { n.Description = strings.Repeat("d", ticket.MaxDescriptionLen+1) }),
			want: fails(errs.Invalid, "too_long")},
		{name: "bad priority", p: as(bystander, authz.Member), in: with(func(n *ticket.NewTicket) { n.Priority = "asap" }), want: fails(errs.Invalid, "invalid_priority")},
		{name: "no role", p: as(nobody, ""), in: in, want: fails(errs.Forbidden, "forbidden")},
		{name: "assignee not in the org", p: as(bystander, authz.Member), in: with(func(n *ticket.NewTicket) { n.AssigneeID = nobody }),
			want: fails(errs.Conflict, "assignee_not_org_member")},
		{name: "requester who left", p: as(nobody, authz.Member), in: in, want: fails(errs.NotFound, "user_not_found")},
		{name: "repeated idempotent create returns the ticket", p: as(requester, authz.Member), in: with(func(n *ticket.NewTicket) { n.ID = ticketID }),
			want: succeeds},
	}
	for _, c := range cases {
		t.Run(c.want.Name("201", "CreateTicket", c.name), func(t *testing.T) {
			s := newFake()
			before := len(s.tickets)
			got, err := service(s).CreateTicket(context.Background(), c.p, c.in)
			c.want.Check(t, err)
			if !c.want.OK {
				s.WantNoEvent(t)
				if len(s.tickets) != before {
					t.Errorf("a ticket was written")
				}
				return
			}
			if stored := s.tickets[got.ID]; !reflect.DeepEqual(got, stored) {
				t.Errorf("returned %+v, stored %+v", got, stored)
			}
			if !c.created {
				if !reflect.DeepEqual(got, seedTicket()) {
					t.Errorf("got %+v, want the existing ticket", got)
				}
				s.WantNoEvent(t)
				return
			}
			if c.in.ID != "" && got.ID != c.in.ID || !ids.ValidResource(got.ID) {
				t.Errorf("ID: got %q, want %q", got.ID, c.in.ID)
			}
			want := ticket.Ticket{OrgID: orgID, ID: got.ID, Title: c.in.Title, Description: c.in.Description, Status: ticket.StatusNew,
				Priority: c.priority, RequesterID: c.p.UserID, AssigneeID: c.in.AssigneeID, TeamID: c.in.TeamID, Tags: c.tags,
				Version: 1, CreatedAt: t1, UpdatedAt: t1}
			if want.Tags == nil {
				want.Tags = []string{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v, want %+v", got, want)
			}
			s.WantEvent(t, "ticket.create", "ticket", got.ID, c.p.UserID, byOrg(authz.Member), c.fields...)
		})
	}
}

func TestUpdateTicket(t *testing.T) {
	unavailable := errs.E(errs.Unavailable, "db_unavailable", "throttled")
	cases := []struct {
		name     string
		p        authz.Principal
		ticketID string
		patch    ticket.Patch
		ifMatch  ifmatch.Match
		first    bool
		setup    func(s *fakeStore)
		want     outcome
		// reads of the ticket and of the caller's team edge.
		reads, teamReads int
		// g and fields are the event's when the update writes; fields nil:
		// it writes nothing.
		g      grant
		fields []string
		check  func(t *testing.T, got ticket.Ticket)
	}{
		{name: "empty patch", p: as(requester, authz.Member), ticketID: ticketID, want: fails(errs.Invalid, "empty_patch")},

		// Who may.
		{name: "requester solves it", p: as(requester, authz.Member), ticketID: ticketID, patch: ticket.Patch{Status: ptr(ticket.StatusSolved)},
			want: succeeds, reads: 1, g: byOrg(authz.Member), fields: []string{"status"}},
		{name: "assignee lowers its priority", p: as(assignee, authz.Member), ticketID: ticketID, patch: ticket.Patch{Priority: ptr(ticket.PriorityLow)},
			want: succeeds, reads: 1, g: byOrg(authz.Member), fields: []string{"priority"}},
		{name: "member of its team takes it", p: as(teamMate, authz.Member), ticketID: ticketID, patch: ticket.Patch{AssigneeID: ptr(teamMate)},
			want: succeeds, reads: 1, teamReads: 1, g: byTeam, fields: []string{"assigneeId"}},
		{name: "org admin retitles it", p: as(admin, authz.Admin), ticketID: ticketID, patch: ticket.Patch{Title: ptr("Printer smoking")},
			want: succeeds, reads: 1, g: byOrg(authz.Admin), fields: []string{"title"}},
		{name: "org owner retitles it", p: as(owner, authz.Owner), ticketID: ticketID, patch: ticket.Patch{Title: ptr("Printer smoking")},
			want: succeeds, reads: 1, g: byOrg(authz.Admin), fields: []string{"title"}},
		{name: "member off its team", p: as(bystander, authz.Member), ticketID: ticketID, patch: ticket.Patch{Status: ptr(ticket.StatusClosed)},
			want: fails(errs.Forbidden, "forbidden"), reads: 1, teamReads: 1},
		{name: "member on a ticket of no team", p: as(teamMate, authz.Member), ticketID: noTeam, patch: ticket.Patch{Status: ptr(ticket.StatusClosed)},
			want: fails(errs.Forbidden, "forbidden"), reads: 1},
		{name: "requester on a ticket of no team", p: as(requester, authz.Member), ticketID: noTeam, patch: ticket.Patch{Status: ptr(ticket.StatusOpen)},
			want: succeeds, reads: 1, g: byOrg(authz.Member), fields: []string{"status"}},
		{name: "no role", p: as(nobody, ""), ticketID: ticketID, patch: ticket.Patch{Status: ptr(ticket.StatusClosed)},
			want: fails(errs.Forbidden, "forbidden"), reads: 1, teamReads: 1},
		{name: "member patches a missing ticket", p: as(bystander, authz.Member), ticketID: missing, patch: ticket.Patch{Status: ptr(ticket.StatusClosed)},
			want: fails(errs.NotFound, "ticket_not_found"), reads: 1},
		{name: "the team edge cannot be read", p: as(teamMate, authz.Member), ticketID: ticketID, patch: ticket.Patch{Status: ptr(ticket.StatusClosed)},
			setup: func(s *fakeStore) { s.Fail["GetTeamMember"] = unavailable },
			want:  fails(errs.Unavailable, "db_unavailable"), reads: 1, teamReads: 1},

		// What changes.
		{name: "unassigned", p: as(requester, authz.Member), ticketID: ticketID, patch: ticket.Patch{AssigneeID: ptr("")},
			want: succeeds, reads: 1, g: byOrg(authz.Member), fields: []string{"assigneeId"},
			check: func(t *testing.T, got ticket.Ticket) {
				if got.AssigneeID != "" {
					t.Errorf("assignee: got %q, want none", got.AssigneeID)
				}
			}},
		{name: "moved to another team", p: as(teamMate, authz.Member), ticketID: ticketID, patch: ticket.Patch{TeamID: ptr(team2)},
			want: succeeds, reads: 1, teamReads: 1, g: byTeam, fields: []string{"teamId"}},
		{name: "tags replaced, duplicates dropped", p: as(requester, authz.Member), ticketID: ticketID,
			patch: ticket.Patch{Tags: ptr([]string{"printer", "fire", "printer"})},
			want:  succeeds, reads: 1, g: byOrg(authz.Member), fields: []string{"tags"},
			check: func(t *testing.T, got ticket.Ticket) {
				if !slices.Equal(got.Tags, []string{"printer", "fire"}) {
					t.Errorf("tags: got %v", got.Tags)
				}
			}},
		{name: "everything at once", p: as(admin, authz.Admin), ticketID: ticketID,
			patch: ticket.Patch{Title: ptr("Fire"), Description: ptr("Out now"), Status: ptr(ticket.StatusPending), Priority: ptr(ticket.PriorityUrgent),
				AssigneeID: ptr(teamMate), TeamID: ptr(""), Tags: ptr([]string{})},
			want: succeeds, reads: 1, g: byOrg(authz.Admin),
			fields: []string{"title", "description", "status", "priority", "assigneeId", "teamId", "tags"}},
		{name: "same status writes nothing", p: as(requester, authz.Member), ticketID: ticketID, patch: ticket.Patch{Status: ptr(ticket.StatusOpen)},
			want: succeeds, reads: 1,
			check: func(t *testing.T, got ticket.Ticket) {
				if !reflect.DeepEqual(got, seedTicket()) {
					t.Errorf("got %+v, want the ticket as it was", got)
				}
			}},
		{name: "empty title", p: as(requester, authz.Member), ticketID: ticketID, patch: ticket.Patch{Title: ptr("")},
			want: fails(errs.Invalid, "required"), reads: 1},
		{name: "title of 201 characters", p: as(requester, authz.Member), ticketID: ticketID, patch: ticket.Patch{Title: ptr(strings.Repeat("t", ticket.MaxTitleLen+1))},
			want: fails(errs.Invalid, "too_long"), reads: 1},
		{name: "bad status", p: as(requester, authz.Member), ticketID: ticketID, patch: ticket.Patch{Status: ptr(ticket.Status("done"))},
			want: fails(errs.Invalid, "invalid_status"), reads: 1},
		{name: "bad priority", p: as(requester, authz.Member), ticketID: ticketID, patch: ticket.Patch{Priority: ptr(ticket.Priority("asap"))},
			want: fails(errs.Invalid, "invalid_priority"), reads: 1},
		{name: "21 tags", p: as(requester, authz.Member), ticketID: ticketID, patch: ticket.Patch{Tags: ptr(tags(ticket.MaxTags + 1))},
			want: fails(errs.Invalid, "too_many_tags"), reads: 1},
		{name: "bad status from a bystander", p: as(bystander, authz.Member), ticketID: ticketID, patch: ticket.Patch{Status: ptr(ticket.Status("done"))},
			want: fails(errs.Forbidden, "forbidden"), reads: 1, teamReads: 1},
		{name: "assignee not in the org", p: as(requester, authz.Member), ticketID: ticketID, patch: ticket.Patch{AssigneeID: ptr(nobody)},
			want: fails(errs.Conflict, "assignee_not_org_member"), reads: 1},

		// If-Match.
		{name: "stale If-Match", p: as(requester, authz.Member), ticketID: ticketID, patch: ticket.Patch{Status: ptr(ticket.StatusSolved)},
			ifMatch: ifmatch.Versions(2), want: fails(errs.PreconditionFailed, "version_mismatch"), reads: 1},
		{name: "stale If-Match from a bystander", p: as(bystander, authz.Member), ticketID: ticketID, patch: ticket.Patch{Status: ptr(ticket.StatusSolved)},
			ifMatch: ifmatch.Versions(2), want: fails(errs.Forbidden, "forbidden"), reads: 1, teamReads: 1},
		{name: "If-Match of the current version", p: as(requester, authz.Member), ticketID: ticketID, patch: ticket.Patch{Status: ptr(ticket.StatusSolved)},
			ifMatch: ifmatch.Versions(1), want: succeeds, reads: 1, g: byOrg(authz.Member), fields: []string{"status"}},
		{name: "If-Match *", p: as(requester, authz.Member), ticketID: ticketID, patch: ticket.Patch{Status: ptr(ticket.StatusSolved)},
			ifMatch: ifmatch.Any(), want: succeeds, reads: 1, g: byOrg(authz.Member), fields: []string{"status"}},
		{name: "If-Match: a concurrent change is not retried", p: as(requester, authz.Member), ticketID: ticketID,
			patch: ticket.Patch{Status: ptr(ticket.StatusSolved)}, ifMatch: ifmatch.Versions(1), first: true,
			setup: func(s *fakeStore) {
				s.BeforeWrite = once(func() { s.change(ticketID, func(t *ticket.Ticket) { t.Title = "x" }) })
			},
			want: fails(errs.PreconditionFailed, "version_mismatch")},

		// first, and retries without If-Match.
		{name: "first is used without a read", p: as(requester, authz.Member), ticketID: ticketID, patch: ticket.Patch{Status: ptr(ticket.StatusSolved)},
			first: true, want: succeeds, g: byOrg(authz.Member), fields: []string{"status"}},
		{name: "no If-Match: a concurrent change is read again", p: as(teamMate, authz.Member), ticketID: ticketID,
			patch: ticket.Patch{Status: ptr(ticket.StatusSolved)},
			setup: func(s *fakeStore) {
				s.BeforeWrite = once(func() { s.change(ticketID, func(t *ticket.Ticket) { t.Title = "Printer smoking" }) })
			},
			want: succeeds, reads: 2, teamReads: 2, g: byTeam, fields: []string{"status"},
			check: func(t *testing.T, got ticket.Ticket) {
				if got.Title != "Printer smoking" || got.Status != ticket.StatusSolved || got.Version != 3 {
					t.Errorf("got %+v, want the concurrent title kept, solved, version 3", got)
				}
			}},
		{name: "retry decides again: reassigned away from the caller", p: as(assignee, authz.Member), ticketID: noTeam,
			patch: ticket.Patch{Status: ptr(ticket.StatusOpen)},
			setup: func(s *fakeStore) {
				s.change(noTeam, func(t *ticket.Ticket) { t.AssigneeID = assignee })
				s.BeforeWrite = once(func() { s.change(noTeam, func(t *ticket.Ticket) { t.AssigneeID = teamMate }) })
			},
			want: fails(errs.Forbidden, "forbidden"), reads: 2},
		{name: "no If-Match: always changed concurrently", p: as(requester, authz.Member), ticketID: ticketID, first: true,
			patch: ticket.Patch{Status: ptr(ticket.StatusSolved)},
			setup: func(s *fakeStore) { s.BeforeWrite = func() { s.change(ticketID, func(*ticket.Ticket) {}) } },
			want:  fails(errs.Unavailable, "busy"), reads: 11},
	}
	for _, c := range cases {
		t.Run(c.want.Name("200", "UpdateTicket", c.name), func(t *testing.T) {
			s := newFake()
			var first *ticket.Ticket
			if c.first {
				tk := s.tickets[c.ticketID]
				first = &tk
			}
			if c.setup != nil {
				c.setup(s)
			}
			before := s.tickets[c.ticketID]
			got, err := service(s).UpdateTicket(context.Background(), c.p, c.ticketID, first, c.patch, c.ifMatch)
			c.want.Check(t, err)
			if n := s.Calls["GetTicket"]; n != c.reads {
				t.Errorf("reads of the ticket: got %d, want %d", n, c.reads)
			}
			if n := s.Calls["GetTeamMember"]; n != c.teamReads {
				t.Errorf("reads of the caller's team edge: got %d, want %d", n, c.teamReads)
			}
			stored := s.tickets[c.ticketID]
			if !c.want.OK {
				s.WantNoEvent(t)
				if c.setup == nil && !reflect.DeepEqual(stored, before) {
					t.Errorf("stored: got %+v, want it unchanged", stored)
				}
				return
			}
			if !reflect.DeepEqual(got, stored) {
				t.Errorf("returned %+v, stored %+v", got, stored)
			}
			if c.fields == nil {
				s.WantNoEvent(t)
			} else {
				if got.UpdatedAt != t1 || got.CreatedAt != t0 || got.RequesterID != requester {
					t.Errorf("got %+v, want updated at %v, created at %v by %s", got, t1, t0, requester)
				}
				s.WantEvent(t, "ticket.update", "ticket", c.ticketID, c.p.UserID, c.g, c.fields...)
			}
			if c.check != nil {
				c.check(t, got)
			}
		})
	}
}

func TestDeleteTicket(t *testing.T) {
	cases := []struct {
		name     string
		p        authz.Principal
		ticketID string
		ifMatch  ifmatch.Match
		first    bool
		setup    func(s *fakeStore)
		want     outcome
		reads    int
		deleteIf []int64
		g        grant
	}{
		{name: "requester deletes it", p: as(requester, authz.Member), ticketID: ticketID, want: succeeds, reads: 1, deleteIf: []int64{0}, g: byOrg(authz.Member)},
		{name: "org admin deletes it", p: as(admin, authz.Admin), ticketID: ticketID, want: succeeds, reads: 1, deleteIf: []int64{0}, g: byOrg(authz.Admin)},
		{name: "assignee", p: as(assignee, authz.Member), ticketID: ticketID, want: fails(errs.Forbidden, "forbidden"), reads: 1},
		{name: "member of its team", p: as(teamMate, authz.Member), ticketID: ticketID, want: fails(errs.Forbidden, "forbidden"), reads: 1},
		{name: "bystander", p: as(bystander, authz.Member), ticketID: ticketID, want: fails(errs.Forbidden, "forbidden"), reads: 1},
		{name: "missing ticket", p: as(bystander, authz.Member), ticketID: missing, want: fails(errs.NotFound, "ticket_not_found"), reads: 1},
		{name: "stale If-Match", p: as(requester, authz.Member), ticketID: ticketID, ifMatch: ifmatch.Versions(2),
			want: fails(errs.PreconditionFailed, "version_mismatch"), reads: 1},
		{name: "stale If-Match from the assignee", p: as(assignee, authz.Member), ticketID: ticketID, ifMatch: ifmatch.Versions(2),
			want: fails(errs.Forbidden, "forbidden"), reads: 1},
		{name: "If-Match of the current version", p: as(requester, authz.Member), ticketID: ticketID, ifMatch: ifmatch.Versions(1),
			want: succeeds, reads: 1, deleteIf: []int64{1}, g: byOrg(authz.Member)},
		{name: "If-Match *", p: as(requester, authz.Member), ticketID: ticketID, ifMatch: ifmatch.Any(),
			want: succeeds, reads: 1, deleteIf: []int64{0}, g: byOrg(authz.Member)},
		{name: "first is used without a read", p: as(requester, authz.Member), ticketID: ticketID, first: true,
			want: succeeds, deleteIf: []int64{0}, g: byOrg(authz.Member)},
		{name: "If-Match on a stale first: the store decides", p: as(requester, authz.Member), ticketID: ticketID, first: true, ifMatch: ifmatch.Versions(1),
			setup: func(s *fakeStore) { s.change(ticketID, func(*ticket.Ticket) {}) },
			want:  fails(errs.PreconditionFailed, "version_mismatch"), deleteIf: []int64{1}},
	}
	for _, c := range cases {
		t.Run(c.want.Name("204", "DeleteTicket", c.name), func(t *testing.T) {
			s := newFake()
			var first *ticket.Ticket
			if c.first {
				tk := s.tickets[c.ticketID]
				first = &tk
			}
			if c.setup != nil {
				c.setup(s)
			}
			err := service(s).DeleteTicket(context.Background(), c.p, c.ticketID, first, c.ifMatch)
			c.want.Check(t, err)
			if n := s.Calls["GetTicket"]; n != c.reads {
				t.Errorf("reads of the ticket: got %d, want %d", n, c.reads)
			}
			if n := s.Calls["GetTeamMember"]; n != 0 {
				t.Errorf("reads of team edges: got %d, want none (a team never decides a delete)", n)
			}
			if !slices.Equal(s.deleteIf, c.deleteIf) {
				t.Errorf("DeleteTicket's ifVersion: got %v, want %v", s.deleteIf, c.deleteIf)
			}
			_, has := s.tickets[c.ticketID]
			if !c.want.OK {
				s.WantNoEvent(t)
				if c.ticketID != missing && !has {
					t.Errorf("the ticket was deleted")
				}
				return
			}
			if has || len(s.comments[c.ticketID]) != 0 {
				t.Errorf("the ticket or its comments are still stored")
			}
			s.WantEvent(t, "ticket.delete", "ticket", c.ticketID, c.p.UserID, c.g, "title")
		})
	}
}

func TestCreateComment(t *testing.T) {
	const commentID = "01BX5ZZKBKACTAV9WEVGEMMVC2"
	cases := []struct {
		name      string
		p         authz.Principal
		ticketID  string
		commentID string
		body      string
		want      outcome
		created   bool
	}{
		{name: "any member comments", p: as(bystander, authz.Member), ticketID: ticketID, commentID: commentID, body: "Me too", want: succeeds, created: true},
		{name: "minted ID, several lines", p: as(bystander, authz.Member), ticketID: ticketID, body: "Me too.\n\tAnd more.", want: succeeds, created: true},
		{name: "body of 20000 characters", p: as(bystander, authz.Member), ticketID: ticketID, body: strings.Repeat("é", ticket.MaxBodyLen),
			want: succeeds, created: true},
		{name: "empty body", p: as(bystander, authz.Member), ticketID: ticketID, body: "", want: fails(errs.Invalid, "required")},
		{name: "body of 20001 characters", p: as(bystander, authz.Member), ticketID: ticketID, body: strings.Repeat("b", ticket.MaxBodyLen+1),
			want: fails(errs.Invalid, "too_long")},
		{name: "body with a control character", p: as(bystander, authz.Member), ticketID: ticketID, body: "bell\x07", want: fails(errs.Invalid, "invalid_text")},
		{name: "no role", p: as(nobody, ""), ticketID: ticketID, body: "Me too", want: fails(errs.Forbidden, "forbidden")},
		{name: "missing ticket", p: as(bystander, authz.Member), ticketID: missing, body: "Me too", want: fails(errs.NotFound, "ticket_not_found")},
		{name: "repeated idempotent comment returns it", p: as(assignee, authz.Member), ticketID: ticketID, commentID: "01BX5ZZKBKACTAV9WEVGEMMVC1",
			body: "On it", want: succeeds},
	}
	for _, c := range cases {
		t.Run(c.want.Name("201", "CreateComment", c.name), func(t *testing.T) {
			s := newFake()
			got, err := service(s).CreateComment(context.Background(), c.p, c.ticketID, c.commentID, c.body)
			c.want.Check(t, err)
			if !c.want.OK {
				s.WantNoEvent(t)
				return
			}
			if !c.created {
				if got != s.comments[ticketID][0] || len(s.comments[ticketID]) != 1 {
					t.Errorf("got %+v, want the existing comment alone", got)
				}
				s.WantNoEvent(t)
				return
			}
			if c.commentID != "" && got.ID != c.commentID || !ids.ValidResource(got.ID) {
				t.Errorf("ID: got %q, want %q", got.ID, c.commentID)
			}
			want := ticket.Comment{OrgID: orgID, TicketID: c.ticketID, ID: got.ID, AuthorID: c.p.UserID, Body: c.body, CreatedAt: t1}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
			s.WantEvent(t, "comment.create", "comment", c.ticketID+"/"+got.ID, c.p.UserID, byOrg(authz.Member), "body")
		})
	}
}

func TestGetTicket(t *testing.T) {
	seeded := seedTicket()
	cases := []struct {
		name         string
		p            authz.Principal
		ticketID     string
		first        *ticket.Ticket
		withComments bool
		x            ticket.Expand
		setup        func(s *fakeStore)
		want         outcome
		calls        map[string]int
		batched      [][]string
		// requester and assignee say which users come expanded.
		requester, assignee bool
		comments            int
	}{
		{name: "first is used without a read", p: as(bystander, authz.Member), ticketID: ticketID, first: &seeded, want: succeeds, calls: map[string]int{}},
		{name: "read without first", p: as(bystander, authz.Member), ticketID: ticketID, want: succeeds, calls: map[string]int{"GetTicket": 1}},
		{name: "with comments in one read", p: as(bystander, authz.Member), ticketID: ticketID, withComments: true, want: succeeds,
			calls: map[string]int{"GetTicketWithComments": 1}, comments: 1},
		{name: "with comments, the partition whatever was read first", p: as(bystander, authz.Member), ticketID: ticketID, first: &seeded, withComments: true,
			want: succeeds, calls: map[string]int{"GetTicketWithComments": 1}, comments: 1},
		{name: "both users expanded in one batch", p: as(bystander, authz.Member), ticketID: ticketID, x: ticket.Expand{Requester: true, Assignee: true},
			want: succeeds, calls: map[string]int{"GetTicket": 1, "BatchGetOrgUsers": 1}, batched: [][]string{{assignee, requester}},
			requester: true, assignee: true},
		{name: "an assignee who left stays unexpanded", p: as(bystander, authz.Member), ticketID: ticketID, x: ticket.Expand{Requester: true, Assignee: true},
			setup: func(s *fakeStore) { delete(s.users, assignee) },
			want:  succeeds, calls: map[string]int{"GetTicket": 1, "BatchGetOrgUsers": 1}, batched: [][]string{{assignee, requester}}, requester: true},
		{name: "missing ticket", p: as(bystander, authz.Member), ticketID: missing, x: ticket.Expand{Requester: true},
			want: fails(errs.NotFound, "ticket_not_found"), calls: map[string]int{"GetTicket": 1}},
		{name: "no role", p: as(nobody, ""), ticketID: ticketID, want: fails(errs.Forbidden, "forbidden"), calls: map[string]int{}},
	}
	for _, c := range cases {
		t.Run(c.want.Name("200", "GetTicket", c.name), func(t *testing.T) {
			s := newFake()
			if c.setup != nil {
				c.setup(s)
			}
			got, comments, err := service(s).GetTicket(context.Background(), c.p, c.ticketID, c.first, c.withComments, c.x)
			c.want.Check(t, err)
			for _, m := range []string{"GetTicket", "GetTicketWithComments", "ListComments", "BatchGetOrgUsers"} {
				if n, want := s.Calls[m], c.calls[m]; n != want {
					t.Errorf("%s calls: got %d, want %d", m, n, want)
				}
			}
			if got := distinct(s.batched); !reflect.DeepEqual(got, c.batched) {
				t.Errorf("users batched: got %v, want %v", got, c.batched)
			}
			if !c.want.OK {
				return
			}
			if got.ID != c.ticketID || len(comments) != c.comments {
				t.Errorf("got ticket %s with %d comments, want %s with %d", got.ID, len(comments), c.ticketID, c.comments)
			}
			if (got.Requester != nil) != c.requester || got.Requester != nil && got.Requester.UserID != got.RequesterID {
				t.Errorf("requester: got %+v, want expanded %v", got.Requester, c.requester)
			}
			if (got.Assignee != nil) != c.assignee || got.Assignee != nil && got.Assignee.UserID != got.AssigneeID {
				t.Errorf("assignee: got %+v, want expanded %v", got.Assignee, c.assignee)
			}
		})
	}
}

func TestListTickets(t *testing.T) {
	cases := []struct {
		name    string
		p       authz.Principal
		f       ticket.Filter
		x       ticket.Expand
		want    outcome
		n       int
		batched [][]string
	}{
		{name: "all, requesters in one batch", p: as(bystander, authz.Member), x: ticket.Expand{Requester: true}, want: succeeds, n: 2,
			batched: [][]string{{requester}}},
		{name: "by status", p: as(bystander, authz.Member), f: ticket.Filter{Status: ticket.StatusOpen}, want: succeeds, n: 1},
		{name: "by priority and status", p: as(bystander, authz.Member), f: ticket.Filter{Status: ticket.StatusOpen, Priority: ticket.PriorityHigh},
			want: succeeds, n: 1},
		{name: "by assignee and status", p: as(bystander, authz.Member), f: ticket.Filter{Status: ticket.StatusOpen, AssigneeID: assignee}, want: succeeds, n: 1},
		{name: "priority and assignee together", p: as(bystander, authz.Member), f: ticket.Filter{Priority: ticket.PriorityHigh, AssigneeID: assignee},
			want: fails(errs.Invalid, "unserved_filter")},
		{name: "bad status", p: as(bystander, authz.Member), f: ticket.Filter{Status: "done"}, want: fails(errs.Invalid, "invalid_status")},
		{name: "no role", p: as(nobody, ""), want: fails(errs.Forbidden, "forbidden")},
	}
	for _, c := range cases {
		t.Run(c.want.Name("200", "ListTickets", c.name), func(t *testing.T) {
			s := newFake()
			r, err := service(s).ListTickets(context.Background(), c.p, c.f, c.x, page.Request{Limit: 10})
			c.want.Check(t, err)
			if !c.want.OK {
				if s.Calls["ListTickets"] != 0 {
					t.Errorf("the store was read")
				}
				return
			}
			if len(r.Items) != c.n || !reflect.DeepEqual(distinct(s.batched), c.batched) {
				t.Errorf("got %d tickets, batched %v; want %d, %v", len(r.Items), s.batched, c.n, c.batched)
			}
		})
	}
	t.Run("400/ListTeamTickets/bad status", func(t *testing.T) {
		s := newFake()
		_, err := service(s).ListTeamTickets(context.Background(), as(bystander, authz.Member), teamID, "done", ticket.Expand{}, page.Request{Limit: 10})
		fails(errs.Invalid, "invalid_status").Check(t, err)
	})
	t.Run("200/ListTeamTickets/assignees in one batch", func(t *testing.T) {
		s := newFake()
		r, err := service(s).ListTeamTickets(context.Background(), as(bystander, authz.Member), teamID, "", ticket.Expand{Assignee: true}, page.Request{Limit: 10})
		succeeds.Check(t, err)
		if len(r.Items) != 1 || r.Items[0].Assignee == nil || !reflect.DeepEqual(distinct(s.batched), [][]string{{assignee}}) {
			t.Errorf("got %+v, batched %v", r.Items, s.batched)
		}
	})
	t.Run("200/ListUserTickets/none expanded", func(t *testing.T) {
		s := newFake()
		r, err := service(s).ListUserTickets(context.Background(), as(bystander, authz.Member), requester, ticket.Expand{}, page.Request{Limit: 10})
		succeeds.Check(t, err)
		if len(r.Items) != 2 || s.Calls["BatchGetOrgUsers"] != 0 {
			t.Errorf("got %d tickets, %d batch reads", len(r.Items), s.Calls["BatchGetOrgUsers"])
		}
	})
	t.Run("200/ListAssignedTickets/none expanded", func(t *testing.T) {
		s := newFake()
		r, err := service(s).ListAssignedTickets(context.Background(), as(bystander, authz.Member), assignee, ticket.Expand{}, page.Request{Limit: 10})
		succeeds.Check(t, err)
		if len(r.Items) != 1 || r.Items[0].ID != ticketID || s.Calls["BatchGetOrgUsers"] != 0 {
			t.Errorf("got %+v after %d batch reads", r.Items, s.Calls["BatchGetOrgUsers"])
		}
	})
	t.Run("403/ListComments/no role", func(t *testing.T) {
		s := newFake()
		_, err := service(s).ListComments(context.Background(), as(nobody, ""), ticketID, page.Request{Limit: 10})
		fails(errs.Forbidden, "forbidden").Check(t, err)
	})
}
