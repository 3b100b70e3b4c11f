package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/tenantd/tenantd/internal/export"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
)

// deadlineWriter records what an export sends and the write deadlines it
// sets (http.ResponseController finds SetWriteDeadline and Flush on it).
type deadlineWriter struct {
	header    http.Header
	body      bytes.Buffer
	deadlines []time.Time
	flushes   int
}

func (w *deadlineWriter) Header() http.Header         { return w.header }
func (w *deadlineWriter) WriteHeader(int)             {}
func (w *deadlineWriter) Write(b []byte) (int, error) { return w.body.Write(b) }
func (w *deadlineWriter) Flush()                      { w.flushes++ }
func (w *deadlineWriter) SetWriteDeadline(t time.Time) error {
	w.deadlines = append(w.deadlines, t)
	return nil
}

// TestExportSinkWriteDeadline: WRITE_TIMEOUT bounds each write of an
// export, not the export: every flush of the lines read so far gets a
// deadline of its own, so a client that stops reading loses its
// connection that long after its last read, however long the export
// has run.
func TestExportSinkWriteDeadline(t *testing.T) {
	w := &deadlineWriter{header: http.Header{}}
	h := &handlers{Deps: Deps{WriteTimeout: 30 * time.Second, RequestTimeout: time.Minute},
		cursors: page.Cursors{Key: bytes.Repeat([]byte("k"), 32), TTL: time.Hour, Now: time.Now}}
	s := &exportSink{h: h, orgID: "01KJPWD6MCDF8S0BJ38Y33G3QW", decided: time.Now(), w: w, rc: http.NewResponseController(w), progress: time.AfterFunc(time.Hour, func() {})}
	defer s.progress.Stop()
	org := tenant.Org{ID: s.orgID, Name: "Deadlines"}
	for round := 1; round <= 3; round++ {
		if err := s.Write(export.Record{Type: export.TypeOrg, Value: org, After: export.Position{Phase: 1, Audit: time.Now()}}); err != nil {
			t.Fatal(err)
		}
		if w.body.Len() != 0 || len(w.deadlines) != round-1 {
			t.Fatalf("round %d: %d bytes sent and %d deadlines before the next read", round, w.body.Len(), len(w.deadlines))
		}
		before := time.Now()
		if err := s.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(w.deadlines) != round || w.flushes != round || !bytes.HasPrefix(w.body.Bytes(), []byte(`{"type":"org","createdAt"`)) {
			t.Fatalf("round %d: %d deadlines, %d flushes, sent %q", round, len(w.deadlines), w.flushes, w.body.Bytes())
		}
		if d := w.deadlines[round-1]; d.Before(before.Add(h.WriteTimeout)) {
			t.Errorf("round %d: deadline %v, want WRITE_TIMEOUT from the flush (%v on)", round, d, before.Add(h.WriteTimeout))
		}
		w.body.Reset()
	}
	// Nothing to send: no write, no deadline.
	if err := s.Read(context.Background()); err != nil || len(w.deadlines) != 3 {
		t.Errorf("an empty read: %v, %d deadlines", err, len(w.deadlines))
	}
}
