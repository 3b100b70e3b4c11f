package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantd/tenantd/internal/ticket"
)

// The export phase (`go run ./tools/bench -export`, `make bench-export`):
// an org of exportTickets tickets with exportComments comments between
// them is seeded, then exported through GET /v1/orgs/{orgId}/export by
// one streaming client, as is an org ten times smaller first: their peak
// RSS side by side shows whether memory grows with the org. It writes its
// own section of BENCHMARKS.md, which `make bench` keeps: seeding a
// million items into DynamoDB Local alone takes longer than make bench's
// budget.

const exportSection = "## Export of a large org"

// exportRow is one export measured.
type exportRow struct {
	name              string
	tickets, comments int   // seeded
	objects           int64 // lines before the summary
	bytes             int64 // as sent (gzip-compressed when asked)
	gzip              bool
	took              time.Duration
	calls             float64 // the export request's DynamoDB calls (its own accounting)
	apiCPU            float64 // seconds
	rssBefore         int64   // KiB, the API's, when the export began
	rssPeak           int64   // KiB, the highest sampled during it
}

func (r exportRow) objectsPerSecond() float64 { return float64(r.objects) / r.took.Seconds() }

// seedExportOrg writes an org of 50 users, a team of 10 and n tickets with
// c comments spread over them (0 to twice the mean each, so some have
// none), through the store's write methods (bulk.go). A ticket is written
// with its commentCount; the comments' own updates of it are dropped.
func seedExportOrg(s *seeder, name, prefix string, n, c int) (*Org, error) {
	o, err := s.org(name, prefix, 1, 50)
	if err != nil {
		return nil, err
	}
	if _, err := s.team(o, "Support", o.Users[0], o.Users[1:10]); err != nil {
		return nil, err
	}
	mean := max(1, c/max(n, 1))
	left := c
	start := s.now.Add(-90 * 24 * time.Hour)
	step := 90 * 24 * time.Hour / time.Duration(n+1)
	counts := make([]int, n)
	for i := range counts {
		counts[i] = min(left, (i*7919)%(2*mean+1))
		if i == n-1 {
			counts[i] = left
		}
		left -= counts[i]
	}
	noTicketUpdate := func(map[string]types.AttributeValue) bool { return false }
	err = parallel(2, n, func(i int) error {
		r := newRand(uint64(i) + 1)
		at := start.Add(time.Duration(i) * step)
		t := ticket.Ticket{OrgID: o.ID, ID: s.ids.at(at), Title: "Ticket " + sentence(r, 4), Description: sentence(r, 30),
			Status: pickStatus(r), Priority: priorities[r.IntN(len(priorities))], RequesterID: o.Users[r.IntN(len(o.Users))],
			Tags: []string{tagPool[r.IntN(len(tagPool))]}, CommentCount: counts[i], Version: 1, CreatedAt: at, UpdatedAt: at}
		if err := s.b.do(func(ctx context.Context) error { return s.tickets().CreateTicket(ctx, t, s.ev(o.ID)) }); err != nil {
			return err
		}
		for j := range counts[i] {
			cm := ticket.Comment{OrgID: o.ID, TicketID: t.ID, ID: s.ids.at(at.Add(time.Duration(j+1) * time.Second)),
				AuthorID: o.Users[r.IntN(len(o.Users))], Body: sentence(r, 12), CreatedAt: at.Add(time.Duration(j+1) * time.Second)}
			if _, err := s.b.doPuts(func(ctx context.Context) error { return s.tickets().CreateComment(ctx, cm, s.ev(o.ID)) }, noTicketUpdate); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("seed the tickets of %s: %w", name, err)
	}
	return o, nil
}

// exportOnce exports o as its owner and measures it: the stream is read
// line by line, its summary checked against the lines counted.
func (rn *runner) exportOnce(ctx context.Context, name string, o *Org, n, c int, compressed bool) (exportRow, error) {
	row := exportRow{name: name, tickets: n, comments: c, gzip: compressed}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rn.srv.url+"/v1/orgs/"+o.ID+"/export", nil)
	if err != nil {
		return row, err
	}
	req.Header.Set("Authorization", "Bearer "+rn.env.token(o.Users[0]))
	req.Header.Set("Accept-Encoding", "identity")
	if compressed {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	before := rn.srv.snapshot()
	row.rssBefore = rssKiB(rn.srv.apiPID)
	var peak atomic.Int64
	peak.Store(row.rssBefore)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if v := rssKiB(rn.srv.apiPID); v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()
	start := time.Now()
	hc := &http.Client{Transport: &http.Transport{DisableCompression: true}} // no timeout: the export takes what it takes
	resp, err := hc.Do(req)
	if err != nil {
		close(done)
		return row, err
	}
	defer resp.Body.Close()
	counted := &countingReader{r: resp.Body}
	var body io.Reader = counted
	if compressed {
		if resp.Header.Get("Content-Encoding") != "gzip" {
			close(done)
			return row, fmt.Errorf("export %s: asked for gzip, got %q", name, resp.Header.Get("Content-Encoding"))
		}
		if body, err = gzip.NewReader(counted); err != nil {
			close(done)
			return row, err
		}
	}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var last []byte
	for sc.Scan() {
		row.objects++
		last = append(last[:0], sc.Bytes()...)
	}
	row.took = time.Since(start)
	close(done)
	if err := sc.Err(); err != nil {
		return row, fmt.Errorf("export %s: %w", name, err)
	}
	row.objects-- // the summary
	if !bytes.HasPrefix(last, []byte(`{"type":"summary"`)) {
		return row, fmt.Errorf("export %s ended without its summary: %.300s", name, last)
	}
	sum := fmt.Sprintf(`"ticket":%d,`, n)
	if !bytes.Contains(last, []byte(sum)) || !bytes.Contains(last, []byte(fmt.Sprintf(`"comment":%d,`, c))) {
		return row, fmt.Errorf("export %s: summary %s, want %d tickets and %d comments", name, last, n, c)
	}
	after := rn.srv.snapshot()
	row.bytes, row.rssPeak = counted.n, peak.Load()
	row.apiCPU = after.api - before.api
	const calls = `tenantd_request_dynamodb_calls_sum{method="GET",route="/v1/orgs/:orgId/export"}`
	row.calls = after.m[calls] - before.m[calls]
	rn.logf("export %s: %d objects in %v (%.0f/s), %.1f MiB sent, %.0f DynamoDB calls, API RSS %d -> peak %d KiB", name, row.objects,
		row.took.Round(time.Millisecond), row.objectsPerSecond(), float64(row.bytes)/(1<<20), row.calls, row.rssBefore, row.rssPeak)
	return row, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// rssKiB is the resident set of pid (VmRSS), in KiB.
func rssKiB(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// exportTable renders the export rows as BENCHMARKS.md's section.
func exportTable(rows []exportRow, seed seedStats, m machine, started time.Time, cmd string) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p(exportSection)
	p("")
	p("Written by `%s` (`go run ./tools/bench -export`, `tools/bench/export.go`) on %s, commit `%s`, on the machine", cmd, started.UTC().Format("2006-01-02 15:04 MST"), m.commit)
	p("above; `make bench` keeps this section as it is. One org per row, seeded with `BatchWriteItem` (%d items in %v:", seed.items, seed.took.Round(time.Second))
	p("%.0f items/s): 50 users, a team of 10, the tickets, and the comments spread over them (0 to twice the mean each).", float64(seed.items)/seed.took.Seconds())
	p("One client reads `GET /v1/orgs/{orgId}/export` as its owner, line by line; objects are the lines before the")
	p("summary (whose counts it checks). RSS is the API process's (`VmRSS`, sampled every 100 ms): before the export")
	p("and the highest during it. The API runs with `cmd/api`'s defaults but the rate limits (off): `REQUEST_TIMEOUT`")
	p("(10 s) and `WRITE_TIMEOUT` (30 s) bound each page read and each write, not the export.")
	p("")
	p("| org | tickets | comments | objects | encoding | took | objects/s | MiB sent | bytes/object | DynamoDB calls | API CPU s | RSS before MiB | peak RSS MiB |")
	p("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		enc := "identity"
		if r.gzip {
			enc = "gzip"
		}
		p("| %s | %d | %d | %d | %s | %v | **%.0f** | %.1f | %.0f | %.0f | %.1f | %.1f | **%.1f** |", r.name, r.tickets, r.comments, r.objects, enc,
			r.took.Round(100*time.Millisecond), r.objectsPerSecond(), float64(r.bytes)/(1<<20), float64(r.bytes)/float64(r.objects), r.calls,
			r.apiCPU, float64(r.rssBefore)/1024, float64(r.rssPeak)/1024)
	}
	p("")
	p("Memory is flat if the full org's peak RSS is about the tenth's: what the export holds is one page of lines at a")
	p("time; the rest is the Go heap's target (`GOGC=400`). The Queries are one per page of 100 (users, the team and")
	p("its members, tickets, invitations, webhooks, audit events) and one per ticket that has comments, none for one")
	p("without; the calls are the export request's own (`tenantd_request_dynamodb_calls`), its authorization read")
	p("included. A line's cursor, signed and carrying the store's positions, is about two thirds of its bytes; gzip")
	p("sends a seventh of them, for more API CPU.")
	return b.String()
}

// sectionOf is where md's section whose heading starts with title lies
// (a section runs to the next "## "); ok is false when md has none.
func sectionOf(md, title string) (start, end int, ok bool) {
	start = strings.Index(md, title)
	if start < 0 {
		return 0, 0, false
	}
	end = len(md)
	if j := strings.Index(md[start+len(title):], "\n## "); j >= 0 {
		end = start + len(title) + j + 1
	}
	return start, end, true
}

// replaceSection returns md with its section titled title replaced by
// section (appended when it has none).
func replaceSection(md, title, section string) string {
	i, end, ok := sectionOf(md, title)
	if !ok {
		return strings.TrimRight(md, "\n") + "\n\n" + section
	}
	rest := strings.TrimLeft(md[end:], "\n")
	if rest == "" {
		return md[:i] + section
	}
	return md[:i] + strings.TrimRight(section, "\n") + "\n\n" + rest
}

// runExport is `-export`: seed the two orgs, export each, and write the
// section into the report at out (under root).
func runExport(ctx context.Context, o options, rn *runner, sd *seeder, bk *bulk, ddbPID int, rep *report, root string) error {
	t0 := time.Now()
	stopProg := make(chan struct{})
	go progress(stopProg, bk, ddbPID)
	small, err := seedExportOrg(sd, "Export 1/10", "ex10", o.exportTickets/10, o.exportComments/10)
	var big *Org
	if err == nil {
		big, err = seedExportOrg(sd, "Export", "ex", o.exportTickets, o.exportComments)
	}
	if err == nil {
		err = bk.close(ctx)
	}
	close(stopProg)
	if err != nil {
		return err
	}
	seed := seedStats{items: bk.written.Load(), calls: bk.batches.Load(), took: time.Since(t0)}
	rn.logf("export: seeded %d items in %v", seed.items, seed.took.Round(time.Second))
	var rows []exportRow
	for _, x := range []struct {
		name string
		o    *Org
		n, c int
		gzip bool
	}{
		{"1/10", small, o.exportTickets / 10, o.exportComments / 10, false},
		{"full", big, o.exportTickets, o.exportComments, false},
		{"1/10", small, o.exportTickets / 10, o.exportComments / 10, true},
	} {
		row, err := rn.exportOnce(ctx, x.name, x.o, x.n, x.c, x.gzip)
		if err != nil {
			return err
		}
		rows = append(rows, row)
	}
	section := exportTable(rows, seed, rep.m, rep.started, o.commandLabel)
	fmt.Println(section)
	if o.out == "" {
		return nil
	}
	path := filepath.Join(root, o.out)
	old, _ := os.ReadFile(path)
	if err := os.WriteFile(path, []byte(replaceSection(string(old), exportSection, section)), 0o644); err != nil {
		return err
	}
	rn.logf("wrote the export section of %s", path)
	return nil
}
