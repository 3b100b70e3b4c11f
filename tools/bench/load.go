package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// result is one closed-loop step.
type result struct {
	conc     int
	elapsed  time.Duration
	n, errs  int
	firstErr string
	lat      []time.Duration // sorted
}

func (r result) rps() float64 { return float64(r.n) / r.elapsed.Seconds() }

func (r result) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(r.lat)))) - 1
	return r.lat[max(0, min(i, len(r.lat)-1))]
}

// closedLoop runs conc workers for d: each sends its next call when the
// previous one has returned. call gets the worker index and a sequence
// number unique across all workers of all steps (seq).
func closedLoop(ctx context.Context, conc int, d time.Duration, seq *atomic.Int64, call func(ctx context.Context, w int, i int64) error) result {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		res   = result{conc: conc}
		start = time.Now()
		end   = start.Add(d)
	)
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 4096)
			errs, first := 0, ""
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(end) {
					break
				}
				err := call(ctx, w, seq.Add(1))
				lat = append(lat, time.Since(t0))
				if err != nil {
					errs++
					if first == "" {
						first = err.Error()
					}
				}
			}
			mu.Lock()
			res.lat = append(res.lat, lat...)
			res.errs += errs
			if res.firstErr == "" {
				res.firstErr = first
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.n = len(res.lat)
	slices.Sort(res.lat)
	return res
}

// httpCall sends one request and checks the status.
func httpCall(ctx context.Context, c *http.Client, method, url, token string, body []byte, want int) error {
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(string(body))
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

// metrics is one scrape of the API's /metrics (on its metrics listener):
// "name{labels}" -> value.
type metrics map[string]float64

func scrape(c *http.Client, base string) (metrics, error) {
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	m := metrics{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

// sumPrefix adds every series of name (any labels), except route="/metrics".
func (m metrics) sumPrefix(name string) float64 {
	var t float64
	for k, v := range m {
		if (k == name || strings.HasPrefix(k, name+"{")) && !strings.Contains(k, `route="/metrics"`) {
			t += v
		}
	}
	return t
}

// routeOf is the route label with the largest count increase.
func routeOf(before, after metrics) string {
	best, bestN := "", 0.0
	for k, v := range after {
		if !strings.HasPrefix(k, "tenantd_request_dynamodb_calls_count{") {
			continue
		}
		if d := v - before[k]; d > bestN {
			best, bestN = k, d
		}
	}
	if i := strings.Index(best, `route="`); i >= 0 {
		best = best[i+7:]
		best = best[:strings.IndexByte(best, '"')]
	}
	return best
}

// server is what the bench reads around a step: the API's metrics and the
// CPU time of the API, DynamoDB Local and the bench itself.
type server struct {
	http      *http.Client
	url       string
	metrics   string // base URL of the API's metrics listener
	apiPID    int
	ddbPID    int
	ddbPort   int
	m         metrics
	api, ddb  float64
	self      float64
	tw        int
	busy      float64
	at        time.Time
	scrapeErr error
}

func (s *server) snapshot() server {
	cp := *s
	cp.m, cp.scrapeErr = scrape(s.http, s.metrics)
	cp.api, cp.ddb, cp.self = cpuSeconds(s.apiPID), cpuSeconds(s.ddbPID), selfCPU()
	cp.tw = timeWaits(s.ddbPort)
	cp.busy, cp.at = busyCPU(), time.Now()
	return cp
}

// cost is the per-request server-side cost of a step.
type cost struct {
	route                    string
	calls, capacity, retries float64
	apiCPU, ddbCPU, benchCPU float64 // ms per request
	mallocs, allocKB         float64
	requestsSeen             float64
	closedConns              float64 // DynamoDB connections closed per request (TIME_WAIT growth)
	foreign                  float64 // CPU used by other processes, % of the machine
}

// foreignCPU is the share of the machine's CPU that processes other than
// the API, DynamoDB Local and the bench used during the step (noise).
func foreignCPU(before, after server) float64 {
	wall := after.at.Sub(before.at).Seconds() * float64(runtime.NumCPU())
	if wall <= 0 {
		return 0
	}
	ours := (after.api - before.api) + (after.ddb - before.ddb) + (after.self - before.self)
	return max(0, (after.busy-before.busy)-ours) / wall * 100
}

// scrapeCost is what one /metrics scrape allocates in the API (calibrated
// at start, subtracted from each step's allocation diff).
var scrapeCost struct{ mallocs, bytes float64 }

// calibrateScrape measures scrapeCost: the median of back-to-back scrapes.
func calibrateScrape(s *server) {
	var ms, bs []float64
	for range 7 {
		a, b := s.snapshot(), s.snapshot()
		ms = append(ms, b.m.sumPrefix("go_memstats_mallocs_total")-a.m.sumPrefix("go_memstats_mallocs_total"))
		bs = append(bs, b.m.sumPrefix("go_memstats_alloc_bytes_total")-a.m.sumPrefix("go_memstats_alloc_bytes_total"))
	}
	slices.Sort(ms)
	slices.Sort(bs)
	scrapeCost.mallocs, scrapeCost.bytes = ms[len(ms)/2], bs[len(bs)/2]
}

func costOf(before, after server, n int) cost {
	if n == 0 {
		return cost{}
	}
	d := func(name string) float64 { return after.m.sumPrefix(name) - before.m.sumPrefix(name) }
	fn := float64(n)
	c := cost{
		route:       routeOf(before.m, after.m),
		apiCPU:      (after.api - before.api) * 1000 / fn,
		ddbCPU:      (after.ddb - before.ddb) * 1000 / fn,
		benchCPU:    (after.self - before.self) * 1000 / fn,
		mallocs:     max(0, d("go_memstats_mallocs_total")-scrapeCost.mallocs) / fn,
		allocKB:     max(0, d("go_memstats_alloc_bytes_total")-scrapeCost.bytes) / fn / 1024,
		closedConns: float64(max(0, after.tw-before.tw)) / fn,
		foreign:     foreignCPU(before, after),
	}
	if seen := d("tenantd_request_dynamodb_calls_count"); seen > 0 {
		c.requestsSeen = seen
		c.calls = d("tenantd_request_dynamodb_calls_sum") / seen
		c.capacity = d("tenantd_request_dynamodb_capacity_units_sum") / seen
		c.retries = d("tenantd_dynamodb_retries_total") / seen
	}
	return c
}

// rawCost is the client-side cost of a raw step (no API involved).
func rawCost(before, after server, n int) cost {
	if n == 0 {
		return cost{}
	}
	fn := float64(n)
	return cost{ddbCPU: (after.ddb - before.ddb) * 1000 / fn, benchCPU: (after.self - before.self) * 1000 / fn,
		closedConns: float64(max(0, after.tw-before.tw)) / fn, foreign: foreignCPU(before, after)}
}
