package main

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/prometheus/client_golang/prometheus"
)

// delayProxy sits between a second API process and DynamoDB Local and holds
// every DynamoDB call for delay before forwarding it: a call as far away as
// an in-region one (DynamoDB Local over loopback answers in well under a
// millisecond, which hides how many calls a request makes one after another).
// While recording, it keeps each call's span, so a c=1 step can count the
// round trips on a request's critical path.
type delayProxy struct {
	delay     time.Duration
	srv       *http.Server
	url       string
	calls     atomic.Int64
	recording atomic.Bool
	mu        sync.Mutex
	spans     []span
}

type span struct{ start, end time.Time }

// maxSpans bounds what one recorded step keeps.
const maxSpans = 200000

func startDelayProxy(target string, delay time.Duration) (*delayProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}
	p := &delayProxy{delay: delay, url: "http://" + ln.Addr().String()}
	p.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		p.calls.Add(1)
		time.Sleep(p.delay)
		rp.ServeHTTP(w, r)
		if p.recording.Load() {
			p.mu.Lock()
			if len(p.spans) < maxSpans {
				p.spans = append(p.spans, span{start, time.Now()})
			}
			p.mu.Unlock()
		}
	})}
	go p.srv.Serve(ln) //nolint:errcheck // ends with Close
	return p, nil
}

func (p *delayProxy) close() { p.srv.Close() }

// record starts keeping spans (dropping earlier ones); stop returns them.
func (p *delayProxy) record() {
	p.mu.Lock()
	p.spans = p.spans[:0]
	p.mu.Unlock()
	p.recording.Store(true)
}

func (p *delayProxy) stop() []span {
	p.recording.Store(false)
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.spans)
}

// roundTrips counts, for each request of a one-worker step, the DynamoDB
// calls that started inside it grouped into round trips: a call that starts
// after every earlier call of its group has returned begins the next round
// trip; calls in flight together are one. It returns the mean over the
// requests that made at least one call, and the largest count seen.
func roundTrips(reqs, calls []span) (mean float64, most int) {
	slices.SortFunc(calls, func(a, b span) int { return a.start.Compare(b.start) })
	n, sum, j := 0, 0, 0
	for _, r := range reqs {
		for j < len(calls) && calls[j].start.Before(r.start) {
			j++
		}
		trips, groupEnd := 0, time.Time{}
		for ; j < len(calls) && !calls[j].start.After(r.end); j++ {
			if trips == 0 || !calls[j].start.Before(groupEnd) {
				trips++
				groupEnd = calls[j].end
			} else if calls[j].end.After(groupEnd) {
				groupEnd = calls[j].end
			}
		}
		if trips > 0 {
			n++
			sum += trips
			most = max(most, trips)
		}
	}
	if n == 0 {
		return 0, 0
	}
	return float64(sum) / float64(n), most
}

// latencyRow is one endpoint behind the delay proxy.
type latencyRow struct {
	name      string
	calls     float64 // DynamoDB calls per request (the API's accounting)
	trips     float64 // round trips on the critical path, mean at c=1
	mostTrips int
	p50, p99  map[int]time.Duration // by concurrency
	// rawP50 is the p50 at c=1 of the endpoint's raw calls (endpoint.raw:
	// the same calls, in the same order) sent
	// through the same proxy: DynamoDB's own time for them, delay included.
	rawP50        time.Duration
	errs          int
	firstErr      string
	rps           map[int]float64
	concurrencies []int
}

// latency runs each endpoint against the API that reaches DynamoDB Local
// through the delay proxy: at c=1 with the spans recorded (round trips),
// then at each other concurrency.
func (rn *runner) latency(ctx context.Context, eps []*endpoint, concs []int, d time.Duration, p *delayProxy, srv *server, raw *dynamodb.Client) []latencyRow {
	var out []latencyRow
	callers := rn.env.ds.Big.Callers
	var seq atomic.Int64
	seq.Store(1 << 40) // far from the other phases' sequence numbers (creates use it in IDs)
	for _, ep := range eps {
		row := latencyRow{name: ep.name, p50: map[int]time.Duration{}, p99: map[int]time.Duration{}, rps: map[int]float64{}, concurrencies: concs}
		for _, conc := range concs {
			rs := make([]*rand.Rand, conc)
			for w := range rs {
				rs[w] = workerRand(w, uint64(seq.Load())+47)
			}
			// A short warm-up fills the connection pools.
			closedLoop(ctx, conc, d/10, &seq, func(ctx context.Context, w int, i int64) error {
				path, body := ep.http(rs[w], w, i)
				return httpCall(ctx, rn.hc, ep.method, srv.url+path, rn.env.token(callers[w%len(callers)]), body, ep.want)
			})
			var reqs []span
			var mu sync.Mutex
			if conc == 1 {
				p.record()
			}
			before := srv.snapshot()
			res := closedLoop(ctx, conc, d, &seq, func(ctx context.Context, w int, i int64) error {
				path, body := ep.http(rs[w], w, i)
				t0 := time.Now()
				err := httpCall(ctx, rn.hc, ep.method, srv.url+path, rn.env.token(callers[w%len(callers)]), body, ep.want)
				if conc == 1 {
					mu.Lock()
					reqs = append(reqs, span{t0, time.Now()})
					mu.Unlock()
				}
				if err == nil && ep.creates {
					rn.env.created.Add(1)
				}
				return err
			})
			after := srv.snapshot()
			if conc == 1 {
				row.trips, row.mostTrips = roundTrips(reqs, p.stop())
				row.calls = costOf(before, after, res.n).calls
				// Its own sequence: the HTTP steps' requests must stay
				// consecutive (a PUT's role alternates with its sequence
				// number: a gap would make it a no-op).
				rr := workerRand(0, uint64(seq.Load())+53)
				var rawSeq atomic.Int64
				rawSeq.Store(2 << 40)
				row.rawP50 = closedLoop(ctx, 1, d/2, &rawSeq, func(ctx context.Context, _ int, i int64) error {
					err := ep.raw(ctx, raw, rr, 0, i)
					if err == nil && ep.creates {
						rn.env.created.Add(1)
					}
					return err
				}).pct(50)
			}
			row.p50[conc], row.p99[conc], row.rps[conc] = res.pct(50), res.pct(99), res.rps()
			row.errs += res.errs
			if row.firstErr == "" {
				row.firstErr = res.firstErr
			}
		}
		rn.logf("latency: %-36s calls %.2f, round trips %.2f (max %d), p50 c=1 %.2f ms (raw calls %.2f ms)", ep.name, row.calls, row.trips, row.mostTrips, ms(row.p50[concs[0]]), ms(row.rawP50))
		out = append(out, row)
	}
	return out
}

// delayed starts the delay proxy and a second API process that reaches
// DynamoDB Local through it, runs the latency phase and the dashboard
// against that API, and stops both.
func (rn *runner) delayed(ctx context.Context, rep *report, eps []*endpoint, ds *Dataset, bin, dir, ddbURL string, o options) error {
	p, err := startDelayProxy(ddbURL, o.delay)
	if err != nil {
		return err
	}
	defer p.close()
	api, err := startAPI(ctx, bin, dir, p.url)
	if err != nil {
		return err
	}
	defer api.stop()
	srv := &server{http: rn.hc, url: api.url, metrics: api.mURL, apiPID: api.pid(), ddbPID: rn.srv.ddbPID, ddbPort: rn.srv.ddbPort}
	raw, err := rawClient(ctx, p.url, prometheus.NewRegistry(), nil)
	if err != nil {
		return err
	}
	rep.delay = o.delay
	rep.latency = rn.latency(ctx, eps, o.latencyConc, o.dur, p, srv, raw)
	main := rn.srv
	rn.srv = srv
	defer func() { rn.srv = main }()
	rep.dashboardDelayed, err = rn.dashboard(ctx, ds.Small[0], 3*o.scaleDur, false)
	return err
}
