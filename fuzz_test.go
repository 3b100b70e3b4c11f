package tenantd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/tenantd/tenantd/client"
)

// FuzzRequestValidation sends arbitrary bodies to createTicket's request
// validation, the gate every request body passes: it must never panic, and
// whatever it accepts must decode strictly (no unknown field) into the
// request type within the spec's limits.
func FuzzRequestValidation(f *testing.F) {
	doc := loadSpec(f)
	doc.Servers = nil // route by path, as the server does (any host)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(`{"title":"Printer on fire","priority":"urgent","tags":["hw"]}`)
	f.Add(`{"title":"x","requesterId":"u_mallory"}`)
	f.Add(`{"title":"x","tags":["a","a"]}`)
	f.Add(`{"title":"` + "\u0000" + `"}`)
	f.Add(`[]`)
	f.Add(`{"title":{"$gt":""}}`)
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest("POST", "/v1/orgs/01J9Z3V7Q8X2K4M6N8P0R2T4W6/tickets", bytes.NewBufferString(body))
		req.Header.Set("Content-Type", "application/json")
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Fatal(err)
		}
		err = openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		})
		if err != nil {
			return
		}
		dec := json.NewDecoder(bytes.NewBufferString(body))
		dec.DisallowUnknownFields()
		var in client.TicketCreate
		if err := dec.Decode(&in); err != nil {
			t.Fatalf("validation accepted %q, which does not decode strictly: %v", body, err)
		}
		if n := utf8.RuneCountInString(in.Title); n < 1 || n > 200 {
			t.Errorf("validation accepted a title of %d characters", n)
		}
		if in.Tags != nil && len(*in.Tags) > 20 {
			t.Errorf("validation accepted %d tags", len(*in.Tags))
		}
	})
}
