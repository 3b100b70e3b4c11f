package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
)

// idGen hands out the project's ULIDs (ids.Generator) in increasing order
// for the times the seeder gives.
type idGen struct {
	mu sync.Mutex
	t  time.Time
	g  *ids.Generator
}

func newIDGen(start time.Time) *idGen { return &idGen{t: start, g: ids.NewGenerator(nil)} }

// at returns an ID for time t (not before the previous one).
func (g *idGen) at(t time.Time) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t.Before(g.t) {
		t = g.t
	}
	g.t = t
	return g.g.NewAt(t)
}

// Org is one seeded tenant, as the load phases need it.
type Org struct {
	ID      string
	Name    string
	Callers []string // org admins whose tokens drive the load
	Users   []string // every user ID (callers included)
	Teams   []string // team IDs; Teams[0] is the big team when there is one
	Members map[string][]string
	Tickets []string
	// MultiTeam are users that are in several teams (AP2 subjects).
	MultiTeam []string
	teamKeys  map[string]string // team ID -> keyString of its item
}

// Dataset is everything seeded.
type Dataset struct {
	Big   *Org   // 10k users, a 5k-member team, 50k tickets
	Small []*Org // small tenants; Small[0] has 1k tickets
	Scale *Org   // one caller and one team that the scale phase grows
}

var statusWeights = []struct {
	s ticket.Status
	w int
}{{ticket.StatusNew, 15}, {ticket.StatusOpen, 30}, {ticket.StatusPending, 15}, {ticket.StatusSolved, 25}, {ticket.StatusClosed, 15}}

func pickStatus(r *rand.Rand) ticket.Status {
	n := r.IntN(100)
	for _, sw := range statusWeights {
		if n < sw.w {
			return sw.s
		}
		n -= sw.w
	}
	return ticket.StatusOpen
}

var (
	priorities = []ticket.Priority{ticket.PriorityLow, ticket.PriorityNormal, ticket.PriorityNormal, ticket.PriorityNormal, ticket.PriorityHigh, ticket.PriorityUrgent}
	tagPool    = []string{"billing", "login", "bug", "feature", "mobile", "api", "export", "sso", "performance", "ui"}
	words      = strings.Fields("the customer reports that exporting a large report from the dashboard times out after about thirty seconds and the browser shows a blank page instead of the download link please check the worker logs")
)

func sentence(r *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = words[r.IntN(len(words))]
	}
	return strings.Join(w, " ")
}

// seeder writes the data set through the store's exported write methods
// (captured and bulk-written, see bulk.go).
type seeder struct {
	db   *store.DB // capturing
	b    *bulk
	ids  *idGen
	now  time.Time
	rand *rand.Rand
}

func (s *seeder) orgs() *store.Orgs       { return &store.Orgs{DB: s.db} }
func (s *seeder) teams() *store.Teams     { return &store.Teams{DB: s.db} }
func (s *seeder) tickets() *store.Tickets { return &store.Tickets{DB: s.db} }

// ev is the audit event a store write takes. The bulk writer drops the
// events' items: the synthetic data set is not audited (that would add an
// item per write to seed, for no read the benchmark makes).
func (s *seeder) ev(orgID string) audit.Event {
	return audit.NewEvent(context.Background(), s.ids.g, audit.Outsider(orgID, "bench-seeder"), "bench.seed", "bench", orgID, s.now, nil)
}

func (s *seeder) user(o *Org, id string, role authz.Role) tenant.User {
	return tenant.User{OrgID: o.ID, UserID: id, Email: id + "@" + strings.ToLower(strings.ReplaceAll(o.Name, " ", "-")) + ".example",
		Name: "User " + id, Role: role, JoinedAt: s.now, UpdatedAt: s.now, Version: 1}
}

// org creates a tenant with an owner (callers[0]), more admins (the other
// callers) and plain members.
func (s *seeder) org(name, prefix string, callers, users int) (*Org, error) {
	o := &Org{Name: name, ID: s.ids.at(s.now.Add(-365 * 24 * time.Hour)), Members: map[string][]string{}}
	for i := range users {
		o.Users = append(o.Users, fmt.Sprintf("%s-u%06d", prefix, i))
	}
	o.Callers = o.Users[:callers]
	err := s.b.do(func(ctx context.Context) error {
		return s.orgs().CreateOrg(ctx, tenant.Org{ID: o.ID, Name: name, Version: 1, CreatedAt: s.now, UpdatedAt: s.now},
			s.user(o, o.Users[0], authz.Owner), s.ev(o.ID))
	})
	if err != nil {
		return nil, fmt.Errorf("seed org %s: %w", name, err)
	}
	err = parallel(2, users-1, func(i int) error {
		role := authz.Member
		if i+1 < callers {
			role = authz.Admin
		}
		return s.b.do(func(ctx context.Context) error {
			return s.orgs().AddOrgUser(ctx, s.user(o, o.Users[i+1], role), s.ev(o.ID))
		})
	})
	if err != nil {
		return nil, fmt.Errorf("seed users of %s: %w", name, err)
	}
	return o, nil
}

func (s *seeder) member(o *Org, teamID, uid string) membership.Membership {
	return membership.Membership{OrgID: o.ID, TeamID: teamID, UserID: uid, Role: authz.Member, JoinedAt: s.now, UpdatedAt: s.now, Version: 1}
}

// team creates a team owned by owner with members (owner excluded).
func (s *seeder) team(o *Org, name, owner string, members []string) (string, error) {
	id := s.ids.at(s.now.Add(-300 * 24 * time.Hour))
	t := membership.Team{OrgID: o.ID, ID: id, Name: name, Description: "The " + name + " team", MemberCount: 1, Version: 1, CreatedAt: s.now, UpdatedAt: s.now}
	ownerEdge := s.member(o, id, owner)
	ownerEdge.Role = authz.Owner
	puts, err := s.b.doPuts(func(ctx context.Context) error { return s.teams().CreateTeam(ctx, t, ownerEdge, s.ev(o.ID)) }, nil)
	if err != nil {
		return "", fmt.Errorf("seed team %s: %w", name, err)
	}
	for _, it := range puts {
		if ty, ok := it["type"].(*types.AttributeValueMemberS); ok && ty.Value == "Team" {
			if o.teamKeys == nil {
				o.teamKeys = map[string]string{}
			}
			o.teamKeys[id] = keyString(map[string]types.AttributeValue{"pk": it["pk"], "sk": it["sk"]})
		}
	}
	o.Teams = append(o.Teams, id)
	o.Members[id] = []string{owner}
	if err := s.addMembers(o, id, members, false); err != nil {
		return "", fmt.Errorf("seed members of %s: %w", name, err)
	}
	return id, nil
}

// tickets creates n tickets over the last 90 days (IDs in time order),
// with statuses, priorities, requesters, assignees, teams and tags spread.
func (s *seeder) ticketsFor(o *Org, n int, agents int) error {
	start := s.now.Add(-90 * 24 * time.Hour)
	step := 90 * 24 * time.Hour / time.Duration(n+1)
	ts := make([]ticket.Ticket, n)
	for i := range ts {
		r := s.rand
		at := start.Add(time.Duration(i) * step)
		t := ticket.Ticket{OrgID: o.ID, ID: s.ids.at(at), Title: "Ticket " + sentence(r, 4), Description: sentence(r, 30),
			Status: pickStatus(r), Priority: priorities[r.IntN(len(priorities))], RequesterID: o.Users[r.IntN(len(o.Users))],
			Version: 1, CreatedAt: at, UpdatedAt: at, Tags: []string{}}
		if r.IntN(10) < 6 {
			t.AssigneeID = o.Users[r.IntN(min(agents, len(o.Users)))]
		}
		if len(o.Teams) > 0 && r.IntN(10) < 7 {
			t.TeamID = o.Teams[r.IntN(len(o.Teams))]
		}
		for range r.IntN(4) {
			tag := tagPool[r.IntN(len(tagPool))]
			if !contains(t.Tags, tag) {
				t.Tags = append(t.Tags, tag)
			}
		}
		ts[i] = t
	}
	err := parallel(2, n, func(i int) error {
		return s.b.do(func(ctx context.Context) error { return s.tickets().CreateTicket(ctx, ts[i], s.ev(o.ID)) })
	})
	if err != nil {
		return fmt.Errorf("seed tickets of %s: %w", o.Name, err)
	}
	for _, t := range ts {
		o.Tickets = append(o.Tickets, t.ID)
	}
	return nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// parallel runs f(0..n-1) on w goroutines and returns the first error.
func parallel(w, n int, f func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int, 256)
	)
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// Sizes of the data set (flags can shrink them for a quick run).
type Sizes struct {
	BigUsers, BigTeamMembers, BigTickets int
	ScaleMembers                         []int
}

// seedMain writes the main data set: the big org, small orgs and the scale
// org's teams.
func seedMain(ctx context.Context, s *seeder, sz Sizes, logf func(string, ...any)) (*Dataset, error) {
	d := &Dataset{}
	began := time.Now()
	big, err := s.org("Big Corp", "big", 16, sz.BigUsers)
	if err != nil {
		return nil, err
	}
	// Team 0: the big team (members: users 0..N-1). Teams 1..19: users
	// 0..999 are in five of them each, so a user's teams (AP2) has a page.
	if _, err := s.team(big, "Support Tier 1", big.Users[0], big.Users[1:sz.BigTeamMembers]); err != nil {
		return nil, err
	}
	small := make([][]string, 19)
	multi := min(1000, len(big.Users))
	for u := 0; u < multi; u++ {
		for k := range 5 {
			tm := (u + 4*k) % 19
			small[tm] = append(small[tm], big.Users[u])
		}
	}
	for i := range 19 {
		owner := big.Users[i%16]
		var members []string
		for _, u := range small[i] {
			if u != owner {
				members = append(members, u)
			}
		}
		if _, err := s.team(big, fmt.Sprintf("Team %02d", i+1), owner, members); err != nil {
			return nil, err
		}
	}
	big.MultiTeam = big.Users[16:multi]
	logf("seed: big org users and teams written by %v", time.Since(began).Round(time.Millisecond))
	if err := s.ticketsFor(big, sz.BigTickets, 200); err != nil {
		return nil, err
	}
	d.Big = big
	logf("seed: big org tickets queued by %v", time.Since(began).Round(time.Millisecond))

	for i := range 4 {
		o, err := s.org(fmt.Sprintf("Small %d", i+1), fmt.Sprintf("s%d", i+1), 2, 50)
		if err != nil {
			return nil, err
		}
		if _, err := s.team(o, "Helpdesk", o.Users[0], o.Users[1:20]); err != nil {
			return nil, err
		}
		n := 100
		if i == 0 {
			n = 1000
		}
		if err := s.ticketsFor(o, n, 10); err != nil {
			return nil, err
		}
		d.Small = append(d.Small, o)
	}

	// The scale org: its owner is the only OrgUser. Its one team starts
	// with 10 members and is grown by the scale phase; the member edges name
	// synthetic user IDs (their OrgUser items are not needed by AP1/AP3 and
	// would double the writes).
	sc, err := s.org("Scale", "sc", 1, 1)
	if err != nil {
		return nil, err
	}
	first := make([]string, 9)
	for i := range first {
		first[i] = fmt.Sprintf("m-%07d", i+1)
	}
	team, err := s.team(sc, "Members at scale", sc.Users[0], nil)
	if err != nil {
		return nil, err
	}
	if err := s.addMembers(sc, team, first, true); err != nil {
		return nil, err
	}
	d.Scale = sc
	return d, nil
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed*31+1)) }
