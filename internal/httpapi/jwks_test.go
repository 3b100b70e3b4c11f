package httpapi_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tenantd/tenantd/internal/httpapi"
)

// rotatingJWKS is an identity provider's JWKS endpoint the test rotates:
// it serves the keys last published and counts its fetches.
type rotatingJWKS struct {
	srv     *httptest.Server
	mu      sync.Mutex
	body    []byte
	fetches atomic.Int64
	hang    chan struct{} // when set, a fetch waits for it to close
}

func newRotatingJWKS(t *testing.T) *rotatingJWKS {
	t.Helper()
	j := &rotatingJWKS{}
	j.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		j.fetches.Add(1)
		j.mu.Lock()
		body, hang := j.body, j.hang
		j.mu.Unlock()
		if hang != nil {
			<-hang
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(j.srv.Close)
	return j
}

// publish makes the JWKS serve exactly these keys (by kid).
func (j *rotatingJWKS) publish(keys map[string]*rsa.PrivateKey) {
	b64 := base64.RawURLEncoding.EncodeToString
	var set []map[string]string
	for kid, k := range keys {
		set = append(set, map[string]string{"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
			"n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())})
	}
	body, _ := json.Marshal(map[string]any{"keys": set})
	j.mu.Lock()
	j.body = body
	j.mu.Unlock()
}

// TestJWKSRotation: a key the identity provider publishes is accepted
// within a refetch gap of its publication, whatever unauthenticated
// clients sent before (a token with an unknown kid refused at once because
// the keys were fetched moments ago is accepted when sent again a gap
// later), two rotations in a row included; a flood of tokens with random
// kids makes at most one JWKS fetch per refetch gap (plus one), however
// many tokens it sends; and while the keys are fresh, a token with an
// unknown kid is refused without waiting for the identity provider, even
// one that hangs.
func TestJWKSRotation(t *testing.T) {
	t.Parallel() // mostly waits: see TestMain

	const gap = 300 * time.Millisecond // the default, JWKSMinRefetch, makes this test slower
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	idp := newRotatingJWKS(t)
	keys := map[string]*rsa.PrivateKey{}
	for _, kid := range []string{"k1", "k2", "k3", "k4", "stray"} {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		keys[kid] = k
	}
	idp.publish(map[string]*rsa.PrivateKey{"k1": keys["k1"]})
	v, err := httpapi.NewVerifier(ctx, httpapi.VerifierConfig{JWKSURL: idp.srv.URL, JWKSRefetchGap: gap})
	if err != nil {
		t.Fatal(err)
	}
	// Each token is new (its own jti): RS256 signatures are deterministic,
	// and two tokens of one kid in the same second would otherwise be one
	// token, whose earlier verification the token cache remembers.
	var minted atomic.Int64
	token := func(kid string, signer *rsa.PrivateKey) string {
		c := httpapi.Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: "u_" + kid, ID: fmt.Sprint(minted.Add(1)), IssuedAt: jwt.NewNumericDate(time.Now()),
			ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}}
		return signToken(t, jwt.SigningMethodRS256, signer, c, map[string]any{"kid": kid})
	}
	// accepted sends a token of kid until it is accepted: a gap after the
	// fetch that refused it, the next one starts a fetch of its own (or
	// finds one started since, after the publication).
	accepted := func(t *testing.T, what, kid string) {
		t.Helper()
		for try := 1; ; try++ {
			id, err := v.Verify(token(kid, keys[kid]))
			if err == nil && id.UserID == "u_"+kid {
				return
			}
			if try == 10 {
				t.Fatalf("%s: 10 tokens of the published key %s, a gap apart, all refused: %v (user %q)", what, kid, err, id.UserID)
			}
			time.Sleep(gap)
		}
	}
	accepted(t, "before any rotation", "k1")

	t.Run("a stray unknown kid, then two rotations", func(t *testing.T) {
		if _, err := v.Verify(token("stray", keys["stray"])); err == nil {
			t.Fatal("a token of an unpublished key was accepted")
		}
		idp.publish(map[string]*rsa.PrivateKey{"k1": keys["k1"], "k2": keys["k2"]})
		accepted(t, "first rotation right after a stray token", "k2")
		idp.publish(map[string]*rsa.PrivateKey{"k2": keys["k2"], "k3": keys["k3"]})
		accepted(t, "second rotation right after the first", "k3")
		if _, err := v.Verify(token("k1", keys["k1"])); err == nil {
			// k1's tokens verified before are cached (MaxCacheAge); a new one is not.
			t.Error("a new token of the key the provider removed was accepted")
		}
	})

	t.Run("a flood of random kids", func(t *testing.T) {
		before := idp.fetches.Load()
		start := time.Now()
		var wg sync.WaitGroup
		for g := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 5 {
					if _, err := v.Verify(token(fmt.Sprintf("random-%d-%d", g, i), keys["stray"])); err == nil {
						t.Error("a token with a random kid was accepted")
					}
				}
			}()
		}
		// A rotation in the middle of the flood is accepted all the same.
		idp.publish(map[string]*rsa.PrivateKey{"k3": keys["k3"], "k4": keys["k4"]})
		accepted(t, "a rotation during the flood", "k4")
		wg.Wait()
		elapsed := time.Since(start)
		fetches := idp.fetches.Load() - before
		limit := 2 + int64(elapsed/gap)
		t.Logf("200 random kids and one rotation in %v: %d JWKS fetches (limit %d)", elapsed, fetches, limit)
		if fetches > limit {
			t.Errorf("%d JWKS fetches in %v, want at most %d", fetches, elapsed, limit)
		}
	})

	t.Run("unknown kids refused at once while the keys are fresh, the provider hung", func(t *testing.T) {
		hung := newRotatingJWKS(t)
		hung.publish(map[string]*rsa.PrivateKey{"k1": keys["k1"]})
		v, err := httpapi.NewVerifier(ctx, httpapi.VerifierConfig{JWKSURL: hung.srv.URL, JWKSRefetchGap: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		hung.mu.Lock()
		hung.hang = release // from now on the provider answers nothing until released
		hung.mu.Unlock()
		defer close(release)
		before := hung.fetches.Load()
		done := make(chan error, 40)
		for g := range 40 {
			go func() {
				_, err := v.Verify(token(fmt.Sprintf("unknown-%d", g), keys["stray"]))
				done <- err
			}()
		}
		for range 40 {
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("a token with an unknown kid was accepted")
				}
			case <-time.After(30 * time.Second): // a bound for a hang, not a speed
				t.Fatal("tokens with an unknown kid wait on a hung identity provider although the keys were fetched moments ago")
			}
		}
		if n := hung.fetches.Load() - before; n != 0 {
			t.Errorf("40 unknown kids within the gap of the last fetch made %d fetches, want none", n)
		}
	})
}
