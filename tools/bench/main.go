// Command bench is `make bench`: it starts DynamoDB Local (in memory) and the
// API binary, seeds a realistic multi-tenant data set, then measures each key
// endpoint under closed-loop load next to the raw DynamoDB operations that
// endpoint needs (same SDK client configuration, same run), the scale curves
// of AP3, AP1 and the ticket queue, and writes BENCHMARKS.md.
//
//	go run ./tools/bench [-quick] [-out BENCHMARKS.md]
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/obs"
	"github.com/tenantd/tenantd/internal/store"
)

const (
	tableName    = "tenantd"
	region       = "us-east-1"
	jwtSecret    = "tenantd-bench-hs256-secret-0123456789abcdef"
	cursorSecret = "tenantd-bench-cursor-secret-0123456789abcdef"
)

type options struct {
	out          string
	dur, rawDur  time.Duration
	scaleDur     time.Duration
	concurrency  []int
	whatIfConc   []int
	latencyConc  []int
	delay        time.Duration
	slices       int
	sizes        Sizes
	topUpTo      int
	makeStart    time.Time
	goBenchFile  string
	commandLabel string
	// export runs the export phase alone (export.go), of an org of
	// exportTickets tickets and exportComments comments.
	export                        bool
	exportTickets, exportComments int
	only                          string // "limiter": that phase alone, its section spliced into out
}

func main() {
	var (
		o     options
		quick bool
		conc  string
	)
	flag.StringVar(&o.out, "out", "BENCHMARKS.md", "Markdown report to write (\"\" = print only)")
	flag.DurationVar(&o.dur, "d", 3*time.Second, "duration of each endpoint load step")
	flag.DurationVar(&o.rawDur, "raw-d", 1500*time.Millisecond, "duration of each raw DynamoDB step")
	flag.DurationVar(&o.scaleDur, "scale-d", time.Second, "duration of each scale-curve step")
	flag.StringVar(&conc, "c", "1,8,32", "closed-loop concurrencies")
	flag.DurationVar(&o.delay, "delay", 2*time.Millisecond, "delay the proxy adds to each DynamoDB call in the latency phase (0 = no latency phase)")
	flag.BoolVar(&quick, "quick", false, "small data set and short steps (a smoke run, not for BENCHMARKS.md)")
	flag.StringVar(&o.goBenchFile, "gobench", "", "file with `go test -bench` output to include in the report")
	flag.StringVar(&o.commandLabel, "cmd", "make bench", "the command named in the report")
	flag.BoolVar(&o.export, "export", false, "run the export phase alone and write its section of the report (make bench keeps it)")
	flag.IntVar(&o.exportTickets, "export-tickets", 100_000, "tickets of the exported org (-export)")
	flag.IntVar(&o.exportComments, "export-comments", 1_000_000, "comments of the exported org's tickets (-export)")
	flag.StringVar(&o.only, "only", "", "\"limiter\": run the rate limiter's phase alone (small data set) and write its section into -out, in place of the one there")
	started := flag.Int64("started", 0, "Unix time `make bench` started (for the total in the report)")
	flag.Parse()
	if *started > 0 {
		o.makeStart = time.Unix(*started, 0)
	}
	for _, s := range strings.Split(conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "bench: bad -c:", s)
			os.Exit(2)
		}
		o.concurrency = append(o.concurrency, n)
	}
	o.sizes = Sizes{BigUsers: 10000, BigTeamMembers: 5000, BigTickets: 50000, ScaleMembers: []int{10, 1000, 10000, 100000}}
	o.topUpTo = 100000
	o.whatIfConc = []int{1, 8}
	o.latencyConc = []int{1, 8}
	o.slices = 3
	if quick || o.only != "" {
		o.sizes = Sizes{BigUsers: 1200, BigTeamMembers: 500, BigTickets: 2000, ScaleMembers: []int{10, 1000}}
		o.topUpTo = 4000
		o.dur, o.rawDur, o.scaleDur = time.Second, 500*time.Millisecond, 500*time.Millisecond
		o.slices = 2
	}
	if o.only != "" { // one phase, at the length of make bench's, in more slices
		o.dur, o.slices = 4*time.Second, 4
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

// rawClient is the SDK client of the raw measurements and the seeding, built
// as cmd/api builds its own: LoadDefaultConfig with the region and DynamoDB
// Local's dummy credentials, store.NewClient with the endpoint and the obs
// middleware (which also asks for ConsumedCapacity). httpClient, when set,
// replaces the SDK's default HTTP client.
func rawClient(ctx context.Context, endpoint string, reg *prometheus.Registry, httpClient aws.HTTPClient) (*dynamodb.Client, error) {
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(region),
		awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", ""))}
	if httpClient != nil {
		opts = append(opts, awsconfig.WithHTTPClient(httpClient))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, err
	}
	m := obs.NewMetrics(reg)
	return store.NewClient(cfg, store.Options{Endpoint: endpoint, APIOptions: []func(*middleware.Stack) error{m.DynamoDB}}), nil
}

func run(ctx context.Context, o options) error {
	began := time.Now()
	rep := &report{o: o, started: began, totalSince: o.makeStart}
	phase := func(name string, t0 time.Time) { rep.phases = append(rep.phases, phaseTime{name, time.Since(t0)}) }
	root, err := repoRoot()
	if err != nil {
		return err
	}
	rep.m = describeMachine(root)
	dir, err := os.MkdirTemp("", "tenantd-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	logf("building the API and starting DynamoDB Local")
	type built struct {
		bin string
		err error
	}
	bc := make(chan built, 1)
	go func() { b, err := buildAPI(ctx, root, dir); bc <- built{b, err} }()
	// internal/dynamotest's launcher, with a heap for the bench data set.
	ddb, err := dynamotest.Start(dynamotest.Options{JVMArgs: []string{"-Xms512m", "-Xmx2g"}})
	if err != nil {
		return err
	}
	defer ddb.Stop()
	b := <-bc
	if b.err != nil {
		return b.err
	}
	api, err := startAPI(ctx, b.bin, dir, ddb.Endpoint())
	if err != nil {
		return err
	}
	defer api.stop()
	phase("build the API, start DynamoDB Local, migrate, start the API", began)
	logf("DynamoDB Local at %s (pid %d), API at %s (pid %d)", ddb.Endpoint(), ddb.PID(), api.url, api.pid())

	reg := prometheus.NewRegistry()
	client, err := rawClient(ctx, ddb.Endpoint(), reg, nil)
	if err != nil {
		return err
	}
	ddbPort, _ := strconv.Atoi(ddb.Endpoint()[strings.LastIndexByte(ddb.Endpoint(), ':')+1:])

	// Seed.
	t0 := time.Now()
	bk := newBulk(client, tableName, 8)
	sd := &seeder{db: captureDB(client, tableName), b: bk, ids: newIDGen(time.Now().Add(-400 * 24 * time.Hour)),
		now: time.Now().UTC().Truncate(time.Second), rand: newRand(7)}
	if o.export {
		srv := &server{http: &http.Client{}, url: api.url, metrics: api.mURL, apiPID: api.pid(), ddbPID: ddb.PID(), ddbPort: ddbPort}
		rn := &runner{env: &env{tokens: map[string]string{}}, srv: srv, logf: logf}
		return runExport(ctx, o, rn, sd, bk, ddb.PID(), rep, root)
	}
	stopProg := make(chan struct{})
	go progress(stopProg, bk, ddb.PID())
	ds, err := seedMain(ctx, sd, o.sizes, logf)
	if err == nil {
		err = bk.close(ctx)
	}
	close(stopProg)
	if err != nil {
		return err
	}
	rep.seed = seedStats{items: bk.written.Load(), calls: bk.batches.Load(), retries: bk.retries.Load(), took: time.Since(t0)}
	rep.seed.desc = describeDataset(ds, o)
	phase("seed the data set", t0)
	logf("seed: %d items in %d BatchWriteItem calls in %v (%.0f items/s)", rep.seed.items, rep.seed.calls,
		rep.seed.took.Round(time.Millisecond), float64(rep.seed.items)/rep.seed.took.Seconds())

	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}, Timeout: 30 * time.Second}
	e := &env{ds: ds, client: client, capDB: captureDB(client, tableName), ids: sd.ids, tokens: map[string]string{}, authzIn: map[string]any{}}
	srv := &server{http: hc, url: api.url, metrics: api.mURL, apiPID: api.pid(), ddbPID: ddb.PID(), ddbPort: ddbPort}
	calibrateScrape(srv)
	logf("one /metrics scrape allocates %.0f objects (%.0f KiB) in the API: subtracted from each step", scrapeCost.mallocs, scrapeCost.bytes/1024)
	rn := &runner{slices: o.slices, env: e, srv: srv, hc: hc, reg: reg, logf: logf}
	if o.only == "limiter" {
		if rep.limiter, err = rn.limiter(ctx, b.bin, dir, ddb.Endpoint(), ds.Small[0], o.dur); err != nil {
			return err
		}
		return spliceLimiter(o.out, rep)
	}

	// Ticket queue before the load: 1k and 50k tickets.
	t0 = time.Now()
	for _, org := range []*Org{ds.Small[0], ds.Big} {
		pt, diags, err := rn.queue(ctx, org, len(org.Tickets), o.scaleDur)
		if err != nil {
			return err
		}
		rep.queues, rep.queueDiags = append(rep.queues, pt), append(rep.queueDiags, diags...)
	}
	phase("ticket queue at 1k and 50k tickets", t0)

	// The load table.
	t0 = time.Now()
	eps := e.keyEndpoints()
	rep.steps = rn.endpoints(ctx, eps, o.concurrency, o.dur, o.rawDur)
	phase(fmt.Sprintf("endpoints: %d × %d concurrencies × (%v HTTP + %v raw), warm-ups", len(eps), len(o.concurrency), o.dur, o.rawDur), t0)

	// What-if variants.
	t0 = time.Now()
	rep.whatIf = rn.whatIf(ctx, eps, o.whatIfConc, o.rawDur)
	phase(fmt.Sprintf("what-if variants at c=%v", o.whatIfConc), t0)

	// The SDK connection pool.
	t0 = time.Now()
	if rep.pool, err = rn.poolExperiment(ctx, ddb.Endpoint(), o.rawDur); err != nil {
		return err
	}
	phase("SDK connection pool at c=32", t0)

	// The GraphQL dashboard against the REST calls for the same data.
	t0 = time.Now()
	if rep.dashboard, err = rn.dashboard(ctx, ds.Small[0], 3*o.scaleDur, true); err != nil {
		return err
	}
	phase("the GraphQL dashboard vs REST (50 tickets, c=1)", t0)

	// The rate limiter: local buckets against global ones, below and over
	// the limit, each on an API process of its own.
	t0 = time.Now()
	if rep.limiter, err = rn.limiter(ctx, b.bin, dir, ddb.Endpoint(), ds.Small[0], o.dur); err != nil {
		return err
	}
	phase(fmt.Sprintf("the rate limiter: local vs global at c=%v, over the limit, a steady 100/s", limiterConcs), t0)

	// The same endpoints and the dashboard with every DynamoDB call held
	// for o.delay: a second API process behind the delay proxy.
	if o.delay > 0 {
		t0 = time.Now()
		if err := rn.delayed(ctx, rep, eps, ds, b.bin, dir, ddb.Endpoint(), o); err != nil {
			return err
		}
		phase(fmt.Sprintf("endpoints and the dashboard with %v per DynamoDB call, c=%v", o.delay, o.latencyConc), t0)
	}

	// Scale curves: members, then tickets.
	t0 = time.Now()
	if rep.members, err = rn.scaleMembers(ctx, sd, o.sizes.ScaleMembers, o.scaleDur); err != nil {
		return err
	}
	phase(fmt.Sprintf("scale: grow a team partition to %v members, AP3 and AP1 at each size", o.sizes.ScaleMembers), t0)

	t0 = time.Now()
	created := e.created.Load()
	want := o.topUpTo - len(ds.Big.Tickets) - int(created)
	if want > 0 {
		bk := newBulk(client, tableName, 8)
		sd.b = bk
		stopProg := make(chan struct{})
		go progress(stopProg, bk, ddb.PID())
		err := sd.ticketsFor(ds.Big, want, 200)
		if err == nil {
			err = bk.close(ctx)
		}
		close(stopProg)
		if err != nil {
			return err
		}
		logf("scale: Big Corp topped up with %d tickets in %v", want, time.Since(t0).Round(time.Millisecond))
	}
	pt, diags, err := rn.queue(ctx, ds.Big, len(ds.Big.Tickets)+int(created), o.scaleDur)
	if err != nil {
		return err
	}
	rep.queues, rep.queueDiags = append(rep.queues, pt), append(rep.queueDiags, diags...)
	phase(fmt.Sprintf("scale: top Big Corp up to %d tickets, queue", pt.size), t0)

	if o.goBenchFile != "" {
		if b, err := os.ReadFile(o.goBenchFile); err == nil {
			rep.goBench = string(b)
		}
	}
	if o.out != "" {
		rep.isolation = keptSection(filepath.Join(root, o.out), isolationHeading)
	}
	md := rep.markdown()
	if kept := keptSection(filepath.Join(root, o.out), exportSection); kept != "" && o.out != "" {
		md = replaceSection(md, exportSection, strings.TrimRight(kept, "\n")+"\n") // written by -export
	}
	fmt.Println(md)
	if o.out != "" {
		if err := os.WriteFile(filepath.Join(root, o.out), []byte(md), 0o644); err != nil {
			return err
		}
		logf("wrote %s", filepath.Join(root, o.out))
	}
	return nil
}

// progress logs the seeding rate and where the CPU goes, every 10 s.
func progress(stop chan struct{}, bk *bulk, ddbPID int) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	last, lastDDB, lastSelf := bk.written.Load(), cpuSeconds(ddbPID), selfCPU()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			n, c, sc := bk.written.Load(), cpuSeconds(ddbPID), selfCPU()
			logf("seed: %d items written (%.0f/s), DynamoDB Local CPU %.0f%%, bench CPU %.0f%%", n, float64(n-last)/10, (c-lastDDB)*10, (sc-lastSelf)*10)
			last, lastDDB, lastSelf = n, c, sc
		}
	}
}

func describeDataset(ds *Dataset, o options) string {
	var b strings.Builder
	big := ds.Big
	edges := 0
	for _, t := range big.Teams {
		edges += len(big.Members[t])
	}
	fmt.Fprintf(&b, "| tenant | users | teams | member edges | tickets |\n|---|---:|---:|---:|---:|\n")
	fmt.Fprintf(&b, "| Big Corp | %d (16 admins/owner are the callers) | %d (\"Support Tier 1\": %d members; users 0–999 are in 5 of the other 19 each) | %d | %d (statuses new 15%%, open 30%%, pending 15%%, solved 25%%, closed 15%%; 60%% assigned, 70%% routed to a team, 0–3 tags) |\n",
		len(big.Users), len(big.Teams), len(big.Members[big.Teams[0]]), edges, len(big.Tickets))
	for _, s := range ds.Small {
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d |\n", s.Name, len(s.Users), len(s.Teams), len(s.Members[s.Teams[0]]), len(s.Tickets))
	}
	fmt.Fprintf(&b, "| Scale | 1 | 1 (grown to %v members by the scale phase) | 10 at first | 0 |", o.sizes.ScaleMembers)
	return b.String()
}
