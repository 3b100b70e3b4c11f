package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// limiterConcs are the closed-loop concurrencies of the limiter phase.
var limiterConcs = []int{1, 8}

// limiterRow is one run of the limiter phase: GET /v1/orgs/{orgId} (the
// caller's and the org's limits) for d.
type limiterRow struct {
	name             string
	conc             int // 0: paced, open loop
	res              result
	admitted         int
	refused          int
	writes, counted  float64 // lease writes and requests the limiters admitted (org and caller), from /metrics
	rate, burst, blk float64 // the org limit when it binds (0: far above the load)
}

// limiter runs local buckets against global ones below the limit, at each
// concurrency, the two API processes taking turns in slices; then the
// global buckets over the limit; then a tenant at a steady 100/s, paced,
// with the default limits.
func (rn *runner) limiter(ctx context.Context, bin, dir, ddbURL string, org *Org, d time.Duration) ([]limiterRow, error) {
	high := []string{"RATE_LIMIT_RPS=1000000", "RATE_LIMIT_BURST=1000000", "RATE_LIMIT_CALLER_RPS=1000000", "RATE_LIMIT_CALLER_BURST=1000000"}
	token := rn.env.token(org.Callers[0])
	var out []limiterRow
	var apis []*proc
	defer func() {
		for _, a := range apis {
			a.stop()
		}
	}()
	for _, local := range []string{"RATE_LIMIT_LOCAL=true", "RATE_LIMIT_LOCAL=false"} {
		api, err := startAPI(ctx, bin, dir, ddbURL, append(slices.Clone(high), local)...)
		if err != nil {
			return nil, err
		}
		apis = append(apis, api)
	}
	var seq atomic.Int64
	for _, c := range limiterConcs {
		rows := []limiterRow{{name: "local buckets, below the limit", conc: c}, {name: "global buckets, below the limit", conc: c}}
		for s := range rn.slices + 1 { // the first slice warms up (connections, DynamoDB Local's JIT): not counted
			for i, api := range apis {
				row, err := rn.limiterRun(ctx, api, org, token, c, d/time.Duration(rn.slices), &seq)
				if err != nil {
					return nil, err
				}
				if s > 0 {
					rows[i].add(row)
				}
			}
		}
		for _, row := range rows {
			rn.logf("limiter: %s, c=%d: %.0f req/s, p50 %v p99 %v, %.0f lease writes", row.name, c, row.res.rps(), row.res.pct(50), row.res.pct(99), row.writes)
		}
		out = append(out, rows...)
	}

	// Over the limit; then a tenant at its steady 100/s, with the
	// defaults (100/s, burst 200, block 100).
	for _, row := range []limiterRow{
		{name: "global buckets, over the limit (100/s, burst 200)", conc: limiterConcs[len(limiterConcs)-1], rate: 100, burst: 200, blk: 100},
		{name: "global buckets, a steady 100/s (the limit; 100/s, burst 200)", rate: 100, burst: 200, blk: 100},
	} {
		api, err := startAPI(ctx, bin, dir, ddbURL, "RATE_LIMIT_LOCAL=false", "RATE_LIMIT_RPS=100", "RATE_LIMIT_BURST=200",
			"RATE_LIMIT_CALLER_RPS=100", "RATE_LIMIT_CALLER_BURST=200")
		if err != nil {
			return nil, err
		}
		apis = append(apis, api)
		got, err := rn.limiterRun(ctx, api, org, token, row.conc, d, &seq)
		if err != nil {
			return nil, err
		}
		row.add(got)
		rn.logf("limiter: %s: %.0f req/s, %d admitted, %d refused, %.0f lease writes", row.name, row.res.rps(), row.admitted, row.refused, row.writes)
		out = append(out, row)
	}
	return out, nil
}

// limiterRun loads api's GET /v1/orgs/{orgId} for d: closed loop with conc
// workers, or, at conc 0, one request every 10 ms (100/s).
func (rn *runner) limiterRun(ctx context.Context, api *proc, org *Org, token string, conc int, d time.Duration, seq *atomic.Int64) (limiterRow, error) {
	url := api.url + "/v1/orgs/" + org.ID
	before, err := scrape(rn.hc, api.mURL)
	if err != nil {
		return limiterRow{}, err
	}
	var ok, refused atomic.Int64
	get := func(ctx context.Context, _ int, _ int64) error { return rn.get(ctx, url, token, &ok, &refused) }
	var res result
	if conc > 0 {
		res = closedLoop(ctx, conc, d, seq, get)
	} else {
		res = paced(ctx, 10*time.Millisecond, d, get)
	}
	after, err := scrape(rn.hc, api.mURL)
	if err != nil {
		return limiterRow{}, err
	}
	return limiterRow{res: res, admitted: int(ok.Load()), refused: int(refused.Load()),
		writes:  after.sumPrefix("tenantd_ratelimit_lease_writes_total") - before.sumPrefix("tenantd_ratelimit_lease_writes_total"),
		counted: after.sumPrefix("tenantd_ratelimit_admitted_total") - before.sumPrefix("tenantd_ratelimit_admitted_total")}, nil
}

// paced sends call every gap for d, one at a time (each is far shorter
// than gap).
func paced(ctx context.Context, gap, d time.Duration, call func(context.Context, int, int64) error) result {
	res, start := result{}, time.Now()
	for i := 0; ctx.Err() == nil; i++ {
		next := start.Add(time.Duration(i) * gap)
		if !next.Before(start.Add(d)) {
			break
		}
		time.Sleep(time.Until(next))
		t0 := time.Now()
		if err := call(ctx, 0, int64(i)); err != nil {
			res.errs++
			res.firstErr = err.Error()
			continue
		}
		res.n++
		res.lat = append(res.lat, time.Since(t0))
	}
	res.elapsed = time.Since(start)
	slices.Sort(res.lat)
	return res
}

// add pools o's counts into r.
func (r *limiterRow) add(o limiterRow) {
	r.res.conc, r.res.elapsed, r.res.n, r.res.errs = r.conc, r.res.elapsed+o.res.elapsed, r.res.n+o.res.n, r.res.errs+o.res.errs
	r.res.lat = append(r.res.lat, o.res.lat...)
	slices.Sort(r.res.lat)
	r.admitted, r.refused, r.writes, r.counted = r.admitted+o.admitted, r.refused+o.refused, r.writes+o.writes, r.counted+o.counted
}

// get sends GET url, counting 200s in ok and 429s in refused (when set);
// any other answer is an error.
func (rn *runner) get(ctx context.Context, url, token string, ok, refused *atomic.Int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := rn.hc.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK && ok != nil:
		ok.Add(1)
	case resp.StatusCode == http.StatusTooManyRequests && refused != nil:
		refused.Add(1)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("GET %s: %d", url, resp.StatusCode)
	}
	return nil
}

// limiterHeading starts the limiter phase's section of the report.
const limiterHeading = "## Rate limiter: global buckets in the table against local ones"

// limiterTable reports the limiter phase.
func (r *report) limiterTable(p func(string, ...any)) {
	if len(r.limiter) == 0 {
		return
	}
	p("%s", limiterHeading)
	p("")
	p("`GET /v1/orgs/{orgId}` (the caller's limit, the authorization read, the org's limit), each configuration on an API process of its")
	p("own (one replica). Below the limit, the local and the global process take turns, %d slices of %v each per concurrency after a", r.o.slices, r.o.dur/time.Duration(r.o.slices))
	p("warm-up one, so the shared machine's drift falls on both. Lease writes are the limiter's `UpdateItem`s")
	p("(`tenantd_ratelimit_lease_writes_total`, both policies); \"per request\" divides them by the requests admitted (each spends")
	p("the caller's key and the org's).")
	p("")
	p("| configuration | c | req/s | p50 ms | p99 ms | admitted | refused (429) | lease writes | writes per admitted request |")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, row := range r.limiter {
		per, c := "—", "paced"
		if row.admitted > 0 {
			per = fmt.Sprintf("%.3f", row.writes/float64(row.admitted))
		}
		if row.conc > 0 {
			c = fmt.Sprint(row.conc)
		}
		p("| %s | %s | %.0f | %.2f | %.2f | %d | %d | %.0f | %s |", row.name, c, row.res.rps(), ms(row.res.pct(50)), ms(row.res.pct(99)),
			row.admitted, row.refused, row.writes, per)
	}
	p("")
	for i := 0; i+1 < len(r.limiter); i += 2 {
		l, g := r.limiter[i], r.limiter[i+1]
		if !strings.HasPrefix(l.name, "local") || !strings.HasPrefix(g.name, "global") || l.conc != g.conc {
			break
		}
		p("- c=%d: global/local throughput **%.3f** (goal ≥ 0.95), p50 %+.2f ms, p99 **%+.2f ms** (goal within 1 ms).", l.conc,
			g.res.rps()/l.res.rps(), ms(g.res.pct(50))-ms(l.res.pct(50)), ms(g.res.pct(99))-ms(l.res.pct(99)))
	}
	for _, row := range r.limiter {
		switch {
		case row.rate > 0 && row.conc > 0:
			bound := row.burst + row.rate*row.res.elapsed.Seconds() + row.blk
			p("- Over the limit: %d admitted in %.2f s against the bound burst + rate·T + one block (%.0f) = %.0f.", row.admitted, row.res.elapsed.Seconds(), row.blk, bound)
		case row.rate > 0:
			p("- At a steady 100/s: **%.3f** lease writes per request (goal ≤ 0.05), %d refused.", row.writes/max(1, float64(row.admitted)), row.refused)
		}
	}
	p("")
}

// spliceLimiter writes the limiter section of r into the report at path,
// in place of the one there (or before the go test -bench section): what
// `go run ./tools/bench -only limiter` measures alone.
func spliceLimiter(path string, r *report) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var b strings.Builder
	r.limiterTable(func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) })
	section := b.String() + fmt.Sprintf("(This section: `go run ./tools/bench -only limiter` on %s, commit `%s`, apart from the rest of the file.)\n\n",
		r.started.UTC().Format("2006-01-02 15:04 MST"), r.m.commit)
	doc := string(old)
	start, end, ok := sectionOf(doc, limiterHeading)
	if !ok {
		if start, _, ok = sectionOf(doc, "## Service overhead without the database"); !ok {
			start = len(doc)
		}
		end = start
	}
	return os.WriteFile(path, []byte(doc[:start]+section+doc[end:]), 0o644)
}

// isolationHeading starts the section of TestNoisyNeighbours' figures,
// measured by go test, not by the bench: a full run keeps it as it is.
const isolationHeading = "## Performance isolation: a victim beside hostile tenants"

// keptSection is the section under heading of the report at path, as it
// is ("" when there is none).
func keptSection(path, heading string) string {
	old, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	start, end, ok := sectionOf(string(old), heading)
	if !ok {
		return ""
	}
	return string(old[start:end])
}
