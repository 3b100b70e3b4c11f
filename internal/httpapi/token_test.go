package httpapi_test

// The JWT negative corpus, against a server in JWKS mode (RS256
// keys, issuer and audience required) and the HS256 test server.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tenantd/tenantd/internal/httpapi"
)

// jwksServer serves a JWKS with one RS256 key and counts its hits.
type jwksServer struct {
	srv  *httptest.Server
	key  *rsa.PrivateKey
	kid  string
	hits atomic.Int64
}

func newJWKS(t *testing.T) *jwksServer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	j := &jwksServer{key: key, kid: "tenantd-test-key-1"}
	b64 := base64.RawURLEncoding.EncodeToString
	body, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": j.kid, "use": "sig", "alg": "RS256",
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
	}}})
	j.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		j.hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(j.srv.Close)
	return j
}

// signToken signs claims with method and key, setting the header fields given.
func signToken(t *testing.T, method jwt.SigningMethod, key any, claims jwt.Claims, header map[string]any) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	for k, v := range header {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("sign %s: %v", method.Alg(), err)
	}
	return s
}

// TestJWT sends every token of the negative corpus to a server
// that verifies RS256 tokens from a JWKS (with iss and aud required), on
// routes inside and outside an org: each is a 401 problem+json with a
// Bearer WWW-Authenticate challenge and code invalid_token, and no DynamoDB
// call is made. A valid token works (so the refusals are not an accident of
// setup), the JWKS is never fetched from a URL a token names, and a header
// of a megabyte of dots gets what the real server does.
func TestJWT(t *testing.T) {
	const iss, aud = "https://issuer.test/", "tenantd-api"
	jwks := newJWKS(t)
	rr := &reqRecorder{}
	ts := MustServer(t, withAPIOptions(rr.Middleware),
		withVerifier(httpapi.VerifierConfig{JWKSURL: jwks.srv.URL, Issuer: iss, Audience: aud, Leeway: 30 * time.Second, JWKSRefetchGap: 100 * time.Millisecond}))
	now := ts.Clock.Now()
	claims := func(mod func(c *httpapi.Claims)) httpapi.Claims {
		c := httpapi.Claims{Email: "mallory@example.com", Name: "Mallory", RegisteredClaims: jwt.RegisteredClaims{
			Subject: "mallory", Issuer: iss, Audience: jwt.ClaimStrings{aud},
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}}
		if mod != nil {
			mod(&c)
		}
		return c
	}
	kid := map[string]any{"kid": jwks.kid}
	rs256 := func(mod func(c *httpapi.Claims)) string {
		return signToken(t, jwt.SigningMethodRS256, jwks.key, claims(mod), kid)
	}
	valid := rs256(nil)

	// A server that records whether a token made anyone fetch a URL.
	var lured atomic.Int64
	lure := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { lured.Add(1) }))
	defer lure.Close()

	attacker, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&jwks.key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	pkcs1PEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&jwks.key.PublicKey)})
	b64 := base64.RawURLEncoding.EncodeToString
	unsigned := func(alg string) string {
		h, _ := json.Marshal(map[string]any{"alg": alg, "typ": "JWT", "kid": jwks.kid})
		p, _ := json.Marshal(claims(nil))
		return b64(h) + "." + b64(p) + "."
	}
	withHeader := func(tok string, mod func(h map[string]any)) string { // re-signs nothing: the signature no longer matches
		parts := strings.Split(tok, ".")
		raw, _ := base64.RawURLEncoding.DecodeString(parts[0])
		var h map[string]any
		_ = json.Unmarshal(raw, &h)
		mod(h)
		b, _ := json.Marshal(h)
		parts[0] = b64(b)
		return strings.Join(parts, ".")
	}
	b := func(n *big.Int) string { return b64(n.Bytes()) }
	corpus := map[string]string{
		"alg none":                        unsigned("none"),
		"alg None":                        unsigned("None"),
		"alg NONE":                        unsigned("NONE"),
		"alg none with signature":         unsigned("none") + strings.Split(valid, ".")[2],
		"alg none via jwt library":        signToken(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, claims(nil), kid),
		"HS256 with the PEM public key":   signToken(t, jwt.SigningMethodHS256, pubPEM, claims(nil), kid),
		"HS256 with the PKCS1 public key": signToken(t, jwt.SigningMethodHS256, pkcs1PEM, claims(nil), kid),
		"HS256 with the DER public key":   signToken(t, jwt.SigningMethodHS256, pubDER, claims(nil), kid),
		"HS256 with the modulus":          signToken(t, jwt.SigningMethodHS256, jwks.key.N.Bytes(), claims(nil), kid),
		"HS256 with the JWK n":            signToken(t, jwt.SigningMethodHS256, []byte(b(jwks.key.N)), claims(nil), kid),
		"HS256 without kid":               signToken(t, jwt.SigningMethodHS256, pubPEM, claims(nil), nil),
		"HS256 with the harness secret":   signToken(t, jwt.SigningMethodHS256, []byte(testSecret), claims(nil), kid),
		"unknown kid":                     signToken(t, jwt.SigningMethodRS256, attacker, claims(nil), map[string]any{"kid": "attacker-key"}),
		"known kid, another key":          signToken(t, jwt.SigningMethodRS256, attacker, claims(nil), kid),
		"no kid, another key":             signToken(t, jwt.SigningMethodRS256, attacker, claims(nil), nil),
		"kid path traversal":              signToken(t, jwt.SigningMethodRS256, attacker, claims(nil), map[string]any{"kid": "../../../../dev/null"}),
		"kid SQL":                         signToken(t, jwt.SigningMethodRS256, attacker, claims(nil), map[string]any{"kid": "' OR 1=1 --"}),
		"ES256 with the RSA kid":          signToken(t, jwt.SigningMethodES256, ecKey, claims(nil), kid),
		"PS256 with another key":          signToken(t, jwt.SigningMethodPS256, attacker, claims(nil), kid),
		"embedded jwk of the attacker": signToken(t, jwt.SigningMethodRS256, attacker, claims(nil), map[string]any{"jwk": map[string]string{
			"kty": "RSA", "kid": "attacker", "n": b(attacker.N), "e": b64(big.NewInt(int64(attacker.E)).Bytes())}}),
		"jku to the attacker": signToken(t, jwt.SigningMethodRS256, attacker, claims(nil), map[string]any{"kid": "attacker", "jku": lure.URL + "/jwks.json"}),
		"x5u to the attacker": signToken(t, jwt.SigningMethodRS256, attacker, claims(nil), map[string]any{"kid": "attacker", "x5u": lure.URL + "/cert.pem"}),
		"expired": rs256(func(c *httpapi.Claims) {
			c.IssuedAt, c.ExpiresAt = jwt.NewNumericDate(now.Add(-2*time.Hour)), jwt.NewNumericDate(now.Add(-time.Hour))
		}),
		"expired beyond the leeway":  rs256(func(c *httpapi.Claims) { c.ExpiresAt = jwt.NewNumericDate(now.Add(-31 * time.Second)) }),
		"not yet valid (nbf)":        rs256(func(c *httpapi.Claims) { c.NotBefore = jwt.NewNumericDate(now.Add(10 * time.Minute)) }),
		"issued in the future":       rs256(func(c *httpapi.Claims) { c.IssuedAt = jwt.NewNumericDate(now.Add(10 * time.Minute)) }),
		"missing exp":                rs256(func(c *httpapi.Claims) { c.ExpiresAt = nil }),
		"wrong iss":                  rs256(func(c *httpapi.Claims) { c.Issuer = "https://evil.test/" }),
		"iss with a suffix":          rs256(func(c *httpapi.Claims) { c.Issuer = iss + "evil" }),
		"missing iss":                rs256(func(c *httpapi.Claims) { c.Issuer = "" }),
		"wrong aud":                  rs256(func(c *httpapi.Claims) { c.Audience = jwt.ClaimStrings{"another-api"} }),
		"missing aud":                rs256(func(c *httpapi.Claims) { c.Audience = nil }),
		"aud prefix":                 rs256(func(c *httpapi.Claims) { c.Audience = jwt.ClaimStrings{aud[:5]} }),
		"sub with the key delimiter": rs256(func(c *httpapi.Claims) { c.Subject = "a#USER#b" }),
		"sub empty":                  rs256(func(c *httpapi.Claims) { c.Subject = "" }),
		"sub 129 characters":         rs256(func(c *httpapi.Claims) { c.Subject = strings.Repeat("s", 129) }),
		"sub with unicode":           rs256(func(c *httpapi.Claims) { c.Subject = "m\u0430llory" }),
		"tampered payload": func() string {
			parts := strings.Split(valid, ".")
			p, _ := json.Marshal(claims(func(c *httpapi.Claims) { c.Subject = "admin" }))
			parts[1] = b64(p)
			return strings.Join(parts, ".")
		}(),
		"tampered signature":    valid[:len(valid)-2] + map[bool]string{true: "AA", false: "BB"}[!strings.HasSuffix(valid, "AA")],
		"signature dropped":     strings.Join(strings.Split(valid, ".")[:2], ".") + ".",
		"header alg swapped":    withHeader(valid, func(h map[string]any) { h["alg"] = "HS256" }),
		"garbage":               "garbage",
		"three dots":            "...",
		"two parts":             strings.Join(strings.Split(valid, ".")[:2], "."),
		"four parts":            valid + ".extra",
		"base64 std padding":    strings.ReplaceAll(valid, "-", "+") + "==",
		"8 KiB + 1 of junk":     "a." + strings.Repeat("b", 8<<10) + ".c",
		"JSON instead of a JWT": `{"alg":"none","sub":"admin"}`,
	}

	headers := map[string]string{}
	for name, tok := range corpus {
		headers[name] = "Bearer " + tok
	}
	headers["no scheme"] = valid
	headers["Basic scheme"] = "Basic " + valid
	headers["Bearer twice"] = "Bearer Bearer " + valid
	headers["empty"] = ""
	headers["Bearer only"] = "Bearer"
	headers["token then junk"] = "Bearer " + valid + " junk"

	org := "01ARZ3NDEKTSV4RRFFQ69G5FAV"
	routes := []struct{ method, path, body string }{
		{http.MethodGet, "/v1/me", ""},
		{http.MethodGet, "/v1/orgs/" + org, ""},
		{http.MethodPost, "/v1/orgs/" + org + "/tickets", `{"title":"x"}`},
		{http.MethodPost, "/v1/orgs", `{"name":"x"}`},
	}
	var jobs []reqJob
	for name, h := range headers {
		for _, rt := range routes {
			what := name + ": " + rt.method + " " + rt.path
			hdr := http.Header{}
			if h != "" {
				hdr.Set("Authorization", h)
			}
			jobs = append(jobs, reqJob{what: what, method: rt.method, url: ts.URL + rt.path, header: hdr, body: rt.body,
				check: func(t *testing.T, r apiResp, ops []string) { want401(t, what, r, ops) }})
		}
	}
	runJobs(t, rr, 8, jobs)
	if n := lured.Load(); n != 0 {
		t.Errorf("a token's jku/x5u made the server fetch %d URL(s)", n)
	}

	t.Run("valid token works", func(t *testing.T) {
		for _, tok := range []string{valid, rs256(func(c *httpapi.Claims) { c.Audience = jwt.ClaimStrings{"other", aud} })} {
			r := doReq(t, &http.Client{}, http.MethodGet, ts.URL+"/v1/me", tok, nil, "")
			if r.Status != http.StatusOK {
				t.Errorf("a valid RS256 token: status %d: %s", r.Status, r.Body)
			}
		}
	})
	t.Run("crit header with an unknown extension", func(t *testing.T) {
		// RFC 7515 4.1.11: a recipient that does not understand an
		// extension listed in "crit" MUST reject the JWS, even when its
		// signature is good. tenantd understands none.
		id := newRequestID()
		tok := signToken(t, jwt.SigningMethodRS256, jwks.key, claims(nil), map[string]any{"kid": jwks.kid, "crit": []string{"x-unknown"}, "x-unknown": true})
		r := doReq(t, &http.Client{}, http.MethodGet, ts.URL+"/v1/me", tok, http.Header{"X-Request-Id": {id}}, "")
		want401(t, "crit [x-unknown]", r, rr.Of(id))
	})
	t.Run("HS256 server refuses RS256 and unsigned tokens", func(t *testing.T) {
		hs := MustServer(t)
		for name, tok := range map[string]string{"RS256": valid, "alg none": corpus["alg none"], "HS256 with the public key": corpus["HS256 with the PEM public key"],
			"HS512 with the secret": signToken(t, jwt.SigningMethodHS512, []byte(testSecret), claims(nil), nil),
			"HS256 with sub twice (the last would win)": func() string {
				h := b64([]byte(`{"alg":"HS256","typ":"JWT"}`))
				now := hs.Clock.Now().Unix()
				p := b64([]byte(fmt.Sprintf(`{"sub":"j1","sub":"admin","iat":%d,"exp":%d}`, now, now+3600)))
				return h + "." + p + "." + b64(hmacSHA256([]byte(testSecret), h+"."+p))
			}(),
			"HS256 with an empty secret": func() string {
				// golang-jwt refuses to sign with an empty key; forge it by hand.
				h, _ := json.Marshal(map[string]string{"alg": "HS256", "typ": "JWT"})
				p, _ := json.Marshal(claims(nil))
				return b64(h) + "." + b64(p) + "." + b64(hmacSHA256(nil, b64(h)+"."+b64(p)))
			}(),
		} {
			hs.Rec.Reset()
			r := doReq(t, &http.Client{}, http.MethodGet, hs.URL+"/v1/me", tok, nil, "")
			want401(t, name, r, nil)
			if n := hs.Rec.Count(); n != 0 {
				t.Errorf("%s: %d DynamoDB calls", name, n)
			}
		}
	})

	// A megabyte of dots in the header: net/http's default limit (1 MiB
	// of header, plus 4 KiB of slack) lets it through to the server, which
	// refuses the token unread (over authz.MaxTokenLen) with the usual 401.
	// cmd/api serves with MaxHeaderBytes of 64 KiB: there net/http itself
	// answers 431 before any handler runs (a plain-text answer, no
	// problem+json: nothing of tenantd runs, so nothing can be called).
	dots := "Bearer " + strings.Repeat(".", 1<<20)
	t.Run("a megabyte of dots, default header limit", func(t *testing.T) {
		id := newRequestID()
		r := doReq(t, &http.Client{}, http.MethodGet, ts.URL+"/v1/orgs/"+org, "", http.Header{"Authorization": {dots}, "X-Request-Id": {id}}, "")
		want401(t, "1 MiB of dots", r, rr.Of(id))
	})
	t.Run("a megabyte of dots, cmd/api's header limit", func(t *testing.T) {
		prod := MustServer(t, withMaxHeaderBytes(64<<10))
		prod.Rec.Reset()
		r, err := rawRequest(prod.URL, "GET /v1/orgs/"+org+" HTTP/1.1\r\nHost: x\r\nAuthorization: "+dots+"\r\nConnection: close\r\n\r\n")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(r, "HTTP/1.1 431 ") {
			t.Errorf("status line %q, want 431", strings.SplitN(r, "\r\n", 2)[0])
		}
		if n := prod.Rec.Count(); n != 0 {
			t.Errorf("%d DynamoDB calls", n)
		}
		// Just under the limit, the token is refused by tenantd itself.
		under := doReq(t, &http.Client{}, http.MethodGet, prod.URL+"/v1/me", "", http.Header{"Authorization": {"Bearer " + strings.Repeat(".", 60<<10)}}, "")
		want401(t, "60 KiB of dots", under, nil)
	})
}

// want401 asserts the one answer to every bad token.
func want401(t *testing.T, what string, r apiResp, ops []string) {
	t.Helper()
	if r.Status != http.StatusUnauthorized {
		t.Errorf("%s: status %d, want 401: %s", what, r.Status, truncate(r.Body))
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, problemJSON) {
		t.Errorf("%s: content type %q", what, ct)
	}
	if got := r.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer ") || !strings.Contains(got, `error="invalid_token"`) {
		t.Errorf("%s: WWW-Authenticate %q", what, got)
	}
	if code := problemCode(r.Body); code != "invalid_token" {
		t.Errorf("%s: code %q, want invalid_token", what, code)
	}
	if !r.Close {
		t.Errorf("%s: the connection is kept; want Connection: close (a client without a valid token keeps no connection slot)", what)
	}
	if len(ops) != 0 {
		t.Errorf("%s: DynamoDB calls %v, want none", what, ops)
	}
}

// rawRequest writes raw to the server at base and returns what it
// answers, up to the connection's end.
func rawRequest(base, raw string) (string, error) {
	addr := strings.TrimPrefix(base, "http://")
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	// Write while reading: a server that refuses a request early answers
	// while the rest of it is still being sent.
	go func() { _, _ = c.Write([]byte(raw)) }()
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if sb.Len() == 0 {
		return "", fmt.Errorf("no answer from %s", addr)
	}
	return sb.String(), nil
}

// hmacSHA256 is HMAC-SHA256 of msg under key.
func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// TestJWTNumericDates: RFC 7519 makes exp, nbf and iat
// NumericDates, JSON numbers. A token giving any of them as a string
// ("exp":"9999999999", which golang-jwt would read as a number), or as
// anything else that is not a number, is a 401, signed with the HS256
// secret or by the JWKS key alike; the same claims as numbers are accepted.
func TestJWTNumericDates(t *testing.T) {
	const iss, aud = "https://issuer.test/", "tenantd-api"
	jwks := newJWKS(t)
	hs := MustServer(t)
	rs := MustServer(t, withVerifier(httpapi.VerifierConfig{JWKSURL: jwks.srv.URL, Issuer: iss, Audience: aud, Leeway: 30 * time.Second, JWKSRefetchGap: 100 * time.Millisecond}))
	now := hs.Clock.Now().Unix()
	claims := func(mod map[string]any) jwt.MapClaims {
		c := jwt.MapClaims{"sub": "mallory", "email": "mallory@example.com", "iss": iss, "aud": aud,
			"iat": now, "exp": now + 3600}
		for k, v := range mod {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	bad := map[string]map[string]any{
		"exp as a string":                 {"exp": "9999999999"},
		"exp as a string, in range":       {"exp": fmt.Sprint(now + 3600)},
		"exp as a string with a fraction": {"exp": fmt.Sprint(now+3600) + ".5"},
		"nbf as a string":                 {"nbf": fmt.Sprint(now - 60)},
		"iat as a string":                 {"iat": fmt.Sprint(now)},
		"exp as a boolean":                {"exp": true},
		"exp as an array":                 {"exp": []int64{now + 3600}},
		"exp as an object":                {"exp": map[string]int64{"n": now + 3600}},
		"exp null":                        {"exp": json.RawMessage("null")},
		"nbf null":                        {"nbf": json.RawMessage("null")},
	}
	good := map[string]map[string]any{
		"numbers":           nil,
		"nbf a number":      {"nbf": now - 60},
		"exp with fraction": {"exp": float64(now+3600) + 0.5},
		"no iat":            {"iat": nil},
	}
	for name, mod := range bad {
		for server, tok := range map[string]string{
			"HS256": signToken(t, jwt.SigningMethodHS256, []byte(testSecret), claims(mod), nil),
			"JWKS":  signToken(t, jwt.SigningMethodRS256, jwks.key, claims(mod), map[string]any{"kid": jwks.kid}),
		} {
			ts := map[string]*testServer{"HS256": hs, "JWKS": rs}[server]
			ts.Rec.Reset()
			r := doReq(t, &http.Client{}, http.MethodGet, ts.URL+"/v1/me", tok, nil, "")
			want401(t, server+": "+name, r, nil)
			if n := ts.Rec.Count(); n != 0 {
				t.Errorf("%s: %s: %d DynamoDB calls", server, name, n)
			}
		}
	}
	for name, mod := range good {
		for server, tok := range map[string]string{
			"HS256": signToken(t, jwt.SigningMethodHS256, []byte(testSecret), claims(mod), nil),
			"JWKS":  signToken(t, jwt.SigningMethodRS256, jwks.key, claims(mod), map[string]any{"kid": jwks.kid}),
		} {
			ts := map[string]*testServer{"HS256": hs, "JWKS": rs}[server]
			if r := doReq(t, &http.Client{}, http.MethodGet, ts.URL+"/v1/me", tok, nil, ""); r.Status != http.StatusOK {
				t.Errorf("%s: %s: status %d, want 200: %s", server, name, r.Status, r.Body)
			}
		}
	}
}

// TestVerifiedTokenCache: a token that verified is remembered until its
// exp and never after it; the cache holds at most MaxCachedTokens; a token
// that does not verify is never kept.
func TestVerifiedTokenCache(t *testing.T) {
	const secret = "cache-test-secret-0123456789abcdef"
	now := time.Unix(2_000_000_000, 0)
	clock := func() time.Time { return now }
	v, err := httpapi.NewVerifier(bg, httpapi.VerifierConfig{HS256Secret: secret, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	mint := func(sub string, exp time.Time) string {
		tok, err := httpapi.MintHS256(secret, httpapi.Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: sub,
			IssuedAt: jwt.NewNumericDate(now.Add(-time.Minute)), ExpiresAt: jwt.NewNumericDate(exp)}})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	tok := mint("u_cached", now.Add(time.Minute))
	for range 3 {
		if id, err := v.Verify(tok); err != nil || id.UserID != "u_cached" {
			t.Fatalf("Verify: %+v, %v", id, err)
		}
	}
	if n := v.CachedTokens(); n != 1 {
		t.Errorf("cached tokens: %d, want 1", n)
	}
	t.Run("ErrExpiredWhileCached", func(t *testing.T) {
		saved := now
		defer func() { now = saved }()
		now = now.Add(time.Minute) // exp: no longer valid, cached or not
		if _, err := v.Verify(tok); err == nil {
			t.Error("a cached token was accepted at its exp")
		}
	})
	t.Run("TrustedAtMostMaxCacheAge", func(t *testing.T) {
		long := mint("u_long", now.Add(24*time.Hour))
		if _, err := v.Verify(long); err != nil {
			t.Fatal(err)
		}
		until, ok := v.CachedUntil(long)
		if want := now.Add(httpapi.MaxCacheAge); !ok || !until.Equal(want) {
			t.Errorf("a token valid for a day is cached until %v (%v), want %v: a removed JWKS key would admit it all day", until, ok, want)
		}
		if until, _ := v.CachedUntil(tok); !until.Equal(now.Add(time.Minute)) {
			t.Errorf("a token with exp in a minute is cached until %v, want its exp", until)
		}
	})
	t.Run("ErrBadTokensNotKept", func(t *testing.T) {
		before := v.CachedTokens()
		bad := tok[:len(tok)-2] + "xx"
		for range 10 {
			if _, err := v.Verify(bad); err == nil {
				t.Fatal("a token with a bad signature verified")
			}
		}
		if _, err := v.Verify(mint("u_expired", now.Add(-time.Second))); err == nil {
			t.Fatal("an expired token verified")
		}
		if n := v.CachedTokens(); n != before {
			t.Errorf("cached tokens: %d after bad tokens, want %d", n, before)
		}
	})
	t.Run("Bounded", func(t *testing.T) {
		for i := range httpapi.MaxCachedTokens + 100 {
			if _, err := v.Verify(mint(fmt.Sprintf("u_%d", i), now.Add(time.Hour))); err != nil {
				t.Fatal(err)
			}
		}
		if n := v.CachedTokens(); n > httpapi.MaxCachedTokens {
			t.Errorf("cached tokens: %d, want at most %d", n, httpapi.MaxCachedTokens)
		}
	})
}
