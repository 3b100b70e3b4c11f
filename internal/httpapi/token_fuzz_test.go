package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tenantd/tenantd/internal/httpapi"
	"github.com/tenantd/tenantd/internal/ids"
)

const fuzzSecret = "fuzz-secret-0123456789abcdef-0123456789"

// FuzzVerify feeds arbitrary strings to the token verifier: it must never
// panic, and anything it accepts must name a valid user.
func FuzzVerify(f *testing.F) {
	v, err := httpapi.NewVerifier(context.Background(), httpapi.VerifierConfig{HS256Secret: fuzzSecret})
	if err != nil {
		f.Fatal(err)
	}
	good, _ := httpapi.MintHS256(fuzzSecret, httpapi.Claims{RegisteredClaims: jwt.RegisteredClaims{
		Subject: "u_ada", ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}})
	f.Add(good)
	f.Add("")
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.")
	f.Add(strings.Repeat(".", 100))
	f.Fuzz(func(t *testing.T, token string) {
		id, err := v.Verify(token)
		if err == nil && !ids.ValidUser(id.UserID) {
			t.Errorf("accepted a token with sub %q", id.UserID)
		}
	})
}
