package webhook

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/errs"
)

// TestURLPolicy: what a subscription may name, in production and with
// WEBHOOK_ALLOW_PRIVATE_NETWORKS.
func TestURLPolicy(t *testing.T) {
	prod, dev := URLPolicy{}, URLPolicy{AllowPrivate: true}
	for _, c := range []struct {
		url       string
		prod, dev bool
	}{
		{"https://hooks.example.com/x?token=1", true, true},
		{"https://93.184.215.14/x", true, true},
		{"http://hooks.example.com/x", false, true},
		{"http://127.0.0.1:8080/x", false, true},
		{"https://127.0.0.1/x", false, true},
		{"https://localhost/x", false, true},
		{"https://metadata.google.internal/x", false, true},
		{"https://169.254.169.254/latest/meta-data", false, true},
		{"https://10.0.0.1/x", false, true},
		{"https://192.168.1.1/x", false, true},
		{"https://172.16.0.1/x", false, true},
		{"https://100.64.0.1/x", false, true},
		{"https://0.0.0.0/x", false, true},
		{"https://[::1]/x", false, true},
		{"https://[fd00:ec2::254]/x", false, true},
		{"https://[::ffff:127.0.0.1]/x", false, true},
		{"https://[fe80::1]/x", false, true},
		// A zone makes netip's Prefix.Contains false for every prefix;
		// the kernel ignores it for loopback and unique-local addresses.
		{"https://[::1%25lo]:18097/x", false, true},
		{"https://[fe80::fc:ff:fe00:1%25eth0]/x", false, true},
		{"https://[fd00:ec2::254%25eth0]/latest/meta-data/", false, true},
		{"https://[64:ff9b::a9fe:a9fe%25eth0]/x", false, true},
		{"https://[::127.0.0.1]/x", false, true},     // IPv4-compatible
		{"https://[2002:7f00:1::]/x", false, true},   // 6to4 of 127.0.0.1
		{"https://[fec0::1]/x", false, true},         // site-local
		{"https://[::ffff:0:7f00:1]/x", false, true}, // IPv4-translated (SIIT) 127.0.0.1
		{"https://[::ffff:0:a9fe:a9fe]/x", false, true},
		{"https://192.88.99.1/x", false, true},  // 6to4 relay anycast
		{"https://[2001:10::1]/x", false, true}, // ORCHID
		{"https://hooks.example.com:0/x", false, false},
		{"https://hooks.example.com:99999/x", false, false},
		{"https://hooks.example.com:8443/x", true, true},
		// Numeric host forms some resolvers read as IPv4 (inet_aton).
		{"https://2130706433/x", false, true},
		{"https://0177.0.0.1/x", false, true},
		{"https://127.1/x", false, true},
		{"https://0x7f.1/x", false, true},
		{"https://0x7f000001/x", false, true},
		{"https://user:pass@hooks.example.com/x", false, false},
		{"https://hooks.example.com/x#frag", false, false},
		{"ftp://hooks.example.com/x", false, false},
		{"/relative", false, false},
		{"https://" + strings.Repeat("a", MaxURLLen) + ".com", false, false},
	} {
		for _, p := range []struct {
			name string
			pol  URLPolicy
			ok   bool
		}{{"production", prod, c.prod}, {"development", dev, c.dev}} {
			err := p.pol.Check(c.url)
			if (err == nil) != p.ok {
				t.Errorf("%s: Check(%.60q) = %v, want ok %v", p.name, c.url, err, p.ok)
			}
			if err != nil && errs.CodeOf(err) != "invalid_url" {
				t.Errorf("%s: Check(%.60q): code %q, want invalid_url", p.name, c.url, errs.CodeOf(err))
			}
		}
	}
}

// TestOutboundClient: the delivery client refuses a private address when
// it connects, after resolution (a name that resolves to loopback passes
// the URL check and is refused there), and follows no redirect.
func TestOutboundClient(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/target", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]

	strict := NewClient(false, 2*time.Second)
	for _, u := range []string{srv.URL + "/x", "http://localhost:" + port + "/x", "http://[::ffff:127.0.0.1]:" + port + "/x",
		"http://[::1%25lo]:" + port + "/x"} {
		resp, err := strict.Post(u, "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
			t.Errorf("POST %s: status %d, want the connection refused", u, resp.StatusCode)
		} else if !errors.Is(err, errPrivate) {
			t.Errorf("POST %s: %v, want %v", u, err, errPrivate)
		}
	}
	if hits != 0 {
		t.Errorf("the strict client reached the loopback server %d times", hits)
	}

	dev := NewClient(true, 2*time.Second)
	resp, err := dev.Post(srv.URL+"/redirect", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || hits != 1 {
		t.Errorf("redirect: status %d after %d requests, want 302 after 1 (never followed)", resp.StatusCode, hits)
	}
}

// TestBackoff: the first retry comes within 30 s (by default), each next
// one about twice as late, never past MaxDelay, jittered down by at most
// half; a Retry-After is honoured up to MaxDelay.
func TestBackoff(t *testing.T) {
	p := Policy{}.withDefaults()
	for range 100 {
		if d := p.Backoff(1, 0); d > 30*time.Second || d < p.FirstRetry/2 {
			t.Fatalf("first retry after %v, want within [%v, 30s]", d, p.FirstRetry/2)
		}
		for attempt := 2; attempt < 20; attempt++ {
			want := min(p.FirstRetry<<(attempt-1), p.MaxDelay)
			if d := p.Backoff(attempt, 0); d < want/2 || d > want {
				t.Fatalf("attempt %d: %v, want within [%v, %v]", attempt, d, want/2, want)
			}
		}
		if d := p.Backoff(1, 10*time.Minute); d != 10*time.Minute {
			t.Fatalf("Retry-After 10m: %v", d)
		}
		if d := p.Backoff(1, 48*time.Hour); d != p.MaxDelay {
			t.Fatalf("Retry-After 48h: %v, want MaxDelay %v", d, p.MaxDelay)
		}
	}
	// Retried for at least 24 hours.
	if p.RetryFor < 24*time.Hour || p.DisableAfter != 72*time.Hour {
		t.Errorf("RetryFor %v, DisableAfter %v", p.RetryFor, p.DisableAfter)
	}
}

// TestSign: the signature the reference library verifies, under each
// secret of a rotation, and not under another.
func TestSign(t *testing.T) {
	a, _ := NewSecret()
	b, _ := NewSecret()
	other, _ := NewSecret()
	now := time.Now()
	body := Body(audit.Event{OrgID: "o", ID: "01J00000000000000000000000", Action: "ticket.create", At: now,
		Changes: []audit.Change{{Field: "title", After: "x"}}})
	sig, err := Sign("01J00000000000000000000000", now, body, a, b)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{"Webhook-Id": {"01J00000000000000000000000"}, "Webhook-Timestamp": {strconv.FormatInt(now.Unix(), 10)}, "Webhook-Signature": {sig}}
	for _, s := range []string{a, b} {
		wh, _ := standardwebhooks.NewWebhook(s)
		if err := wh.Verify(body, h); err != nil {
			t.Errorf("verify under a signing secret: %v", err)
		}
	}
	wh, _ := standardwebhooks.NewWebhook(other)
	if wh.Verify(body, h) == nil {
		t.Error("verified under a secret that did not sign")
	}
	if !strings.Contains(string(body), `"object":{"id":"","title":"x"}`) {
		t.Errorf("body: %s", body)
	}
}

// TestBodyKeepsEndpointURLsOut: an endpoint subscribed to webhook events
// learns that another endpoint changed, never its URL (which may carry
// that endpoint's token); the audit log keeps it for admins.
func TestBodyKeepsEndpointURLsOut(t *testing.T) {
	for _, action := range []string{"webhook.create", "webhook.update", "webhook.delete"} {
		body := Body(audit.Event{OrgID: "o", ID: "01J00000000000000000000000", Action: action, TargetType: "webhook", TargetID: "w", At: time.Now(),
			Changes: []audit.Change{{Field: "url", Before: "https://a.example/h?token=old", After: "https://b.example/h?token=s3cr3t"},
				{Field: "active", After: true}}})
		if strings.Contains(string(body), "token=") || !strings.Contains(string(body), `"active"`) {
			t.Errorf("%s: %s", action, body)
		}
	}
}
