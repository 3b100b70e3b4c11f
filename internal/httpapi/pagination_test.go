package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tenantd/tenantd/client"
)

// TestPagination is the behaviour of cursor pagination of every listing.
func TestPagination(t *testing.T) {
	t.Run("200", func(t *testing.T) {
		ts := MustServer(t)
		w := MustWorld(t, ts, "Acme")
		t.Run("pagination", func(t *testing.T) { testPagination(t, ts, w) })
	})
}

// followLinks GETs path and then every page its Link headers lead to, and
// returns the ids of the items; check, if set, sees each page.
func followLinks(t *testing.T, hc *http.Client, base, path string, check func(t *testing.T, page int, items []map[string]any)) []string {
	t.Helper()
	baseURL, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	next := base + path
	var ids []string
	for pages := 0; next != ""; pages++ {
		if pages > 20 {
			t.Fatal("more than 20 pages")
		}
		resp, err := hc.Get(next)
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Items []map[string]any `json:"items"`
		}
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v", next, resp.StatusCode, err)
		}
		if check != nil {
			check(t, pages, list.Items)
		}
		for _, it := range list.Items {
			ids = append(ids, fmt.Sprint(it["id"]))
		}
		next = ""
		if m := linkRE.FindStringSubmatch(resp.Header.Get("Link")); m != nil {
			ref, err := baseURL.Parse(m[1])
			if err != nil {
				t.Fatalf("Link %q: %v", m[1], err)
			}
			next = ref.String()
		}
	}
	return ids
}

func ticketIDs(ts []client.Ticket) []string {
	var ids []string
	for _, t := range ts {
		ids = append(ids, t.Id)
	}
	return ids
}

// pageFn fetches one page of up to limit items after cursor (nil = the
// first page) and returns the ids on it, the nextCursor and the headers.
type pageFn func(t *testing.T, limit int, cursor *string) ([]string, *string, http.Header)

var linkRE = regexp.MustCompile(`^<([^>]+)>; rel="next"$`)

// walkN follows nextCursor through every page of limit items and returns
// the ids in order and the number of pages. sparse listings may return
// empty pages with a nextCursor (the spec allows it for them).
func walkN(t *testing.T, fetch pageFn, limit int, sparse bool) ([]string, int) {
	t.Helper()
	var all []string
	seen := map[string]bool{}
	var cursor *string
	for pages := 1; ; pages++ {
		if pages > 50 {
			t.Fatal("more than 50 pages: the cursor does not advance")
		}
		ids, next, h := fetch(t, limit, cursor)
		if len(ids) > limit {
			t.Errorf("page %d: %d items, limit is %d", pages, len(ids), limit)
		}
		for _, id := range ids {
			if seen[id] {
				t.Errorf("page %d: item %s repeats", pages, id)
			}
			seen[id] = true
		}
		all = append(all, ids...)
		link := h.Get("Link")
		if next == nil {
			if link != "" {
				t.Errorf("last page %d has a Link header %q", pages, link)
			}
			return all, pages
		}
		if len(ids) == 0 && !sparse {
			t.Errorf("page %d is empty but has a nextCursor", pages)
		}
		m := linkRE.FindStringSubmatch(link)
		if m == nil {
			t.Fatalf("page %d: Link header %q, want <url>; rel=\"next\"", pages, link)
		}
		u, err := url.Parse(m[1])
		if err != nil {
			t.Fatalf("page %d: Link URL: %v", pages, err)
		}
		if got, want := u.Query().Get("cursor"), *next; got != want {
			t.Errorf("page %d: Link cursor %q, want nextCursor %q", pages, got, want)
		}
		if got, want := u.Query().Get("limit"), fmt.Sprint(limit); got != want {
			t.Errorf("page %d: Link limit %q, want %q", pages, got, want)
		}
		cursor = next
	}
}

func testPagination(t *testing.T, ts *testServer, w *world) {
	org, owner := w.Org.Id, w.Owner.C
	// More of everything: 4 more tickets requested by Requester, assigned
	// to Assignee and routed to Team (3 of them open); a ticket with 5
	// comments; 5 teams with TeamOwner in 3; 5 team members; 5 orgs.
	var mine []string
	for i := range 4 {
		tk := MustTicket(t, w.Requester.C, org, client.TicketCreate{Title: fmt.Sprintf("ticket %d", i), TeamId: &w.Team.Id, AssigneeId: &w.Assignee.ID})
		mine = append(mine, tk.Id)
	}
	for _, id := range mine[:3] {
		r, err := w.Assignee.C.UpdateTicketWithResponse(bg, org, id, nil, client.UpdateTicketJSONRequestBody{Status: ptr(client.TicketStatusPending)})
		mustStatus(t, r, err, http.StatusOK)
	}
	fresh := MustTicket(t, w.Requester.C, org, client.TicketCreate{Title: "for comments"})
	for i := range 5 {
		MustComment(t, w.Member.C, org, fresh.Id, fmt.Sprintf("comment %d", i))
	}
	for i := range 4 {
		tm := MustTeam(t, owner, org, fmt.Sprintf("Team %d", i))
		if i < 2 {
			MustMember(t, owner, org, tm.Id, w.TeamOwner.ID, client.RoleMember)
		}
	}
	MustMember(t, owner, org, w.Team.Id, w.Requester.ID, client.RoleMember)
	for i := range 4 {
		MustOrg(t, owner, fmt.Sprintf("Owner's org %d", i))
	}

	for i := range 3 {
		MustInvitation(t, owner, org, fmt.Sprintf("pending-%d@example.com", i), client.RoleMember)
	}
	cases := []struct {
		name   string
		min    int // at least this many items in all
		fetch  pageFn
		sparse bool // pages may be short, even empty
	}{
		{"listOrgs", 5, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := owner.ListOrgsWithResponse(bg, &client.ListOrgsParams{Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			var ids []string
			for _, m := range r.JSON200.Items {
				ids = append(ids, m.OrgId)
			}
			return ids, r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
		{"listOrgUsers", 8, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListOrgUsersWithResponse(bg, org, &client.ListOrgUsersParams{Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			var ids []string
			for _, u := range r.JSON200.Items {
				ids = append(ids, u.UserId)
			}
			return ids, r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
		{"listUserTeams", 3, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			expand := client.ListUserTeamsParamsExpandTeam
			r, err := w.Member.C.ListUserTeamsWithResponse(bg, org, w.TeamOwner.ID, &client.ListUserTeamsParams{Expand: &expand, Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			var ids []string
			for _, m := range r.JSON200.Items {
				ids = append(ids, m.TeamId)
				if m.TeamName == nil || *m.TeamName == "" {
					t.Errorf("membership of team %s lacks teamName", m.TeamId)
				}
			}
			return ids, r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
		{"listUserTickets", 6, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListUserTicketsWithResponse(bg, org, w.Requester.ID, &client.ListUserTicketsParams{Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			return ticketIDs(r.JSON200.Items), r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
		{"listUserTickets/include=user", 6, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListUserTicketsWithResponse(bg, org, w.Requester.ID,
				&client.ListUserTicketsParams{Limit: &n, Cursor: c, Include: ptr(client.ListUserTicketsParamsIncludeUser)})
			mustStatus(t, r, err, http.StatusOK)
			ids, next, h := ticketIDs(r.JSON200.Items), r.JSON200.NextCursor, r.HTTPResponse.Header
			if c == nil && (r.JSON200.User == nil || r.JSON200.User.UserId != w.Requester.ID) {
				t.Errorf("first page lacks the user: %+v", r.JSON200.User)
			}
			return ids, next, h
		}, false},
		{"listAssignedTickets", 5, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListAssignedTicketsWithResponse(bg, org, w.Assignee.ID, &client.ListAssignedTicketsParams{Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			return ticketIDs(r.JSON200.Items), r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
		{"listTeams", 5, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListTeamsWithResponse(bg, org, &client.ListTeamsParams{Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			var ids []string
			for _, tm := range r.JSON200.Items {
				ids = append(ids, tm.Id)
			}
			return ids, r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
		{"listTeamMembers/expand=user", 5, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListTeamMembersWithResponse(bg, org, w.Team.Id,
				&client.ListTeamMembersParams{Limit: &n, Cursor: c, Expand: ptr(client.ListTeamMembersParamsExpandUser)})
			mustStatus(t, r, err, http.StatusOK)
			var ids []string
			for _, m := range r.JSON200.Items {
				ids = append(ids, m.UserId)
				if m.User == nil {
					t.Errorf("member %s: user not expanded", m.UserId)
				}
			}
			return ids, r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
		{"listTeamTickets", 5, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListTeamTicketsWithResponse(bg, org, w.Team.Id, &client.ListTeamTicketsParams{Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			return ticketIDs(r.JSON200.Items), r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
		{"listTeamTickets/status=pending", 3, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListTeamTicketsWithResponse(bg, org, w.Team.Id, &client.ListTeamTicketsParams{Limit: &n, Cursor: c, Status: ptr(client.TicketStatusPending)})
			mustStatus(t, r, err, http.StatusOK)
			return ticketIDs(r.JSON200.Items), r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
		{"listTickets", 6, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			return ticketIDs(r.JSON200.Items), r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
		{"listTickets/status=pending&expand=requester", 3, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListTicketsWithResponse(bg, org, &client.ListTicketsParams{Limit: &n, Cursor: c,
				Status: ptr(client.TicketStatusPending), Expand: &client.TicketExpand{client.TicketExpansionRequester}})
			mustStatus(t, r, err, http.StatusOK)
			ids, next, h := ticketIDs(r.JSON200.Items), r.JSON200.NextCursor, r.HTTPResponse.Header
			for _, tk := range r.JSON200.Items {
				if tk.Requester == nil || tk.Status != client.TicketStatusPending {
					t.Errorf("ticket %s: status %s, requester expanded %v", tk.Id, tk.Status, tk.Requester != nil)
				}
			}
			return ids, next, h
		}, false},
		{"listInvitations", 3, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Admin.C.ListInvitationsWithResponse(bg, org, &client.ListInvitationsParams{Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			var ids []string
			for _, inv := range r.JSON200.Items {
				ids = append(ids, inv.Id)
			}
			return ids, r.JSON200.NextCursor, r.HTTPResponse.Header
		}, true},
		{"listAuditEvents", 20, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := owner.ListAuditEventsWithResponse(bg, org, &client.ListAuditEventsParams{Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			var ids []string
			for _, ev := range r.JSON200.Items {
				ids = append(ids, ev.Id)
			}
			return ids, r.JSON200.NextCursor, r.HTTPResponse.Header
		}, true},
		{"listComments", 5, func(t *testing.T, n int, c *string) ([]string, *string, http.Header) {
			r, err := w.Member.C.ListCommentsWithResponse(bg, org, fresh.Id, &client.ListCommentsParams{Limit: &n, Cursor: c})
			mustStatus(t, r, err, http.StatusOK)
			var ids []string
			for _, cm := range r.JSON200.Items {
				ids = append(ids, cm.Id)
			}
			return ids, r.JSON200.NextCursor, r.HTTPResponse.Header
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // reads only
			want, pages := walkN(t, c.fetch, 100, c.sparse)
			if pages != 1 && !c.sparse {
				t.Errorf("limit=100: %d pages for %d items", pages, len(want))
			}
			if len(want) < c.min {
				t.Fatalf("limit=100: %d items, want at least %d", len(want), c.min)
			}
			if got, _ := walkN(t, c.fetch, 2, c.sparse); !slices.Equal(got, want) {
				t.Errorf("items over all pages of 2:\ngot  %v\nwant %v (pages of 100)", got, want)
			}
		})
	}

	// The Link URL itself fetches the next page, keeping limit, status and
	// expand.
	t.Run("follow Link", func(t *testing.T) {
		var want []string
		for _, c := range cases {
			if c.name == "listTickets/status=pending&expand=requester" {
				want, _, _ = c.fetch(t, 100, nil)
			}
		}
		if len(want) < 3 {
			t.Fatalf("pending tickets: %v", want)
		}
		got := followLinks(t, w.Member.HTTP, ts.URL, fmt.Sprintf("/v1/orgs/%s/tickets?status=pending&expand=requester,assignee&limit=2", org),
			func(t *testing.T, page int, items []map[string]any) {
				for _, tk := range items {
					if tk["requester"] == nil || tk["assignee"] == nil || tk["status"] != "pending" {
						t.Errorf("page %d: ticket %v: status %v, requester %v, assignee %v: the Link lost a parameter",
							page, tk["id"], tk["status"], tk["requester"] != nil, tk["assignee"] != nil)
					}
				}
			})
		if !slices.Equal(got, want) {
			t.Errorf("tickets: got %v, want %v", got, want)
		}
	})
}

// flipLast changes the last character of s (a cursor's signature).
func flipLast(s string) string {
	b := []byte(s)
	if b[len(b)-1] == 'A' {
		b[len(b)-1] = 'B'
	} else {
		b[len(b)-1] = 'A'
	}
	return string(b)
}

// tamperPayload rewrites the cursor's payload (keeping its signature).
func tamperPayload(t *testing.T, cursor string) string {
	t.Helper()
	payload, sig, ok := strings.Cut(cursor, ".")
	if !ok {
		return "x" + cursor
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return "x" + cursor
	}
	b = bytes.Replace(b, []byte(`"e":`), []byte(`"e":9`), 1) // a later expiry
	return base64.RawURLEncoding.EncodeToString(b) + "." + sig
}

// cursorCase is a listing request with a cursor it must refuse: 400
// invalid_cursor.
type cursorCase struct {
	name string
	do   func(t *testing.T) (statusCoder, error)
}

// wantInvalidCursors runs each case as a spec subtest.
func wantInvalidCursors(t *testing.T, cases []cursorCase) {
	t.Helper()
	for _, c := range cases {
		spec(t, c.name, func(t *testing.T) {
			r, err := c.do(t)
			wantProblem(t, r, err, http.StatusBadRequest, "invalid_cursor")
		})
	}
}
