package apikey_test

import (
	"context"
	"crypto/sha256"
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
	keys map[string]apikey.Key
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
			got, isKey, err := apikey.ParseToken(token)
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

func TestParseToken(t *testing.T) {
	const org, key = "01ARZ3NDEKTSV4RRFFQ69G5FAV", "01BX5ZZKBKACTAV9WEVGEMMVS1"
	secret := strings.Repeat("A", 43)
	cases := []struct {
		token        string
		isKey, valid bool
	}{
		{"eyJhbGciOiJIUzI1NiJ9.e30.x", false, false},
		{"tdk_" + org + "_" + key + "_" + secret, true, true},
		{"tdk_" + org + "_" + key + "_" + secret[:42], true, false},
		{"tdk_" + org + "_" + key + "_" + secret + "A", true, false},
		{"tdk_" + org + "#x_" + key + "_" + secret, true, false},
		{"tdk_" + strings.ToLower(org) + "_" + key + "_" + secret, true, false},
		{"tdk_" + org + "_" + key, true, false},
		{"tdk_", true, false},
	}
	for _, c := range cases {
		k, isKey, err := apikey.ParseToken(c.token)
		if isKey != c.isKey || (err == nil) != (c.valid || !c.isKey) {
			t.Errorf("%q: key %v, err %v; want key %v, valid %v", c.token, isKey, err, c.isKey, c.valid)
		}
		if c.valid && (k.OrgID != org || k.ID != key) {
			t.Errorf("%q: %+v", c.token, k)
		}
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
// a few writes in flight; keys not verified lately are read within a
// budget, which the keys in use never wait for.
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
	t.Run("unverified keys within a budget, known keys always", func(t *testing.T) {
		rc := apikey.NewRecent(&recorder{})
		known := authz.APIKey{OrgID: testkit.OrgID, ID: "KNOWN"}
		rc.Verified(key("KNOWN", testkit.T1), testkit.T1)
		admitted := 0
		for i := range 1000 {
			forged := authz.APIKey{OrgID: testkit.OrgID, ID: fmt.Sprintf("F%d", i)}
			if rc.Admit(forged, testkit.T1) == nil {
				admitted++
			}
			if err := rc.Admit(known, testkit.T1); err != nil {
				t.Fatalf("a key verified lately waited behind forged ones: %v", err)
			}
		}
		if admitted != 100 { // the burst: the clock stood still
			t.Errorf("%d of 1000 forged keys admitted to a read, want the budget's burst, 100", admitted)
		}
		if rc.Admit(authz.APIKey{OrgID: testkit.OrgID, ID: "LATER"}, testkit.T1.Add(time.Second)) != nil {
			t.Error("a second later, the budget has refilled 50 reads: a new key waits")
		}
		later := testkit.T1.Add(11 * time.Minute)
		for i := range 100 {
			_ = rc.Admit(authz.APIKey{OrgID: testkit.OrgID, ID: fmt.Sprintf("G%d", i)}, later)
		}
		if err := rc.Admit(known, later); err == nil || errs.CodeOf(err) != "rate_limited" {
			t.Errorf("a key not verified for 11 minutes, budget spent: %v, want rate_limited", err)
		}
	})
	t.Run("nil does nothing", func(t *testing.T) {
		var rc *apikey.Recent
		rc.Verified(key("K1", time.Time{}), testkit.T1)
		if err := rc.Admit(authz.APIKey{ID: "K1"}, testkit.T1); err != nil {
			t.Error(err)
		}
	})
}
