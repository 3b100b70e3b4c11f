package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/dynamotest"
	"github.com/tenantd/tenantd/internal/store"
)

// TestStreamReader: the local stream reader dispatches every audit event
// the table's stream carries, and nothing else; a dispatch that fails
// (DynamoDB paused, the process about to die) is read again, by this
// reader or by the next process's, from the last checkpoint: no event is
// lost, and a restart does not start the stream over.
func TestStreamReader(t *testing.T) {
	f := MustFixture(t)
	if err := store.Migrate(context.Background(), f.raw, f.DB.TableName()); err != nil { // the stream on again
		t.Fatal(err)
	}
	streams := dynamodbstreams.NewFromConfig(dynamotest.Config(t), func(o *dynamodbstreams.Options) {
		o.BaseEndpoint = aws.String(dynamotest.Endpoint())
	})
	var mu sync.Mutex
	var got []string
	failing := false
	dispatch := func(_ context.Context, ev audit.Event, done func(error)) {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			done(errors.New("DynamoDB paused"))
			return
		}
		got = append(got, ev.ID+" "+ev.Action)
		done(nil)
	}
	readUntil := func(r interface {
		Once(context.Context) (int, error)
	}, want ...string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, _ = r.Once(context.Background())
			mu.Lock()
			done := true
			for _, w := range want {
				done = done && slices.Contains(got, w)
			}
			mu.Unlock()
			if done {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("events never dispatched: want %q, got %q", want, got)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	first := f.newOrg(t, "First", "u_first")
	r1 := f.DB.NewStreamReader(streams, dispatch, nil)
	readUntil(r1, firstEventOf(t, f, first.ID))

	// The dispatcher fails: the reader reads on, dispatches nothing, and
	// checkpoints nothing past the failure.
	mu.Lock()
	failing = true
	mu.Unlock()
	second := f.newOrg(t, "Second", "u_second")
	wantSecond := firstEventOf(t, f, second.ID)
	for range 5 {
		_, _ = r1.Once(context.Background())
	}
	// The process dies; the next one starts from the checkpoint.
	mu.Lock()
	failing = false
	got = nil
	mu.Unlock()
	r2 := f.DB.NewStreamReader(streams, dispatch, nil)
	readUntil(r2, wantSecond)
	// Idle: the reader reads on (its own checkpoint's record among what
	// it finds) and writes nothing.
	f.Rec.Reset()
	for range 20 {
		_, _ = r2.Once(context.Background())
		time.Sleep(20 * time.Millisecond)
	}
	if n := f.Rec.Count(); n > 0 {
		t.Errorf("an idle reader made %d DynamoDB calls (%s), want none: an idle service writes nothing", n, f.Rec.Names())
	}
	mu.Lock()
	defer mu.Unlock()
	if slices.Contains(got, firstEventOf(t, f, first.ID)) {
		t.Errorf("the restarted reader dispatched the first org's event again: it did not resume at the checkpoint (%q)", got)
	}
	for _, g := range got {
		if !strings.HasSuffix(g, " test.write") {
			t.Errorf("dispatched %q: not an audit event of the writes made", g)
		}
	}
}

// firstEventOf is the audit event the org's creation wrote ("<id>
// <action>", as the test's dispatcher records it).
func firstEventOf(t *testing.T, f *fixture, orgID string) string {
	t.Helper()
	for _, k := range f.keysWithPrefix(t, "ORG#"+orgID+"#AUDIT#") {
		return strings.TrimPrefix(k.SK, "EVENT#") + " test.write"
	}
	t.Fatalf("org %s has no audit event", orgID)
	return ""
}
