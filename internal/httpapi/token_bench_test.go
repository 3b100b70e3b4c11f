package httpapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tenantd/tenantd/internal/httpapi"
)

// Benchmarks of the authentication and authorization path, without any
// database: the RoleReader answers from memory. Run with
// `go test -run '^$' -bench . -benchmem ./internal/authz/`.

const tokenBenchSecret = "tenantd-authz-bench-secret-0123456789abcdef"

const benchOrg = "01HZX3J6Q8W9E2R4T6Y8V0K2M4" // a canonical ULID (AuthorizeOrg checks it)

func benchToken(b *testing.B) string {
	b.Helper()
	now := time.Now()
	tok, err := httpapi.MintHS256(tokenBenchSecret, httpapi.Claims{Email: "ada@example.com", Name: "Ada",
		RegisteredClaims: jwt.RegisteredClaims{Subject: "u_ada", IssuedAt: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}})
	if err != nil {
		b.Fatal(err)
	}
	return tok
}

func benchVerifier(b *testing.B) *httpapi.Verifier {
	b.Helper()
	v, err := httpapi.NewVerifier(context.Background(), httpapi.VerifierConfig{HS256Secret: tokenBenchSecret, Leeway: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// BenchmarkJWTVerifyHS256 is Verifier.Verify of a valid HS256 token: the
// same token again (cached: what a client's every request after its first
// costs) and with the verified-token cache emptied before each call
// (uncached: parse, HMAC, claims). The pair is the cache's row in
// BENCHMARKS.md; TestTokenCachePaysRent is its guard.
func BenchmarkJWTVerifyHS256(b *testing.B) {
	v, tok := benchVerifier(b), benchToken(b)
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Verify(tok); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("uncached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v.ForgetTokens()
			if _, err := v.Verify(tok); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestTokenCachePaysRent holds the verified-token cache to its reason to
// exist: a cached token costs fewer allocations than verifying it again
// (allocation counts, not timings: the test does not depend on the
// machine's speed).
func TestTokenCachePaysRent(t *testing.T) {
	v, err := httpapi.NewVerifier(context.Background(), httpapi.VerifierConfig{HS256Secret: tokenBenchSecret, Leeway: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok, err := httpapi.MintHS256(tokenBenchSecret, httpapi.Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: "u_ada",
		ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}})
	if err != nil {
		t.Fatal(err)
	}
	verify := func() {
		if _, err := v.Verify(tok); err != nil {
			t.Fatal(err)
		}
	}
	cached := testing.AllocsPerRun(50, verify)
	uncached := testing.AllocsPerRun(50, func() { v.ForgetTokens(); verify() })
	if cached >= uncached {
		t.Errorf("a cached token: %v allocations, verified again: %v: the cache gains nothing", cached, uncached)
	}
}

// BenchmarkJWTMintHS256 is MintHS256 (dev tokens, the bench's callers).
func BenchmarkJWTMintHS256(b *testing.B) {
	c := httpapi.Claims{Email: "ada@example.com", RegisteredClaims: jwt.RegisteredClaims{Subject: "u_ada",
		ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := httpapi.MintHS256(tokenBenchSecret, c); err != nil {
			b.Fatal(err)
		}
	}
}
