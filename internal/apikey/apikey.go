// Package apikey holds an org's API keys: credentials that belong to the
// org, not to a person, for its integrations (a CI bot, a sync job). An
// admin mints one with a role (admin or member); its bearer then acts in
// the org's routes with that role, as the actor "apiKey:<id>", decided by
// the same authorization read as a person (package access). Only a hash of
// the secret is stored; revoking deletes the key, and the next request's
// consistent read refuses it on every replica. A token carries a MAC under
// the server key, so one the service never minted is refused in CPU,
// before any read.
package apikey

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/clock"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/validate"
)

// Key is an org's API key, as stored: a hash of its secret, never the
// secret.
type Key struct {
	OrgID      string
	ID         string
	Name       string
	Role       authz.Role
	Hash       [sha256.Size]byte
	CreatedAt  time.Time
	CreatedBy  string
	ExpiresAt  time.Time // zero: until revoked
	LastUsedAt time.Time // zero: never
}

// Limits of keys.
const (
	MaxNameLen = 200
	MaxPerOrg  = 100
	MaxLife    = 366 * 24 * time.Hour
	// TouchEvery is how stale LastUsedAt may grow: a key's use is written
	// at most once this often, never once per request.
	TouchEvery = time.Minute
)

// tokenPrefix starts every key's token: tdk_<orgId>_<keyId>_<secret>.
const tokenPrefix = "tdk_"

// A secret is randomBytes of randomness, then the first macBytes of
// HMAC-SHA256(server key, orgId|keyId|random): only the service can make
// one, so a made-up secret is refused without reading its key.
const (
	randomBytes    = 16
	macBytes       = 16
	secretBytes    = randomBytes + macBytes
	serverKeyBytes = 32
)

// Errors of keys.
var (
	// ErrNotAllowed refuses an API key what only a person may do: mint,
	// list or revoke keys, and the routes about a person.
	ErrNotAllowed = errs.E(errs.Forbidden, "api_key_not_allowed", "an API key may not do this: it is for people only")
)

// Storer is what keys need from persistence. Every write takes the audit
// event of the change, written in the same transaction.
type Storer interface {
	// CreateApiKey writes k, counted on the org item (at most MaxPerOrg).
	// Returns NotFound (org_not_found) or Conflict (api_key_limit).
	CreateApiKey(ctx context.Context, k Key, ev audit.Event) error
	// GetApiKey reads one key. Returns NotFound.
	GetApiKey(ctx context.Context, orgID, keyID string) (Key, error)
	// ListApiKeys pages through the org's keys, oldest first.
	ListApiKeys(ctx context.Context, orgID string, p page.Request) (page.Result[Key], error)
	// RevokeApiKey deletes the key. Returns NotFound.
	RevokeApiKey(ctx context.Context, orgID, keyID string, ev audit.Event) error
	// ServerKey returns the key of every token's MAC, one for all
	// replicas: the stored one, or fresh, stored first if there is none.
	ServerKey(ctx context.Context, fresh []byte) ([]byte, error)
}

// Service applies the rules of API keys on top of a Storer.
type Service struct {
	store     Storer
	ids       *ids.Generator
	now       clock.Clock
	loads     singleflight.Group
	serverKey atomic.Pointer[[]byte] // loaded on first need (nil: not yet)
}

// NewService returns a Service; now may be nil for the system clock.
func NewService(s Storer, now clock.Clock) *Service {
	now = clock.Or(now)
	return &Service{store: s, ids: ids.NewGenerator(now), now: now}
}

// New is what an admin supplies.
type New struct {
	Name      string
	Role      authz.Role
	ExpiresAt time.Time // zero: until revoked
}

// Actor is the user id a key acts as: "apiKey:<id>".
func Actor(keyID string) string { return authz.KeyActorPrefix + keyID }

// ParseToken reads a bearer token that names a key: its org, its id and
// the hash of the whole token, which the key's stored hash must equal; ok
// is false for any other token (a JWT) and err says why a token with the
// key prefix is refused: malformed, or a MAC that is not the server key's
// (a token the service never minted), like a key that does not exist. The
// IDs are validated before they reach a key; nothing is read but the
// server key, once in the process's life.
func (s *Service) ParseToken(ctx context.Context, token string) (k authz.APIKey, ok bool, err error) {
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok {
		return k, false, nil
	}
	parts := strings.SplitN(rest, "_", 3)
	var secret []byte
	if len(parts) == 3 && ids.ValidResource(parts[0]) && ids.ValidResource(parts[1]) {
		secret, _ = base64.RawURLEncoding.Strict().DecodeString(parts[2])
	}
	if len(secret) != secretBytes {
		return k, true, errs.E(errs.Unauthenticated, "invalid_token", "malformed API key")
	}
	key, err := s.loadServerKey(ctx)
	if err != nil {
		return k, true, err
	}
	if !hmac.Equal(secret[randomBytes:], mac(key, parts[0], parts[1], secret[:randomBytes])) {
		return k, true, authz.ErrKeyRevoked
	}
	return authz.APIKey{OrgID: parts[0], ID: parts[1], Hash: sha256.Sum256([]byte(token))}, true, nil
}

// mac is the MAC of a secret's random part for key keyID of orgID. The IDs
// are ULIDs (no "|") and random has a fixed length: the input is one
// reading of one triple.
func mac(serverKey []byte, orgID, keyID string, random []byte) []byte {
	h := hmac.New(sha256.New, serverKey)
	h.Write([]byte(orgID + "|" + keyID + "|"))
	h.Write(random)
	return h.Sum(nil)[:macBytes]
}

// serverKeyLoad bounds the one load of the server key that every request
// needing it meanwhile shares.
const serverKeyLoad = 10 * time.Second

// loadServerKey is the server key, read (or made) on first need and kept
// for the process's life; a failed load is tried again on the next need.
// Requests that need it while it loads share that one load, each waiting
// no longer than its own context: none waits for another's retry, and a
// caller that goes away cancels no one's load.
func (s *Service) loadServerKey(ctx context.Context) ([]byte, error) {
	if k := s.serverKey.Load(); k != nil {
		return *k, nil
	}
	loaded := s.loads.DoChan("", func() (any, error) {
		if k := s.serverKey.Load(); k != nil { // a load that ended since
			return *k, nil
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), serverKeyLoad)
		defer cancel()
		fresh := make([]byte, serverKeyBytes)
		rand.Read(fresh) // never fails (Go 1.24)
		k, err := s.store.ServerKey(ctx, fresh)
		if err == nil {
			s.serverKey.Store(&k)
		}
		return k, err
	})
	select {
	case r := <-loaded:
		k, _ := r.Val.([]byte)
		return k, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// newToken is a fresh token for key keyID of orgID and its hash.
func (s *Service) newToken(ctx context.Context, orgID, keyID string) (string, [sha256.Size]byte, error) {
	key, err := s.loadServerKey(ctx)
	if err != nil {
		return "", [sha256.Size]byte{}, err
	}
	b := make([]byte, randomBytes, secretBytes)
	rand.Read(b) // never fails (Go 1.24)
	t := tokenPrefix + orgID + "_" + keyID + "_" + base64.RawURLEncoding.EncodeToString(append(b, mac(key, orgID, keyID, b)...))
	return t, sha256.Sum256([]byte(t)), nil
}

// authorize decides what only an admin or owner who is a person may do.
func authorize(p authz.Principal) (authz.Grant, error) {
	if p.Key != nil {
		return authz.Grant{}, ErrNotAllowed
	}
	return authz.Permit(p, authz.APIKeyManage, authz.Facts{})
}

// CreateApiKey mints a key (an admin or owner, never a key) and returns it
// with its token, the only time the token exists outside its bearer. Its
// role is admin or member: never owner, so never above the minter's.
func (s *Service) CreateApiKey(ctx context.Context, p authz.Principal, in New) (Key, string, error) {
	g, err := authorize(p)
	if err != nil {
		return Key{}, "", err
	}
	if err := validate.Name("name", in.Name, MaxNameLen); err != nil {
		return Key{}, "", err
	}
	if in.Role != authz.Admin && in.Role != authz.Member {
		return Key{}, "", errs.InvalidField("role", "invalid_role", "an API key's role is admin or member")
	}
	now := s.now()
	if !in.ExpiresAt.IsZero() && (!in.ExpiresAt.After(now) || in.ExpiresAt.Sub(now) > MaxLife) {
		return Key{}, "", errs.InvalidField("expiresAt", "invalid_expiry", "must be in the future, within %d days", int(MaxLife.Hours()/24))
	}
	k := Key{OrgID: p.OrgID, ID: s.ids.New(), Name: in.Name, Role: in.Role, CreatedAt: now, CreatedBy: p.UserID, ExpiresAt: in.ExpiresAt.UTC()}
	token, hash, err := s.newToken(ctx, k.OrgID, k.ID)
	if err != nil {
		return Key{}, "", err
	}
	k.Hash = hash
	var expires any
	if !k.ExpiresAt.IsZero() {
		expires = k.ExpiresAt
	}
	ev := audit.NewEvent(ctx, s.ids, audit.By(p, g), "apikey.create", "apikey", k.ID, now,
		audit.Diff(audit.F("name", nil, k.Name), audit.F("role", nil, string(k.Role)), audit.F("expiresAt", nil, expires)))
	if err := s.store.CreateApiKey(ctx, k, ev); err != nil {
		return Key{}, "", err
	}
	return k, token, nil
}

// ListApiKeys pages through the org's keys (an admin or owner, never a
// key).
func (s *Service) ListApiKeys(ctx context.Context, p authz.Principal, pr page.Request) (page.Result[Key], error) {
	if _, err := authorize(p); err != nil {
		return page.Result[Key]{}, err
	}
	return s.store.ListApiKeys(ctx, p.OrgID, pr)
}

// GetApiKey returns one of the org's keys (an admin or owner, never a key;
// loaded: as the authorization read loaded it; nil: read it).
func (s *Service) GetApiKey(ctx context.Context, p authz.Principal, keyID string, loaded *Key) (Key, error) {
	if _, err := authorize(p); err != nil {
		return Key{}, err
	}
	if loaded != nil {
		return *loaded, nil
	}
	return s.store.GetApiKey(ctx, p.OrgID, keyID)
}

// RevokeApiKey deletes one of the org's keys (an admin or owner, never a
// key; loaded: as the authorization read loaded it; nil: read it): its
// next request, on any replica, is refused.
func (s *Service) RevokeApiKey(ctx context.Context, p authz.Principal, keyID string, loaded *Key) error {
	g, err := authorize(p)
	if err != nil {
		return err
	}
	k, err := s.GetApiKey(ctx, p, keyID, loaded)
	if err != nil {
		return err
	}
	ev := audit.NewEvent(ctx, s.ids, audit.By(p, g), "apikey.revoke", "apikey", keyID, s.now(),
		audit.Diff(audit.F("name", k.Name, nil), audit.F("role", string(k.Role), nil)))
	return s.store.RevokeApiKey(ctx, p.OrgID, keyID, ev)
}

// Recent is one replica's memory of the keys it verified lately. It
// records their use (LastUsedAt) off the request path: at most one write
// per key per TouchEvery from each replica (the store's conditional write
// makes it one in all), at most touchWrites at once, and a use that finds
// them all busy is not recorded (the next one will be); an idle service
// writes nothing.
type Recent struct {
	store   Recorder
	writes  chan struct{}
	mu      sync.Mutex
	written map[string]time.Time // by org/key: when this replica last wrote its use
	gone    map[string]bool      // by org/key: keys its authorization read found revoked or expired
}

// Recorder writes a key's use.
type Recorder interface {
	// TouchApiKey sets the key's LastUsedAt to at, unless it is within
	// TouchEvery of it already; a revoked key is no error.
	TouchApiKey(ctx context.Context, orgID, keyID string, at time.Time) error
}

// Bounds of Recent.
const (
	touchWrites  = 8
	touchTimeout = 5 * time.Second
	maxRecent    = 10_000
)

// NewRecent returns a Recent over s.
func NewRecent(s Recorder) *Recent {
	return &Recent{store: s, writes: make(chan struct{}, touchWrites), written: map[string]time.Time{}, gone: map[string]bool{}}
}

// Gone reports whether this replica's authorization read found k's key
// revoked or expired. That is final (a key's id is never minted again), so
// its token is then refused before any read or rate limit: a bearer of a
// revoked token spends neither DynamoDB nor its org's keys' budget.
func (r *Recent) Gone(k authz.APIKey) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gone[k.OrgID+"/"+k.ID]
}

// Refused records that the read found k's key revoked or expired (at most
// maxRecent keys; past it, any is forgotten and costs one read again).
func (r *Recent) Refused(k authz.APIKey) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	trim(r.gone)
	r.gone[k.OrgID+"/"+k.ID] = true
}

// Verified records, in the background, that k (as the authorization read
// found it) was used at now, if that is news.
func (r *Recent) Verified(k Key, now time.Time) {
	if r == nil {
		return
	}
	id := k.OrgID + "/" + k.ID
	r.mu.Lock()
	touch := now.Sub(k.LastUsedAt) >= TouchEvery && now.Sub(r.written[id]) >= TouchEvery
	if touch {
		select {
		case r.writes <- struct{}{}:
			r.remember(id, now)
		default: // every write slot busy: the next use records it
			touch = false
		}
	}
	r.mu.Unlock()
	if !touch {
		return
	}
	go func() {
		defer func() { <-r.writes }()
		ctx, cancel := context.WithTimeout(context.Background(), touchTimeout)
		defer cancel()
		_ = r.store.TouchApiKey(ctx, k.OrgID, k.ID, now) // best effort: a failure is tried again a minute later
	}()
}

// remember notes that id's use was written at now, forgetting (past
// maxRecent keys) those written over TouchEvery ago, then any.
func (r *Recent) remember(id string, now time.Time) {
	if _, ok := r.written[id]; !ok && len(r.written) >= maxRecent {
		for old, at := range r.written {
			if now.Sub(at) >= TouchEvery {
				delete(r.written, old)
			}
		}
		trim(r.written)
	}
	r.written[id] = now
}

// trim forgets any entries of m (map order is random) until one more
// fits under maxRecent.
func trim[V any](m map[string]V) {
	for id := range m {
		if len(m) < maxRecent {
			break
		}
		delete(m, id)
	}
}
