package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/tenantd/tenantd/internal/access"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
)

// VerifierConfig says which bearer tokens are accepted.
type VerifierConfig struct {
	HS256Secret string        // shared secret (dev and tests)
	JWKSURL     string        // or a JWKS endpoint (RS256, ES256, EdDSA)
	Issuer      string        // required iss when set
	Audience    string        // required aud when set
	Leeway      time.Duration // clock skew tolerated on exp/nbf/iat
	Now         func() time.Time
	// JWKSRefetchGap is the least time between two JWKS fetches that
	// tokens with an unknown kid cause; 0 means JWKSMinRefetch.
	JWKSRefetchGap time.Duration
}

// Verifier checks bearer tokens and turns them into Identities.
type Verifier struct {
	parser  *jwt.Parser
	keyFunc jwt.Keyfunc
	now     func() time.Time
	// cache remembers tokens that verified (verifying one again is most of
	// what authentication costs), until their exp or MaxCacheAge: only
	// those, so a caller without a valid token cannot grow it.
	cache *lru.Cache[[sha256.Size]byte, cachedToken]
}

// MaxCacheAge bounds how long a verified token is trusted without being
// verified again, whatever its exp: a JWKS key removed because it leaked
// stops admitting its tokens after at most this long.
const MaxCacheAge = 5 * time.Minute

// MaxCachedTokens bounds the verified-token cache: at most this many
// entries of a SHA-256 and an Identity (well under 1 MiB), the least
// recently used evicted first.
const MaxCachedTokens = 4096

type cachedToken struct {
	id    authz.Identity
	until time.Time
}

// CachedTokens is how many verified tokens the cache holds.
func (v *Verifier) CachedTokens() int { return v.cache.Len() }

// Claims are the token claims tenantd reads.
type Claims struct {
	jwt.RegisteredClaims
	Email string `json:"email,omitempty"`
	// EmailVerified is OpenID Connect's email_verified: absent (nil) when
	// the identity provider does not say.
	EmailVerified *bool  `json:"email_verified,omitempty"`
	Name          string `json:"name,omitempty"`
}

// numericDateClaims are the claims RFC 7519 makes NumericDates.
var numericDateClaims = [...]string{"exp", "nbf", "iat"}

// UnmarshalJSON decodes the claims, refusing exp, nbf or iat that are not
// JSON numbers: golang-jwt's NumericDate also reads a quoted number
// ("exp":"9999999999"), which RFC 7519 does not allow, and null as absent.
func (c *Claims) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	for _, name := range numericDateClaims {
		v, ok := raw[name]
		if !ok {
			continue
		}
		if v = bytes.TrimSpace(v); len(v) == 0 || !(v[0] == '-' || v[0] >= '0' && v[0] <= '9') {
			return fmt.Errorf("claim %s is not a NumericDate (a JSON number)", name)
		}
	}
	type plain Claims // without this method
	return json.Unmarshal(b, (*plain)(c))
}

// NewVerifier builds a Verifier from exactly one of HS256Secret and
// JWKSURL; the accepted algorithms follow from it, never from the token.
func NewVerifier(ctx context.Context, cfg VerifierConfig) (*Verifier, error) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	opts := []jwt.ParserOption{jwt.WithExpirationRequired(), jwt.WithLeeway(cfg.Leeway), jwt.WithIssuedAt(), jwt.WithTimeFunc(now)}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	cache, err := lru.New[[sha256.Size]byte, cachedToken](MaxCachedTokens)
	if err != nil {
		return nil, err
	}
	v := &Verifier{now: now, cache: cache}
	switch {
	case cfg.HS256Secret != "" && cfg.JWKSURL != "":
		return nil, errors.New("auth: set either AUTH_HS256_SECRET or AUTH_JWKS_URL, not both")
	case cfg.HS256Secret != "":
		if len(cfg.HS256Secret) < 32 {
			return nil, errors.New("auth: AUTH_HS256_SECRET must be at least 32 bytes")
		}
		secret := []byte(cfg.HS256Secret)
		v.keyFunc = func(*jwt.Token) (any, error) { return secret, nil }
		opts = append(opts, jwt.WithValidMethods([]string{"HS256"}))
	case cfg.JWKSURL != "":
		gap := cfg.JWKSRefetchGap
		if gap <= 0 {
			gap = JWKSMinRefetch
		}
		k, err := keyfunc.New(keyfunc.Options{Ctx: ctx, Storage: newJWKS(ctx, cfg.JWKSURL, gap)})
		if err != nil {
			return nil, fmt.Errorf("auth: load JWKS: %w", err)
		}
		v.keyFunc = k.Keyfunc
		opts = append(opts, jwt.WithValidMethods([]string{"RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA"}))
	default:
		return nil, errors.New("auth: no authentication configured: set AUTH_HS256_SECRET (dev) or AUTH_JWKS_URL")
	}
	v.parser = jwt.NewParser(opts...)
	return v, nil
}

// errToken is the one answer to every bad token: callers learn nothing
// about which check failed.
var errToken = errs.E(errs.Unauthenticated, "invalid_token", "the bearer token is missing, malformed, expired or not for this service")

// MaxTokenLen bounds what is parsed at all.
const MaxTokenLen = 8 << 10

// Verify checks a raw token and returns the caller's identity.
func (v *Verifier) Verify(raw string) (authz.Identity, error) {
	if raw == "" || len(raw) > MaxTokenLen || strings.Count(raw, ".") != 2 {
		return authz.Identity{}, errToken
	}
	key := sha256.Sum256([]byte(raw))
	if e, ok := v.cache.Get(key); ok && v.now().Before(e.until) {
		return e.id, nil
	}
	id, exp, err := v.verify(raw)
	if err != nil {
		return authz.Identity{}, err
	}
	until := v.now().Add(MaxCacheAge)
	if exp.Before(until) {
		until = exp
	}
	v.cache.Add(key, cachedToken{id: id, until: until})
	return id, nil
}

// verify checks a raw token and returns the caller's identity and the
// token's exp (required: the parser refuses a token without one).
func (v *Verifier) verify(raw string) (authz.Identity, time.Time, error) {
	var c Claims
	tok, err := v.parser.ParseWithClaims(raw, &c, v.keyFunc)
	if err != nil {
		return authz.Identity{}, time.Time{}, &errs.Error{Kind: errs.Unauthenticated, Code: errToken.Code, Message: errToken.Message, Err: err}
	}
	if _, ok := tok.Header["crit"]; ok {
		// RFC 7515 4.1.11: extensions we do not understand must be refused,
		// and we understand none.
		return authz.Identity{}, time.Time{}, &errs.Error{Kind: errs.Unauthenticated, Code: errToken.Code, Message: errToken.Message,
			Err: errors.New("crit header")}
	}
	// A verified token whose header or claims name a key twice is refused:
	// the last value would win here, and another reader (a gateway, a log)
	// could take the first (the request bodies' rule, strictJSON).
	for _, part := range strings.SplitN(raw, ".", 3)[:2] {
		b, err := base64.RawURLEncoding.DecodeString(part)
		if err == nil {
			err = checkJSON(b)
		}
		if err != nil {
			return authz.Identity{}, time.Time{}, &errs.Error{Kind: errs.Unauthenticated, Code: errToken.Code, Message: errToken.Message,
				Err: fmt.Errorf("token segment: %w", err)}
		}
	}
	if !ids.ValidUser(c.Subject) {
		return authz.Identity{}, time.Time{}, &errs.Error{Kind: errs.Unauthenticated, Code: errToken.Code, Message: errToken.Message,
			Err: errors.New("sub is not a valid user ID")}
	}
	return authz.Identity{UserID: c.Subject, Email: c.Email, EmailUnverified: c.EmailVerified != nil && !*c.EmailVerified, Name: c.Name}, c.ExpiresAt.Time, nil
}

// MintHS256 signs a token for dev use and tests.
func MintHS256(secret string, c Claims) (string, error) {
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(secret))
}

type identityKey struct{}

// WithIdentity stores the caller's identity in ctx.
func WithIdentity(ctx context.Context, id authz.Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the identity stored by WithIdentity.
func IdentityFrom(ctx context.Context) (authz.Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(authz.Identity)
	return id, ok
}

// caller is the identity Authenticate stored; its absence is a wiring bug
// (a panic, which Recover answers with a 500).
func caller(ctx context.Context) authz.Identity {
	id, ok := IdentityFrom(ctx)
	if !ok {
		panic("httpapi: an authenticated operation ran without an identity")
	}
	return id
}

// decided is the request's decision (access.Decision): the principal, and
// what the authorization read loaded of the route's target (nothing when
// it names none). Its absence is a wiring bug, as caller's.
func decided(ctx context.Context) (authz.Principal, access.Found) {
	d, ok := access.Decided(ctx)
	if !ok {
		panic("httpapi: an org operation ran without AuthorizeOrg's decision")
	}
	return d.Principal, d.Found
}
