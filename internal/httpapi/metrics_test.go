package httpapi_test

// Findings 3 and 7 of the outside attack: the metrics' labels are bounded
// (route templates, a fixed method set, no host, no raw URL), they are not
// served by the public API, and they count the status the client got.

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// randHex returns n random bytes in hex.
func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// metricsText renders reg as a scraper would see it.
func metricsText(tb testing.TB, reg *prometheus.Registry) string {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	var b strings.Builder
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			tb.Fatal(err)
		}
	}
	return b.String()
}

// TestMetricsCardinality sends 2,000 requests with distinct Host
// headers, distinct paths (unmatched ones carrying token-like strings, an
// invitation token with a trailing slash among them) and methods, standard
// and invented. Once every kind of request has been seen, the number of
// series in the registry stays exactly where it was, and nothing a client
// put in a path or a Host header appears in the metrics.
func TestMetricsCardinality(t *testing.T) {
	ts := MustServer(t)
	a := ts.Actor(t, "scraped")
	org := MustOrg(t, a.C, "Scraped").Id
	const pathMark, hostMark = "zqxsecret", "hostmark"
	// Each shape makes one kind of request with fresh random parts.
	shapes := []func() string{
		func() string { return "/v1/invitations/" + pathMark + randHex(16) + "/accept/" }, // trailing slash: unmatched
		func() string { return "/v1/invitations/" + pathMark + randHex(16) + "/accept" },  // the route, a token no one issued
		func() string { return "/" + pathMark + randHex(12) },
		func() string { return "/v1/orgs/" + org + "/" + pathMark + randHex(8) + "/x" },
		func() string { return "/v1/orgs/" + randULID() },                                  // the route, another org
		func() string { return "/v1/orgs/" + org + "/tickets?q=" + pathMark + randHex(8) }, // the route, a query
		func() string { return "/v1/orgs/%2F..%2F" + pathMark + randHex(8) },
		func() string { return "/metrics/" + pathMark + randHex(4) },
	}
	methods := []func() string{
		func() string { return http.MethodGet }, func() string { return http.MethodHead }, func() string { return http.MethodPost },
		func() string { return http.MethodPut }, func() string { return http.MethodPatch }, func() string { return http.MethodDelete },
		func() string { return http.MethodOptions }, func() string { return "X" + strings.ToUpper(randHex(6)) },
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer hc.CloseIdleConnections()
	send := func(shape, method int) error {
		req, err := http.NewRequest(methods[method](), ts.URL+shapes[shape](), nil)
		if err != nil {
			return err
		}
		req.Host = hostMark + randHex(8) + ".example"
		req.Header.Set("Authorization", "Bearer "+a.Token)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		return nil
	}
	// Every kind of request once (twice: what a first request warms up).
	for range 2 {
		for s := range shapes {
			for m := range methods {
				if err := send(s, m); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	before, _ := seriesCount(t, ts.Registry)

	const n = 2_000 // 30 for each kind of request, each with fresh random parts
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if err := send(i%len(shapes), (i/len(shapes))%len(methods)); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d requests failed, e.g. %v", len(errs), errs[0])
	}

	after, _ := seriesCount(t, ts.Registry)
	if after != before {
		t.Errorf("series in the registry: %d after the warm-up, %d after %d more requests; want no growth", before, after, n)
	}
	text := metricsText(t, ts.Registry)
	for _, mark := range []string{pathMark, hostMark, "%2F", "/accept/"} {
		if i := strings.Index(text, mark); i >= 0 {
			line := text[strings.LastIndexByte(text[:i], '\n')+1:]
			line, _, _ = strings.Cut(line, "\n")
			t.Errorf("a client's %q reached the metrics: %s", mark, line)
		}
	}
	for _, label := range []string{"host=", "url="} {
		if strings.Contains(text, label) {
			t.Errorf("the metrics still carry a %s label", strings.TrimSuffix(label, "="))
		}
	}
	if t.Failed() {
		t.Logf("metrics (%d bytes), start:\n%s", len(text), truncate([]byte(text)))
	}
}

// TestMetricsNotPublic: the API's listener has no /metrics (cmd/api
// serves them on METRICS_ADDR, see cmd/api's tests).
func TestMetricsNotPublic(t *testing.T) {
	ts := MustServer(t)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		r := doReq(t, &http.Client{}, method, ts.URL+"/metrics", "", nil, "")
		if r.Status != http.StatusNotFound {
			t.Errorf("%s /metrics on the public listener: %d, want 404: %s", method, r.Status, truncate(r.Body))
		}
		if strings.Contains(string(r.Body), "tenantd_") {
			t.Errorf("%s /metrics on the public listener served metrics", method)
		}
	}
}

// TestMetricsStatus: tenantd_requests_total counts the status the
// client got: an application error (a 404, a 400, a 401) is counted with
// its own status, never as a 500.
func TestMetricsStatus(t *testing.T) {
	ts := MustServer(t)
	a := ts.Actor(t, "counted")
	org := MustOrg(t, a.C, "Counted").Id
	hc := &http.Client{}
	cases := []struct {
		what, method, path, token, body, route string
		status                                 int
	}{
		{"another org", http.MethodGet, "/v1/orgs/" + randULID(), a.Token, "", "/v1/orgs/:orgId", http.StatusNotFound},
		{"an invalid body", http.MethodPost, "/v1/orgs/" + org + "/tickets", a.Token, `{"title":""}`, "/v1/orgs/:orgId/tickets", http.StatusBadRequest},
		{"no token", http.MethodGet, "/v1/orgs/" + org + "/teams", "", "", "/v1/orgs/:orgId/teams", http.StatusUnauthorized},
		{"a ticket that does not exist", http.MethodGet, "/v1/orgs/" + org + "/tickets/" + randULID(), a.Token, "", "/v1/orgs/:orgId/tickets/:ticketId", http.StatusNotFound},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			const n = 3
			for range n {
				if r := doReq(t, hc, c.method, ts.URL+c.path, c.token, nil, c.body); r.Status != c.status {
					t.Fatalf("status %d, want %d: %s", r.Status, c.status, r.Body)
				}
			}
			got := requestsByCode(t, ts.Registry, map[string]string{"method": c.method, "route": c.route})
			want := map[string]float64{fmt.Sprint(c.status): n}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("tenantd_requests_total{method=%q,route=%q} by code: %v, want %v", c.method, c.route, got, want)
			}
		})
	}
	if got := requestsByCode(t, ts.Registry, nil); got["500"] != 0 {
		t.Errorf("requests counted as 500: %v (none was answered with a 500)", got["500"])
	}
}
