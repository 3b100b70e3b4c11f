package main

// The API killed during DELETE /v1/orgs/{id} of an org
// with 150 members must not leave a zombie: no member keeps access, and the
// offboarding finishes by itself, without the owner repeating the DELETE.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/store/storetest"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/testkit"
)

func TestOffboardSurvivesAKilledAPI(t *testing.T) {
	bin := testkit.APIBinary(t)
	table := newTable(t)
	env := []string{"DELETION_LEASE=2s", "DELETION_POLL=200ms", "OFFBOARD_WAIT=10s", "OFFBOARD_GRACE=0s"}
	api := startAPI(t, bin, table, env...)
	db := store.Open(store.NewClient(dynamotest.Config(t), store.Options{Endpoint: dynamotest.Endpoint()}), table)
	ctx := context.Background()
	for i, killAfter := range []time.Duration{30 * time.Millisecond, 80 * time.Millisecond, 150 * time.Millisecond} {
		owner := fmt.Sprintf("killed.owner.%d", i)
		ownerTok := mintToken(t, owner)
		status, b := callAPI(t, http.MethodPost, api.base+"/v1/orgs", ownerTok, `{"name":"Killed while offboarded"}`)
		if status != http.StatusCreated {
			t.Fatalf("create org: %d %s", status, b)
		}
		var created struct{ ID string }
		if err := json.Unmarshal(b, &created); err != nil {
			t.Fatal(err)
		}
		// 150 members (through the store, for speed), a team and tickets.
		var members []string
		for j := range 150 {
			u := fmt.Sprintf("killed.%d.member.%d", i, j)
			members = append(members, u)
			now := time.Now()
			ev := audit.NewEvent(ctx, ids.NewGenerator(nil), audit.Outsider(created.ID, owner), "user.add", "user", u, now, nil)
			if err := (&store.Orgs{DB: db}).AddOrgUser(ctx, tenant.User{OrgID: created.ID, UserID: u, Email: u + "@example.com", Name: u,
				Role: authz.Member, JoinedAt: now, UpdatedAt: now, Version: 1}, ev); err != nil {
				t.Fatal(err)
			}
		}
		for j := range 5 {
			status, b := callAPI(t, http.MethodPost, api.base+"/v1/orgs/"+created.ID+"/tickets", mintToken(t, members[j]), `{"title":"before the kill"}`)
			if status != http.StatusCreated {
				t.Fatalf("ticket: %d %s", status, b)
			}
		}

		// The DELETE, and the API killed while it runs.
		done := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodDelete, api.base+"/v1/orgs/"+created.ID, nil)
			req.Header.Set("Authorization", "Bearer "+ownerTok)
			resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		time.Sleep(killAfter)
		_ = api.cmd.Process.Signal(syscall.SIGKILL)
		<-api.exited
		got := <-done
		t.Logf("killed %v into the DELETE (it answered %d; 0 = no answer)", killAfter, got)
		api = startAPI(t, bin, table, env...)

		// Whatever the DELETE answered, if the org is marked no member has
		// access. (A kill before the mark committed leaves a live org: the
		// DELETE was never answered; the owner repeats it then.)
		org0, err := db.Client().GetItem(ctx, getOrg(table, created.ID))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case org0.Item == nil && got == http.StatusNoContent:
			t.Logf("the offboarding finished before the kill")
		case org0.Item == nil || org0.Item["deleting"] == nil:
			if got == http.StatusAccepted || got == http.StatusNoContent {
				t.Fatalf("the DELETE answered %d but the org is not being offboarded", got)
			}
			t.Logf("killed before the mark: the owner repeats the DELETE")
			if status, b := callAPI(t, http.MethodDelete, api.base+"/v1/orgs/"+created.ID, ownerTok, ""); status != http.StatusAccepted && status != http.StatusNoContent {
				t.Fatalf("repeated DELETE: %d %s", status, b)
			}
		}
		for _, u := range append([]string{owner}, members[:10]...) {
			tok := mintToken(t, u)
			for _, req := range []struct{ method, path, body string }{
				{http.MethodGet, "/v1/orgs/" + created.ID, ""},
				{http.MethodGet, "/v1/orgs/" + created.ID + "/tickets", ""},
				{http.MethodPost, "/v1/orgs/" + created.ID + "/tickets", `{"title":"after the kill"}`},
			} {
				if status, b := callAPI(t, req.method, api.base+req.path, tok, req.body); status != http.StatusNotFound {
					t.Errorf("%s %s by %s after the kill: %d %s, want 404", req.method, req.path, u, status, b)
				}
			}
		}
		// The offboarding finishes by itself: nobody repeats the DELETE.
		deadline := time.Now().Add(2 * time.Minute) // a bound for a hang, not a speed
		for {
			status, b := callAPI(t, http.MethodGet, api.base+"/v1/orgs/"+created.ID+"/offboarding", ownerTok, "")
			if status == http.StatusNotFound {
				break
			}
			if status != http.StatusOK || time.Now().After(deadline) {
				t.Fatalf("offboarding: %d %s", status, b)
			}
			time.Sleep(100 * time.Millisecond)
		}
		vs, err := storetest.CheckInvariants(ctx, db.Client(), table, storetest.CheckOptions{Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			t.Errorf("invariant: %s", v)
		}
		if out := api.stdout.String(); !strings.Contains(out, "deletion worker: resuming") && got != http.StatusNoContent {
			t.Logf("note: the restarted API's log does not show the worker resuming (the killed run may have finished first)")
		}
	}
}

// getOrg is a consistent GetItem of an org's item, read raw.
func getOrg(table, orgID string) *dynamodb.GetItemInput {
	return &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "ORG#" + orgID}, "sk": &types.AttributeValueMemberS{Value: "#METADATA"}}}
}
