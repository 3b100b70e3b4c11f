package apikey_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/apikey"
	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/testkit"
)

// fakeStore is an in-memory apikey.Storer.
type fakeStore struct {
	testkit.Recorder
	keys      map[string]apikey.Key
	serverKey []byte
}

func newFake() *fakeStore {
	return &fakeStore{Recorder: testkit.NewRecorder(), keys: map[string]apikey.Key{}}
}

func (s *fakeStore) CreateApiKey(_ context.Context, k apikey.Key, ev audit.Event) error {
	if err := s.Write("CreateApiKey", ev); err != nil {
		return err
	}
	s.keys[k.ID] = k
	return s.Commit(ev)
}

func (s *fakeStore) GetApiKey(_ context.Context, _, keyID string) (apikey.Key, error) {
	if err := s.Op("GetApiKey"); err != nil {
		return apikey.Key{}, err
	}
	k, ok := s.keys[keyID]
	if !ok {
		return k, errs.E(errs.NotFound, "api_key_not_found", "API key not found")
	}
	return k, nil
}

func (s *fakeStore) ListApiKeys(context.Context, string, page.Request) (page.Result[apikey.Key], error) {
	return page.Result[apikey.Key]{}, s.Op("ListApiKeys")
}

func (s *fakeStore) ServerKey(_ context.Context, fresh []byte) ([]byte, error) {
	if err := s.Op("ServerKey"); err != nil {
		return nil, err
	}
	if s.serverKey == nil {
		s.serverKey = fresh
	}
	return s.serverKey, nil
}

func (s *fakeStore) RevokeApiKey(_ context.Context, _, keyID string, ev audit.Event) error {
	if err := s.Write("RevokeApiKey", ev); err != nil {
		return err
	}
	delete(s.keys, keyID)
	return s.Commit(ev)
}

var (
	owner  = testkit.As("u_olivia", authz.Owner)
	admin  = testkit.As("u_ada", authz.Admin)
	member = testkit.As("u_max", authz.Member)
)

// asKey is an admin API key acting in the org.
func asKey() authz.Principal {
	p := testkit.As(apikey.Actor("01BX5ZZKBKACTAV9WEVGEMMVS1"), authz.Admin)
	p.Key = &authz.APIKey{OrgID: testkit.OrgID, ID: "01BX5ZZKBKACTAV9WEVGEMMVS1"}
	return p
}

func TestCreateApiKey(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		p    authz.Principal
		in   apikey.New
		want testkit.Outcome
	}{
		{"an admin mints a member key", admin, apikey.New{Name: "CI", Role: authz.Member}, testkit.Succeeds},
		{"an owner mints an admin key that expires", owner, apikey.New{Name: "sync", Role: authz.Admin, ExpiresAt: testkit.T1.Add(24 * time.Hour)}, testkit.Succeeds},
		{"never an owner key", owner, apikey.New{Name: "root", Role: authz.Owner}, testkit.Fails(errs.Invalid, "invalid_role")},
		{"expired already", owner, apikey.New{Name: "old", Role: authz.Member, ExpiresAt: testkit.T1}, testkit.Fails(errs.Invalid, "invalid_expiry")},
		{"beyond a year", owner, apikey.New{Name: "long", Role: authz.Member, ExpiresAt: testkit.T1.Add(apikey.MaxLife + time.Hour)}, testkit.Fails(errs.Invalid, "invalid_expiry")},
		{"a member", member, apikey.New{Name: "mine", Role: authz.Member}, testkit.Fails(errs.Forbidden, "forbidden")},
		{"a key", asKey(), apikey.New{Name: "child", Role: authz.Member}, testkit.Fails(errs.Forbidden, "api_key_not_allowed")},
	}
	for _, c := range cases {
		t.Run(c.want.Name("201", "CreateApiKey", c.name), func(t *testing.T) {
			s := newFake()
			k, token, err := apikey.NewService(s, testkit.Now).CreateApiKey(ctx, c.p, c.in)
			c.want.Check(t, err)
			if !c.want.OK {
				s.WantNoEvent(t)
				return
			}
			got, isKey, err := apikey.NewService(s, testkit.Now).ParseToken(ctx, token) // another process, the same table
			if !isKey || err != nil || got.OrgID != testkit.OrgID || got.ID != k.ID || got.Hash != k.Hash {
				t.Errorf("token %q parses to %+v (%v, %v); the key is %s with hash %x", token, got, isKey, err, k.ID, k.Hash)
			}
			if stored := s.keys[k.ID]; stored.Hash != sha256.Sum256([]byte(token)) || strings.Contains(stored.Name, token) {
				t.Errorf("stored %+v: want the token's hash only", stored)
			}
			fields := []string{"name", "role"}
			if !c.in.ExpiresAt.IsZero() {
				fields = append(fields, "expiresAt")
			}
			s.WantEvent(t, "apikey.create", "apikey", k.ID, c.p.UserID, testkit.ByOrg(authz.Admin), fields...)
		})
	}
}

// TestParseToken: a token is the service's only with the server key's MAC
// of its org, its key and its random part; anything else is refused before
// any read but the server key's, made once per process and again after a
// failure.
func TestParseToken(t *testing.T) {
	ctx := context.Background()
	s := newFake()
	svc := apikey.NewService(s, testkit.Now)
	k, token, err := svc.CreateApiKey(ctx, admin, apikey.New{Name: "CI", Role: authz.Member})
	if err != nil {
		t.Fatal(err)
	}
	org, secret := testkit.OrgID, token[len(token)-43:]
	other := "01BX5ZZKBKACTAV9WEVGEMMVS1"
	flip := func(c byte) string { // another base64url character, of six bits
		if c == 'A' {
			return "B"
		}
		return "A"
	}
	const valid, malformed, forged = "", "malformed", "forged" // forged: the MAC is not the server key's
	cases := []struct{ name, token, want string }{
		{"the minted token", token, valid},
		{"a secret cut short", "tdk_" + org + "_" + k.ID + "_" + secret[:42], malformed},
		{"a secret too long", token + "A", malformed},
		{"not a ULID", "tdk_" + org + "#x_" + k.ID + "_" + secret, malformed},
		{"a lower-case ULID", "tdk_" + strings.ToLower(org) + "_" + k.ID + "_" + secret, malformed},
		{"no secret", "tdk_" + org + "_" + k.ID, malformed},
		{"the prefix alone", "tdk_", malformed},
		{"a last character with bits past the secret", token[:len(token)-1] + "B", malformed},
		{"a made-up secret (or one minted before MACs)", "tdk_" + org + "_" + k.ID + "_" + strings.Repeat("A", 43), forged},
		{"its MAC changed", token[:len(token)-2] + flip(token[len(token)-2]) + token[len(token)-1:], forged},
		{"its random part changed", token[:len(token)-43] + flip(secret[0]) + secret[1:], forged},
		{"its secret on another key", "tdk_" + org + "_" + other + "_" + secret, forged},
		{"its secret in another org", "tdk_" + other + "_" + k.ID + "_" + secret, forged},
	}
	for _, c := range cases {
		status := map[bool]string{true: "200", false: "401"}[c.want == valid]
		t.Run(status+"/ParseToken/"+c.name, func(t *testing.T) {
			got, isKey, err := svc.ParseToken(ctx, c.token)
			switch {
			case !isKey:
				t.Fatalf("%q: not a key's token", c.token)
			case c.want == valid && (err != nil || got.OrgID != org || got.ID != k.ID || got.Hash != k.Hash):
				t.Errorf("%q: %+v, %v; want the key %s with hash %x", c.token, got, err, k.ID, k.Hash)
			case c.want != valid && errs.CodeOf(err) != "invalid_token" || (c.want == forged) != errors.Is(err, authz.ErrKeyRevoked):
				t.Errorf("%q: %v; want invalid_token, %s", c.token, err, c.want)
			}
		})
	}
	if _, isKey, err := svc.ParseToken(ctx, "eyJhbGciOiJIUzI1NiJ9.e30.x"); isKey || err != nil {
		t.Errorf("a JWT: key %v, err %v", isKey, err)
	}
	if n := s.Calls["ServerKey"]; n != 1 || s.Calls["GetApiKey"] != 0 {
		t.Errorf("calls %v: want the server key's one read, no key's", s.Calls)
	}
	t.Run("503/ParseToken/200/ParseToken/a failed load of the server key is tried again", func(t *testing.T) {
		fresh := apikey.NewService(s, testkit.Now)
		s.Fail["ServerKey"] = errs.E(errs.Unavailable, "unavailable", "DynamoDB is down")
		if _, _, err := fresh.ParseToken(ctx, token); errs.KindOf(err) != errs.Unavailable {
			t.Fatalf("server key unavailable: %v", err)
		}
		delete(s.Fail, "ServerKey")
		if _, _, err := fresh.ParseToken(ctx, token); err != nil {
			t.Fatalf("server key back: %v", err)
		}
	})
}

// heldKeyStore holds every load of the server key until release is
// closed, counting the loads.
type heldKeyStore struct {
	*fakeStore
	release chan struct{}
	mu      sync.Mutex
	loads   int
}

func (s *heldKeyStore) ServerKey(ctx context.Context, fresh []byte) ([]byte, error) {
	s.mu.Lock()
	s.loads++
	s.mu.Unlock()
	<-s.release
	return s.fakeStore.ServerKey(ctx, fresh)
}

// TestServerKeyLoadShared: requests that need the server key while it
// loads share the one load, and one that goes away meanwhile returns at
// once without cancelling it for the others.
func TestServerKeyLoadShared(t *testing.T) {
	ctx := context.Background()
	s := newFake()
	_, token, err := apikey.NewService(s, testkit.Now).CreateApiKey(ctx, admin, apikey.New{Name: "CI", Role: authz.Member})
	if err != nil {
		t.Fatal(err)
	}
	held := &heldKeyStore{fakeStore: s, release: make(chan struct{})}
	svc := apikey.NewService(held, testkit.Now) // a fresh process: its key not loaded yet
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, _, errs[i] = svc.ParseToken(ctx, token) })
	}
	gone, cancel := context.WithCancel(ctx)
	left := make(chan error, 1)
	go func() { _, _, err := svc.ParseToken(gone, token); left <- err }()
	cancel()
	select {
	case err := <-left:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the caller that went away: %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second): // a bound for a hang, not a speed
		t.Fatal("the caller that went away waits for the load")
	}
	close(held.release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
	if held.loads != 1 {
		t.Errorf("%d loads of the server key, want the one shared", held.loads)
	}
}

// recorder counts TouchApiKey writes and can hold them.
type recorder struct {
	mu     sync.Mutex
	writes int
	hold   chan struct{}
}

func (r *recorder) TouchApiKey(context.Context, string, string, time.Time) error {
	if r.hold != nil {
		<-r.hold
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes++
	return nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writes
}

// TestRecent: a key's use is written at most once a minute per replica,
// never for a use the read showed within the minute, never with more than
// a few writes in flight.
func TestRecent(t *testing.T) {
	key := func(id string, lastUsed time.Time) apikey.Key {
		return apikey.Key{OrgID: testkit.OrgID, ID: id, LastUsedAt: lastUsed}
	}
	wait := func(r *recorder, n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for r.count() < n && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if got := r.count(); got != n {
			t.Fatalf("writes: %d, want %d", got, n)
		}
	}
	t.Run("a use written once a minute", func(t *testing.T) {
		r := &recorder{}
		rc := apikey.NewRecent(r)
		for i := range 100 {
			rc.Verified(key("K1", time.Time{}), testkit.T1.Add(time.Duration(i)*time.Millisecond))
		}
		wait(r, 1)
		rc.Verified(key("K1", time.Time{}), testkit.T1.Add(apikey.TouchEvery))
		wait(r, 2)
	})
	t.Run("a use the read showed within the minute", func(t *testing.T) {
		r := &recorder{}
		apikey.NewRecent(r).Verified(key("K1", testkit.T1.Add(-30*time.Second)), testkit.T1)
		time.Sleep(10 * time.Millisecond) // a write would have started
		if n := r.count(); n != 0 {
			t.Errorf("writes: %d, want 0", n)
		}
	})
	t.Run("writes bounded in flight", func(t *testing.T) {
		r := &recorder{hold: make(chan struct{})}
		rc := apikey.NewRecent(r)
		for i := range 100 {
			rc.Verified(key(fmt.Sprintf("K%d", i), time.Time{}), testkit.T1)
		}
		close(r.hold)
		wait(r, 8)
	})
	t.Run("nil does nothing", func(t *testing.T) {
		var rc *apikey.Recent
		rc.Verified(key("K1", time.Time{}), testkit.T1) // no panic, nothing to write
	})
}
