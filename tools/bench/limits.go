package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// limiterConc is the closed-loop concurrency of the limiter phase.
const limiterConc = 8

// limiterRow is one run of the limiter phase: GET /v1/orgs/{orgId} (the
// caller's and the org's limits) from limiterConc workers for d.
type limiterRow struct {
	name, env        string
	res              result
	admitted         int
	refused          int
	writes, counted  float64 // lease writes and requests the limiters admitted (org and caller), from /metrics
	rate, burst, blk float64 // the org limit when it binds (0: far above the load)
}

// limiter runs the three configurations, each on a fresh API process.
func (rn *runner) limiter(ctx context.Context, bin, dir, ddbURL string, org *Org, d time.Duration) ([]limiterRow, error) {
	high := []string{"RATE_LIMIT_RPS=1000000", "RATE_LIMIT_BURST=1000000", "RATE_LIMIT_CALLER_RPS=1000000", "RATE_LIMIT_CALLER_BURST=1000000"}
	runs := []limiterRow{
		{name: "local buckets, below the limit", env: "RATE_LIMIT_LOCAL=true"},
		{name: "global buckets, below the limit", env: "RATE_LIMIT_LOCAL=false"},
		{name: "global buckets, over the limit (100/s, burst 200)", env: "RATE_LIMIT_LOCAL=false", rate: 100, burst: 200, blk: 10},
	}
	token := rn.env.token(org.Callers[0])
	var out []limiterRow
	for _, row := range runs {
		extra := append(append([]string{}, high...), row.env)
		if row.rate > 0 {
			extra = append(extra, fmt.Sprintf("RATE_LIMIT_RPS=%g", row.rate), fmt.Sprintf("RATE_LIMIT_BURST=%g", row.burst), "RATE_LIMIT_CALLER_RPS=0")
		}
		api, err := startAPI(ctx, bin, dir, ddbURL, extra...)
		if err != nil {
			return nil, err
		}
		url := api.url + "/v1/orgs/" + org.ID
		// Warm up: connections, the JIT of DynamoDB Local; not counted.
		var seq atomic.Int64
		closedLoop(ctx, limiterConc, d/3, &seq, func(ctx context.Context, _ int, _ int64) error { return rn.get(ctx, url, token, nil, nil) })
		if row.rate > 0 { // the warm-up spent the burst: let it refill
			time.Sleep(time.Duration(row.burst / row.rate * float64(time.Second)))
		}
		before, err := scrape(rn.hc, api.mURL)
		if err != nil {
			api.stop()
			return nil, err
		}
		var ok, refused atomic.Int64
		row.res = closedLoop(ctx, limiterConc, d, &seq, func(ctx context.Context, _ int, _ int64) error { return rn.get(ctx, url, token, &ok, &refused) })
		after, err := scrape(rn.hc, api.mURL)
		api.stop()
		if err != nil {
			return nil, err
		}
		row.admitted, row.refused = int(ok.Load()), int(refused.Load())
		row.writes = after.sumPrefix("tenantd_ratelimit_lease_writes_total") - before.sumPrefix("tenantd_ratelimit_lease_writes_total")
		row.counted = after.sumPrefix("tenantd_ratelimit_admitted_total") - before.sumPrefix("tenantd_ratelimit_admitted_total")
		rn.logf("limiter: %s: %.0f req/s, p50 %v p99 %v, %d admitted, %d refused, %.0f lease writes", row.name, row.res.rps(),
			row.res.pct(50), row.res.pct(99), row.admitted, row.refused, row.writes)
		out = append(out, row)
	}
	return out, nil
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

// limiterTable reports the limiter phase.
func (r *report) limiterTable(p func(string, ...any)) {
	if len(r.limiter) == 0 {
		return
	}
	p("## Rate limiter: global buckets in the table against local ones")
	p("")
	p("`GET /v1/orgs/{orgId}` (the caller's limit, the authorization read, the org's limit) from %d closed-loop workers for %v,", limiterConc, r.o.dur)
	p("each configuration on a fresh API process (one replica) after a warm-up. Lease writes are the limiter's `UpdateItem`s")
	p("(`tenantd_ratelimit_lease_writes_total`, both policies); \"per admitted\" divides them by the decisions the limiters admitted")
	p("(`tenantd_ratelimit_admitted_total`: two per request below the limit, the caller's and the org's; one over it, where the caller")
	p("limit is off). The added latency is the global row's minus the local row's, on this shared machine.")
	p("")
	p("| configuration | req/s | p50 ms | p99 ms | admitted | refused (429) | lease writes | writes per admitted decision |")
	p("|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, row := range r.limiter {
		per := "—"
		if row.counted > 0 {
			per = fmt.Sprintf("%.3f", row.writes/row.counted)
		}
		p("| %s | %.0f | %.2f | %.2f | %d | %d | %.0f | %s |", row.name, row.res.rps(), ms(row.res.pct(50)), ms(row.res.pct(99)),
			row.admitted, row.refused, row.writes, per)
	}
	p("")
	if len(r.limiter) >= 2 {
		l, g := r.limiter[0].res, r.limiter[1].res
		p("Added latency of the global limiter below the limit: p50 %+.2f ms, p99 %+.2f ms.", ms(g.pct(50))-ms(l.pct(50)), ms(g.pct(99))-ms(l.pct(99)))
	}
	for _, row := range r.limiter {
		if row.rate > 0 {
			bound := row.burst + row.rate*row.res.elapsed.Seconds() + row.blk
			p("Over the limit: %d admitted in %.2f s against the bound burst + rate·T + one block = %.0f (the burst had refilled before the run).",
				row.admitted, row.res.elapsed.Seconds(), bound)
		}
	}
	p("")
}
