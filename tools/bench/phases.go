package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/ticket"
)

// step is one endpoint at one concurrency: the HTTP load and the raw
// DynamoDB operations it needs, run back to back.
type step struct {
	ep       *endpoint
	conc     int
	http     result
	hc       cost
	raw      result
	rc       cost
	rawOps   float64 // DynamoDB calls per raw sequence
	rawCap   float64 // capacity units per raw sequence
	rawRetry float64
}

// bound is the endpoint's request rate that the raw operations allow.
func (s step) bound() float64 { return s.raw.rps() }

func (s step) ratio() float64 {
	if s.bound() == 0 {
		return 0
	}
	return s.http.rps() / s.bound()
}

// regSum sums a metric family of the bench's own registry (histogram counts
// or counter values).
func regSum(reg *prometheus.Registry, name string) float64 {
	fams, err := reg.Gather()
	if err != nil {
		return 0
	}
	var t float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			switch {
			case m.Histogram != nil:
				t += float64(m.Histogram.GetSampleCount())
			case m.Counter != nil:
				t += m.Counter.GetValue()
			}
		}
	}
	return t
}

type runner struct {
	slices int
	env    *env
	srv    *server
	hc     *http.Client
	reg    *prometheus.Registry
	logf   func(string, ...any)
}

func workerRand(w int, salt uint64) *rand.Rand { return rand.New(rand.NewPCG(uint64(w)+1, salt)) }

// httpLoad runs ep over HTTP with conc workers for d.
func (rn *runner) httpLoad(ctx context.Context, ep *endpoint, conc int, d time.Duration, seq *atomic.Int64, callers []string) (result, cost) {
	rs := make([]*rand.Rand, conc)
	for w := range rs {
		rs[w] = workerRand(w, uint64(seq.Load())+11)
	}
	before := rn.srv.snapshot()
	res := closedLoop(ctx, conc, d, seq, func(ctx context.Context, w int, i int64) error {
		path, body := ep.http(rs[w], w, i)
		err := httpCall(ctx, rn.hc, ep.method, rn.srv.url+path, rn.env.token(callers[w%len(callers)]), body, ep.want)
		if err == nil && ep.creates {
			rn.env.created.Add(1)
		}
		return err
	})
	after := rn.srv.snapshot()
	return res, costOf(before, after, res.n)
}

// rawLoad runs ep's raw DynamoDB operations with conc workers for d.
func (rn *runner) rawLoad(ctx context.Context, ep *endpoint, conc int, d time.Duration, seq *atomic.Int64) (result, cost, float64, float64, float64) {
	rs := make([]*rand.Rand, conc)
	for w := range rs {
		rs[w] = workerRand(w, uint64(seq.Load())+29)
	}
	calls0 := regSum(rn.reg, "tenantd_dynamodb_call_duration_seconds")
	cap0 := regSum(rn.reg, "tenantd_dynamodb_consumed_capacity_units_total")
	retry0 := regSum(rn.reg, "tenantd_dynamodb_retries_total")
	before := rn.srv.snapshot()
	res := closedLoop(ctx, conc, d, seq, func(ctx context.Context, w int, i int64) error {
		err := ep.raw(ctx, rn.env.client, rs[w], w, i)
		if err == nil && ep.creates {
			rn.env.created.Add(1)
		}
		return err
	})
	after := rn.srv.snapshot()
	n := float64(max(res.n, 1))
	return res, rawCost(before, after, res.n),
		(regSum(rn.reg, "tenantd_dynamodb_call_duration_seconds") - calls0) / n,
		(regSum(rn.reg, "tenantd_dynamodb_consumed_capacity_units_total") - cap0) / n,
		(regSum(rn.reg, "tenantd_dynamodb_retries_total") - retry0) / n
}

// endpoints runs the load table: per endpoint a warm-up, then for each
// concurrency the HTTP step and the raw step.
func (rn *runner) endpoints(ctx context.Context, eps []*endpoint, concs []int, d, rawD time.Duration) []step {
	var out []step
	callers := rn.env.ds.Big.Callers
	for _, ep := range eps {
		var hseq, rseq atomic.Int64
		warm := min(750*time.Millisecond, d/2)
		rn.httpLoad(ctx, ep, 8, warm, &hseq, callers)
		rn.rawLoad(ctx, ep, 8, warm/2, &rseq)
		for _, c := range concs {
			// HTTP and raw alternate in slices, so that both see the same
			// noise from whatever else runs on the machine.
			s := step{ep: ep, conc: c}
			var hs, rs []result
			var hcs, rcs []cost
			var ops, caps, retries []float64
			for range rn.slices {
				h, hc := rn.httpLoad(ctx, ep, c, d/time.Duration(rn.slices), &hseq, callers)
				r, rc, o, ca, re := rn.rawLoad(ctx, ep, c, rawD/time.Duration(rn.slices), &rseq)
				hs, hcs, rs, rcs = append(hs, h), append(hcs, hc), append(rs, r), append(rcs, rc)
				ops, caps, retries = append(ops, o), append(caps, ca), append(retries, re)
			}
			s.http, s.hc = mergeResults(hs), mergeCosts(hcs, hs)
			s.raw, s.rc = mergeResults(rs), mergeCosts(rcs, rs)
			s.rawOps, s.rawCap, s.rawRetry = weighted(ops, rs), weighted(caps, rs), weighted(retries, rs)
			rn.logf("%-36s c=%-3d %7.0f rps p50 %6.2fms p99 %6.2fms err %d | calls/req %.2f | raw %7.0f seq/s (%.1f ops) err %d | ratio %.2f",
				ep.name, c, s.http.rps(), ms(s.http.pct(50)), ms(s.http.pct(99)), s.http.errs, s.hc.calls,
				s.raw.rps(), s.rawOps, s.raw.errs, s.ratio())
			if s.http.errs > 0 {
				rn.logf("  first HTTP error: %s", s.http.firstErr)
			}
			if s.raw.errs > 0 {
				rn.logf("  first raw error: %s", s.raw.firstErr)
			}
			out = append(out, s)
		}
	}
	return out
}

func mergeResults(rs []result) result {
	var m result
	for _, r := range rs {
		m.conc = r.conc
		m.elapsed += r.elapsed
		m.n += r.n
		m.errs += r.errs
		if m.firstErr == "" {
			m.firstErr = r.firstErr
		}
		m.lat = append(m.lat, r.lat...)
	}
	slices.Sort(m.lat)
	return m
}

// weighted averages per-request values by the requests of each slice.
func weighted(vs []float64, rs []result) float64 {
	var t, n float64
	for i, v := range vs {
		t += v * float64(rs[i].n)
		n += float64(rs[i].n)
	}
	if n == 0 {
		return 0
	}
	return t / n
}

func mergeCosts(cs []cost, rs []result) cost {
	pick := func(f func(cost) float64) float64 {
		vs := make([]float64, len(cs))
		for i, c := range cs {
			vs[i] = f(c)
		}
		return weighted(vs, rs)
	}
	m := cost{route: cs[0].route}
	m.calls = pick(func(c cost) float64 { return c.calls })
	m.capacity = pick(func(c cost) float64 { return c.capacity })
	m.retries = pick(func(c cost) float64 { return c.retries })
	m.apiCPU = pick(func(c cost) float64 { return c.apiCPU })
	m.ddbCPU = pick(func(c cost) float64 { return c.ddbCPU })
	m.benchCPU = pick(func(c cost) float64 { return c.benchCPU })
	m.mallocs = pick(func(c cost) float64 { return c.mallocs })
	m.allocKB = pick(func(c cost) float64 { return c.allocKB })
	m.closedConns = pick(func(c cost) float64 { return c.closedConns })
	var fw, w float64
	for i, c := range cs {
		fw += c.foreign * rs[i].elapsed.Seconds()
		w += rs[i].elapsed.Seconds()
	}
	if w > 0 {
		m.foreign = fw / w
	}
	return m
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// point is one scale-curve measurement.
type point struct {
	pattern string
	size    int
	http    result
	raw     result
	calls   float64
}

// scaleMembers grows the scale org's team from 10 to each size and measures
// AP3 (GET member) and AP1 (first page) at concurrency 1.
func (rn *runner) scaleMembers(ctx context.Context, sd *seeder, sizes []int, d time.Duration) ([]point, error) {
	sc := rn.env.ds.Scale
	org, team := sc.ID, sc.Teams[0]
	owner := sc.Users[0]
	var out []point
	have := len(sc.Members[team])
	for _, n := range sizes {
		if n > have {
			began := time.Now()
			bk := newBulk(rn.env.client, tableName, 8)
			sd.b = bk
			var ms []string
			for i := have; i < n; i++ {
				ms = append(ms, fmt.Sprintf("m-%07d", i))
			}
			if err := sd.addMembers(sc, team, ms, true); err != nil {
				return nil, err
			}
			if err := bk.close(ctx); err != nil {
				return nil, err
			}
			rn.logf("scale: team grown to %d members (+%d items in %v)", n, bk.written.Load(), time.Since(began).Round(time.Millisecond))
			have = n
		}
		members := sc.Members[team][:n]
		gets := pool(1024, func(int) any {
			u := members[rand.IntN(len(members))]
			return one(capture(func(ctx context.Context) error { _, err := rn.env.teams().GetTeamMember(ctx, org, team, u); return err }))
		})
		ap1 := listing(capture(func(ctx context.Context) error {
			_, err := rn.env.teams().ListTeamMembers(ctx, org, team, page.Request{Limit: page.DefaultLimit})
			return err
		}))
		ap3 := &endpoint{name: "AP3", method: http.MethodGet, want: 200,
			http: func(r *rand.Rand, w int, i int64) (string, []byte) {
				return fmt.Sprintf("/v1/orgs/%s/teams/%s/members/%s", org, team, pick(r, members)), nil
			},
			raw: func(ctx context.Context, c *dynamodb.Client, r *rand.Rand, w int, i int64) error {
				return send(ctx, c, pick(r, gets))
			}}
		list := &endpoint{name: "AP1", method: http.MethodGet, want: 200,
			http: func(r *rand.Rand, w int, i int64) (string, []byte) {
				return fmt.Sprintf("/v1/orgs/%s/teams/%s/members", org, team), nil
			},
			raw: func(ctx context.Context, c *dynamodb.Client, r *rand.Rand, w int, i int64) error {
				return send(ctx, c, ap1)
			}}
		for _, ep := range []*endpoint{ap3, list} {
			p, err := rn.point(ctx, ep, "", n, d, []string{owner})
			if err != nil {
				return nil, err
			}
			p.pattern = map[string]string{"AP3": "AP3 GET team member (GetItem, consistent)", "AP1": "AP1 team members, 1st page (Query)"}[ep.name]
			out = append(out, p)
		}
	}
	return out, nil
}

func (rn *runner) point(ctx context.Context, ep *endpoint, pattern string, n int, d time.Duration, callers []string) (point, error) {
	var hs, rs atomic.Int64
	rn.httpLoad(ctx, ep, 1, d/4, &hs, callers) // warm
	h, hc := rn.httpLoad(ctx, ep, 1, d, &hs, callers)
	r, _, _, _, _ := rn.rawLoad(ctx, ep, 1, d, &rs)
	if h.errs > 0 || r.errs > 0 {
		return point{}, fmt.Errorf("scale %s at %d: %d HTTP errors (%s), %d raw errors (%s)", ep.name, n, h.errs, h.firstErr, r.errs, r.firstErr)
	}
	rn.logf("scale: %-4s %7d  HTTP p50 %.2fms p99 %.2fms | raw p50 %.2fms p99 %.2fms", ep.name, n, ms(h.pct(50)), ms(h.pct(99)), ms(r.pct(50)), ms(r.pct(99)))
	return point{pattern: pattern, size: n, http: h, raw: r, calls: hc.calls}, nil
}

// queue measures the org ticket queue (status=open) of an org of size
// tickets, and, raw only, variants of its Query that tell DynamoDB Local's
// cost model apart from the design's.
func (rn *runner) queue(ctx context.Context, o *Org, size int, d time.Duration) (point, []queueDiag, error) {
	q := one(capture(func(ctx context.Context) error {
		_, err := rn.env.tickets().ListTickets(ctx, o.ID, ticket.Filter{Status: ticket.StatusOpen}, page.Request{Limit: page.DefaultLimit})
		return err
	})).(*dynamodb.QueryInput)
	ep := &endpoint{name: "queue", method: http.MethodGet, want: 200,
		http: func(r *rand.Rand, w int, i int64) (string, []byte) {
			return fmt.Sprintf("/v1/orgs/%s/tickets?status=open", o.ID), nil
		},
		raw: func(ctx context.Context, c *dynamodb.Client, r *rand.Rand, w int, i int64) error {
			return send(ctx, c, q)
		}}
	pt, err := rn.point(ctx, ep, "org ticket queue status=open, 1st page (Query GSI3)", size, d, o.Callers)
	if err != nil {
		return pt, nil, err
	}
	all := one(capture(func(ctx context.Context) error {
		_, err := rn.env.tickets().ListTickets(ctx, o.ID, ticket.Filter{}, page.Request{Limit: page.DefaultLimit})
		return err
	})).(*dynamodb.QueryInput)
	variants := []struct {
		name string
		in   *dynamodb.QueryInput
	}{
		{"GSI3, status=open, descending, begins_with (as the store asks)", q},
		{"GSI3, status=open, ascending, begins_with", withOrder(q, true)},
		{"GSI3, status=open, descending, BETWEEN instead of begins_with", withBetween(q)},
		{"GSI1, all tickets, descending, begins_with TICKET# (no status)", all},
	}
	var diags []queueDiag
	for _, v := range variants {
		in := v.in
		var seq atomic.Int64
		res := closedLoop(ctx, 1, d/2, &seq, func(ctx context.Context, w int, i int64) error { return send(ctx, rn.env.client, in) })
		rn.logf("queue diag %7d %-62s p50 %.2fms p99 %.2fms err %d", size, v.name, ms(res.pct(50)), ms(res.pct(99)), res.errs)
		diags = append(diags, queueDiag{size: size, name: v.name, res: res})
	}
	return pt, diags, nil
}

// queueDiag is one raw Query variant of the ticket queue.
type queueDiag struct {
	size int
	name string
	res  result
}

func withOrder(q *dynamodb.QueryInput, forward bool) *dynamodb.QueryInput {
	cp := *q
	cp.ScanIndexForward = aws.Bool(forward)
	return &cp
}

// withBetween rewrites the sort-key condition begins_with(p) as BETWEEN p
// AND p+"~" (ULIDs and statuses sort below "~").
func withBetween(q *dynamodb.QueryInput) *dynamodb.QueryInput {
	cp := *q
	cp.KeyConditions = map[string]types.Condition{}
	for k, c := range q.KeyConditions {
		if c.ComparisonOperator == types.ComparisonOperatorBeginsWith {
			p := c.AttributeValueList[0].(*types.AttributeValueMemberS).Value
			c = types.Condition{ComparisonOperator: types.ComparisonOperatorBetween,
				AttributeValueList: []types.AttributeValue{&types.AttributeValueMemberS{Value: p}, &types.AttributeValueMemberS{Value: p + "~"}}}
		}
		cp.KeyConditions[k] = c
	}
	return &cp
}

// addMembers adds users to team. synthetic members have no OrgUser items:
// of AddTeamMember's updates only the team's memberCount is applied (their
// OrgUser team sets would fail on the missing items).
func (s *seeder) addMembers(o *Org, team string, users []string, synthetic bool) error {
	var keep func(map[string]types.AttributeValue) bool
	if synthetic {
		teamKey := o.teamKeys[team]
		keep = func(k map[string]types.AttributeValue) bool { return keyString(k) == teamKey }
	}
	err := parallel(2, len(users), func(i int) error {
		_, err := s.b.doPuts(func(ctx context.Context) error {
			return s.teams().AddTeamMember(ctx, s.member(o, team, users[i]), s.ev(o.ID))
		}, keep)
		return err
	})
	if err != nil {
		return fmt.Errorf("add members: %w", err)
	}
	o.Members[team] = append(o.Members[team], users...)
	return nil
}

// poolExperiment runs GET ticket's raw call (the authorization read with
// the ticket) at c=32 through the SDK's
// default HTTP client (10 idle connections per host) and through one with
// a pool of 64, counting the connections each closes.
func (rn *runner) poolExperiment(ctx context.Context, url string, d time.Duration) ([]poolRow, error) {
	big := rn.env.ds.Big
	gets := pool(1024, func(int) any {
		id := big.Tickets[rand.IntN(len(big.Tickets))]
		return one(capture(func(ctx context.Context) error { _, err := rn.env.tickets().GetTicket(ctx, big.ID, id); return err }))
	})
	idles := []int{awshttp.DefaultHTTPTransportMaxIdleConnsPerHost, 64}
	calls := make([]func(ctx context.Context, w int, i int64) error, len(idles))
	for k, idle := range idles {
		var hc aws.HTTPClient
		if idle != awshttp.DefaultHTTPTransportMaxIdleConnsPerHost {
			hc = awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
				t.MaxIdleConnsPerHost, t.MaxIdleConns = idle, 256
			})
		}
		c, err := rawClient(ctx, url, prometheus.NewRegistry(), hc)
		if err != nil {
			return nil, err
		}
		calls[k] = func(ctx context.Context, w int, i int64) error {
			r := rand.New(rand.NewPCG(uint64(i), 3))
			return send(ctx, c, batchOf(rn.env.authz(big.ID, big.Callers[w%len(big.Callers)]), pick(r, gets)))
		}
	}
	res := make([][]result, len(idles))
	closed := make([]int, len(idles))
	var seq atomic.Int64
	for k := range idles {
		closedLoop(ctx, 32, d/8, &seq, calls[k]) // warm
	}
	for range rn.slices {
		for k := range idles {
			tw := timeWaits(rn.srv.ddbPort)
			res[k] = append(res[k], closedLoop(ctx, 32, d/time.Duration(rn.slices), &seq, calls[k]))
			closed[k] += max(0, timeWaits(rn.srv.ddbPort)-tw)
		}
	}
	var rows []poolRow
	for k, idle := range idles {
		m := mergeResults(res[k])
		cl := float64(closed[k]) / float64(max(m.n, 1))
		rn.logf("pool: MaxIdleConnsPerHost %d: %.0f seq/s p50 %.2fms p99 %.2fms, %.3f connections closed per seq, errors %d",
			idle, m.rps(), ms(m.pct(50)), ms(m.pct(99)), cl, m.errs)
		rows = append(rows, poolRow{idle: idle, conc: 32, res: m, closedConn: cl})
	}
	return rows, nil
}

// whatIfRow is one raw variant of an endpoint's operations.
type whatIfRow struct {
	endpoint, variant string
	conc              int
	res               result
	ops, capacity     float64
	baseline          bool
}

// whatIf measures, for each endpoint with variants, the current raw
// sequence and each variant, alternating in slices, at each concurrency.
func (rn *runner) whatIf(ctx context.Context, eps []*endpoint, concs []int, d time.Duration) []whatIfRow {
	var out []whatIfRow
	for _, ep := range eps {
		if len(ep.whatIf) == 0 {
			continue
		}
		vs := append([]variant{{"as today: sequential", ep.raw}}, ep.whatIf...)
		for _, c := range concs {
			res := make([][]result, len(vs))
			ops := make([][]float64, len(vs))
			caps := make([][]float64, len(vs))
			seqs := make([]atomic.Int64, len(vs))
			for k := range vs {
				seqs[k].Store(int64(1_000_000 * (k + 1)))
				vep := &endpoint{name: ep.name, raw: vs[k].raw}
				rn.rawLoad(ctx, vep, c, d/8, &seqs[k]) // warm
			}
			for range rn.slices {
				for k, v := range vs {
					vep := &endpoint{name: ep.name, raw: v.raw}
					r, _, o, ca, _ := rn.rawLoad(ctx, vep, c, d/time.Duration(rn.slices), &seqs[k])
					res[k], ops[k], caps[k] = append(res[k], r), append(ops[k], o), append(caps[k], ca)
				}
			}
			for k, v := range vs {
				m := mergeResults(res[k])
				row := whatIfRow{endpoint: ep.name, variant: v.name, conc: c, res: m, ops: weighted(ops[k], res[k]),
					capacity: weighted(caps[k], res[k]), baseline: k == 0}
				rn.logf("what-if %-28s %-58s c=%-2d %6.0f seq/s p50 %6.2fms p99 %6.2fms ops %.1f err %d",
					ep.name, v.name, c, m.rps(), ms(m.pct(50)), ms(m.pct(99)), row.ops, m.errs)
				out = append(out, row)
			}
		}
	}
	return out
}
