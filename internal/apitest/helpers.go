package apitest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tenantd/tenantd/internal/store/storetest"
	"github.com/tenantd/tenantd/internal/testkit"
)

// ---------------------------------------------------------------------------
// Reading the table back (ts.Raw: not recorded, never faulty).

// Item is one DynamoDB item as stored.
type Item map[string]types.AttributeValue

// Str returns a string (or number, as text) attribute of it, "" if absent.
func (it Item) Str(name string) string {
	switch v := it[name].(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return v.Value
	case *types.AttributeValueMemberBOOL:
		return strconv.FormatBool(v.Value)
	}
	return ""
}

// Num returns a number attribute of it, 0 if absent.
func (it Item) Num(tb testing.TB, name string) int64 {
	tb.Helper()
	v, ok := it[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		tb.Fatalf("attribute %s: %v", name, err)
	}
	return n
}

// ScanAll reads every item of ts's table (each test has its own small table)
// with consistent reads.
func ScanAll(tb testing.TB, ts *Server) []Item {
	tb.Helper()
	var out []Item
	p := dynamodb.NewScanPaginator(ts.Raw, &dynamodb.ScanInput{TableName: aws.String(ts.Table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			tb.Fatalf("scan %s: %v", ts.Table, err)
		}
		for _, it := range page.Items {
			out = append(out, Item(it))
		}
	}
	return out
}

// ItemsOf returns the items of the table whose attribute "type" is typ and,
// when org is not "", whose orgId is org.
func ItemsOf(tb testing.TB, ts *Server, typ, org string) []Item {
	tb.Helper()
	var out []Item
	for _, it := range ScanAll(tb, ts) {
		if it.Str("type") == typ && (org == "" || it.Str("orgId") == org) {
			out = append(out, it)
		}
	}
	return out
}

// MustHealthy fails tb with every invariant the server's table breaks.
func MustHealthy(tb testing.TB, ts *Server) {
	tb.Helper()
	vs, err := storetest.CheckInvariants(context.Background(), ts.Raw, ts.Table, storetest.CheckOptions{Now: time.Now().Add(365 * 24 * time.Hour)})
	if err != nil {
		tb.Fatalf("check invariants: %v", err)
	}
	for i, v := range vs {
		if i == 20 {
			tb.Errorf("... and %d more violations", len(vs)-20)
			break
		}
		tb.Errorf("invariant: %s", v)
	}
}

// ---------------------------------------------------------------------------
// Raw HTTP.

// Response is a response read in full.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	Close  bool // the server closes the connection after it (Connection: close)
}

// ResponseOrErr is a response or the error of its request.
type ResponseOrErr struct {
	Response
	Err error
}

// DoReq sends one request with a plain client (no response validation: the
// caller asserts) and reads the whole response.
func DoReq(tb testing.TB, hc *http.Client, method, rawURL, token string, header http.Header, body string) Response {
	tb.Helper()
	r := DoReqE(hc, method, rawURL, token, header, body)
	if r.Err != nil {
		tb.Fatalf("%s %s: %v", method, rawURL, r.Err)
	}
	return r.Response
}

// DoReqE is DoReq for goroutines: it returns errors instead of failing.
func DoReqE(hc *http.Client, method, rawURL, token string, header http.Header, body string) ResponseOrErr {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, rawURL, rd)
	if err != nil {
		return ResponseOrErr{Err: err}
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := hc.Do(req)
	if err != nil {
		return ResponseOrErr{Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return ResponseOrErr{Response: Response{Status: resp.StatusCode, Header: resp.Header, Body: b, Close: resp.Close}, Err: err}
}

// ---------------------------------------------------------------------------
// Logs, metrics, unreachable DynamoDB.

// LogBuffer collects a server's JSON log lines (see WithLog).
type LogBuffer struct{ testkit.SyncBuffer }

// Lines returns the log lines that contain s, decoded.
func (l *LogBuffer) Lines(s string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if !bytes.Contains(sc.Bytes(), []byte(s)) {
			continue
		}
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// SeriesCount counts the series of every metric family of reg.
func SeriesCount(tb testing.TB, reg *prometheus.Registry) (int, []*dto.MetricFamily) {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		n += len(mf.GetMetric())
	}
	return n, mfs
}

// RequestsByCode sums tenantd_requests_total by its code label over the
// series whose labels match every pair of want.
func RequestsByCode(tb testing.TB, reg *prometheus.Registry, want map[string]string) map[string]float64 {
	tb.Helper()
	_, mfs := SeriesCount(tb, reg)
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "tenantd_requests_total" {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue series
				}
			}
			out[labels["code"]] += m.GetCounter().GetValue()
		}
	}
	return out
}

// ClosedPort returns the URL of a local port nothing listens on.
func ClosedPort(t *testing.T) string {
	t.Helper()
	return "http://" + testkit.FreeAddr(t)
}

// No500 fails t when the registry counted a 500 (the only 5xx that would
// mean a bug where DynamoDB fails: 503 is the right answer).
func No500(t *testing.T, ts *Server) {
	t.Helper()
	if got := RequestsByCode(t, ts.Registry, nil); got["500"] != 0 {
		t.Errorf("tenantd_requests_total counted %v request(s) as 500: %v", got["500"], got)
	}
}

// ---------------------------------------------------------------------------
// IDs and what a response shows.

// RandULID returns a random canonical ULID (the first character <= '7').
func RandULID() string {
	const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	b := make([]byte, 26)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%32]
	}
	b[0] = "01234567"[int(b[0])%8]
	return string(b)
}

// Leaks returns what of A's data a response shows: any secret (names,
// titles, emails, bodies) and any of A's IDs that the request did not
// itself carry.
func Leaks(respBody []byte, secrets, ids []string, request string) []string {
	var out []string
	s := string(respBody)
	for _, v := range secrets {
		if strings.Contains(s, v) {
			out = append(out, fmt.Sprintf("secret %q", v))
		}
	}
	for _, id := range ids {
		if strings.Contains(s, id) && !strings.Contains(request, id) {
			out = append(out, fmt.Sprintf("id %q", id))
		}
	}
	return out
}
