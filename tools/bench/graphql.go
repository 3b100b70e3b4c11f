package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// dashboardQuery is the dashboard's queue: 50 tickets with requester, assignee
// and team, and each ticket's first 3 comments with their authors.
const dashboardQuery = `query Dashboard($org: ID!) { org(id: $org) { tickets(first: 50) { nodes {
  id title status priority requester { userId name } assignee { userId name } team { id name }
  comments(first: 3) { nodes { id body author { userId name } } } } } } }`

// dashboardRow compares the dashboard as one GraphQL request with the REST
// requests a client needs for the same data.
type dashboardRow struct {
	api                string
	httpRequests       float64 // per dashboard
	calls              float64 // DynamoDB calls per dashboard
	roundTrips         int     // sequential HTTP rounds on the client's critical path
	res                result
	apiCPU, mallocsPer float64
}

// dashboard measures the dashboard of o at concurrency 1 for d each way.
// With addComments, it first gives 20 of the newest 50 tickets two comments
// each (by another member than the requester, mostly), so the authors' level
// has work.
func (rn *runner) dashboard(ctx context.Context, o *Org, d time.Duration, addComments bool) ([]dashboardRow, error) {
	caller := o.Callers[0]
	tok := rn.env.token(caller)
	base := rn.srv.url + "/v1/orgs/" + o.ID
	page, err := rn.restPage(ctx, tok, base+"/tickets?limit=50&expand=requester,assignee")
	if err != nil {
		return nil, err
	}
	for i, t := range page {
		if !addComments || i%5 >= 2 { // 2 of every 5
			continue
		}
		for k := range 2 {
			author := o.Users[(i*7+k*13+1)%len(o.Users)]
			body := fmt.Sprintf(`{"body":"bench comment %d on %s"}`, k, t.ID)
			if err := httpCall(ctx, rn.hc, http.MethodPost, base+"/tickets/"+t.ID+"/comments", rn.env.token(author), []byte(body), http.StatusCreated); err != nil {
				return nil, fmt.Errorf("dashboard: comment: %w", err)
			}
		}
	}
	gqlBody, _ := json.Marshal(map[string]any{"query": dashboardQuery, "variables": map[string]any{"org": o.ID}})
	graphQL := func(ctx context.Context) (int, error) {
		return 1, httpCall(ctx, rn.hc, http.MethodPost, rn.srv.url+"/v1/graphql", tok, gqlBody, http.StatusOK)
	}
	// REST: the page with its users expanded, the teams (for names), then
	// each ticket's comments, 8 at a time, then the comment authors not
	// already known, 8 at a time.
	rest := func(ctx context.Context) (int, error) {
		tickets, err := rn.restPage(ctx, tok, base+"/tickets?limit=50&expand=requester,assignee")
		if err != nil {
			return 1, err
		}
		if err := httpCall(ctx, rn.hc, http.MethodGet, base+"/teams?limit=100", tok, nil, http.StatusOK); err != nil {
			return 2, err
		}
		known := map[string]bool{}
		for _, t := range tickets {
			known[t.RequesterID], known[t.AssigneeID] = true, true
		}
		var mu sync.Mutex
		var authors []string
		n := 2 + len(tickets)
		err = fanOut(len(tickets), 8, func(i int) error {
			cs, err := rn.restComments(ctx, tok, base+"/tickets/"+tickets[i].ID+"/comments?limit=3")
			mu.Lock()
			defer mu.Unlock()
			for _, c := range cs {
				if !known[c] {
					known[c] = true
					authors = append(authors, c)
				}
			}
			return err
		})
		if err != nil {
			return n, err
		}
		n += len(authors)
		return n, fanOut(len(authors), 8, func(i int) error {
			return httpCall(ctx, rn.hc, http.MethodGet, base+"/users/"+authors[i], tok, nil, http.StatusOK)
		})
	}
	var rows []dashboardRow
	for _, c := range []struct {
		api    string
		rounds int
		call   func(context.Context) (int, error)
	}{{"GraphQL: one POST /v1/graphql", 1, graphQL}, {"REST: list + teams + 50 comment listings + authors (8 in flight)", 4, rest}} {
		var seq atomic.Int64
		var requests atomic.Int64
		_ = closedLoop(ctx, 1, d/4, &seq, func(ctx context.Context, _ int, _ int64) error { _, err := c.call(ctx); return err }) // warm-up
		before := rn.srv.snapshot()
		res := closedLoop(ctx, 1, d, &seq, func(ctx context.Context, _ int, _ int64) error {
			n, err := c.call(ctx)
			requests.Add(int64(n))
			return err
		})
		after := rn.srv.snapshot()
		if res.errs > 0 {
			return nil, fmt.Errorf("dashboard %s: %d errors (%s)", c.api, res.errs, res.firstErr)
		}
		k := costOf(before, after, res.n)
		perDash := float64(requests.Load()) / float64(max(res.n, 1))
		row := dashboardRow{api: c.api, httpRequests: perDash, calls: k.calls * k.requestsSeen / float64(max(res.n, 1)),
			roundTrips: c.rounds, res: res, apiCPU: k.apiCPU, mallocsPer: k.mallocs}
		rn.logf("dashboard: %-62s %5.1f requests %5.1f DynamoDB calls p50 %.2fms p99 %.2fms", c.api, row.httpRequests, row.calls, ms(res.pct(50)), ms(res.pct(99)))
		rows = append(rows, row)
	}
	return rows, nil
}

type restTicket struct {
	ID          string `json:"id"`
	RequesterID string `json:"requesterId"`
	AssigneeID  string `json:"assigneeId"`
}

func (rn *runner) restPage(ctx context.Context, tok, url string) ([]restTicket, error) {
	var out struct{ Items []restTicket }
	return out.Items, rn.getJSON(ctx, tok, url, &out)
}

func (rn *runner) restComments(ctx context.Context, tok, url string) ([]string, error) {
	var out struct {
		Items []struct {
			AuthorID string `json:"authorId"`
		}
	}
	err := rn.getJSON(ctx, tok, url, &out)
	authors := make([]string, len(out.Items))
	for i, c := range out.Items {
		authors[i] = c.AuthorID
	}
	return authors, err
}

func (rn *runner) getJSON(ctx context.Context, tok, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := rn.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// fanOut runs f(0..n-1), at most width at once; the first error wins.
func fanOut(n, width int, f func(i int) error) error {
	sem := make(chan struct{}, width)
	errc := make(chan error, n)
	for i := range n {
		sem <- struct{}{}
		go func() { defer func() { <-sem }(); errc <- f(i) }()
	}
	var first error
	for range n {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	return first
}
