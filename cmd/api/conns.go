package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// connGuard keeps the connection slots (MAX_CONNECTIONS) for clients that
// use them. Under pressure (at least high connections open) it closes the
// connections that hold a slot without using it: keep-alive connections
// idle for idleGrace, and connections that have not begun a request within
// grace, and connections stalled on their client for grace: a request body
// still arriving (slowly) or an answer the client does not read (a write
// blocked). Without it, 1,024 sockets that each sent one unauthenticated
// GET and then idled, or trickled a body a byte a second, or never read
// their answers, locked every other client out for IDLE_TIMEOUT,
// READ_TIMEOUT or WRITE_TIMEOUT. A handler at work (waiting on DynamoDB)
// is not stalled on its client and is never reaped.
type connGuard struct {
	high      int           // pressure starts at this many open connections
	grace     time.Duration // a new connection's time to begin a request, under pressure
	idleGrace time.Duration // a keep-alive connection's time to begin its next one, under pressure

	mu    sync.Mutex
	conns map[net.Conn]connInfo
}

type connInfo struct {
	state http.ConnState
	since time.Time
	// bodySince is when the request began reading its body (zero: not
	// reading one).
	bodySince time.Time
}

func newConnGuard(maxConns int, grace, idleGrace time.Duration) *connGuard {
	return &connGuard{high: max(1, maxConns*3/4), grace: grace, idleGrace: idleGrace, conns: map[net.Conn]connInfo{}}
}

// track is the http.Server's ConnState hook.
func (g *connGuard) track(c net.Conn, s http.ConnState) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch s {
	case http.StateClosed, http.StateHijacked:
		delete(g.conns, c)
		return
	}
	now := time.Now()
	g.conns[c] = connInfo{state: s, since: now} // a new state: no body being read
	if s == http.StateNew && len(g.conns) >= g.high {
		g.reapLocked(now) // make room for the newcomer
	}
}

// reapLocked closes the connections idle for idleGrace, the new ones
// silent for grace and the active ones stalled on their client for grace.
// (Closing an idle keep-alive connection is what IDLE_TIMEOUT does anyway;
// a client reconnects when it needs to.)
func (g *connGuard) reapLocked(now time.Time) {
	for c, info := range g.conns {
		if (info.state == http.StateIdle && now.Sub(info.since) >= g.idleGrace) || (info.state == http.StateNew && now.Sub(info.since) >= g.grace) ||
			(info.state == http.StateActive && g.stalledLocked(c, info, now)) {
			delete(g.conns, c)
			_ = c.Close()
		}
	}
}

// stalledLocked: an active connection waits on its client, for grace or
// longer, to send its body or to read its answer.
func (g *connGuard) stalledLocked(c net.Conn, info connInfo, now time.Time) bool {
	if !info.bodySince.IsZero() && now.Sub(info.bodySince) >= g.grace {
		return true
	}
	if m, ok := c.(*meteredConn); ok {
		if since := m.writeSince.Load(); since != 0 && now.Sub(time.Unix(0, since)) >= g.grace {
			return true
		}
	}
	return false
}

// reading marks c as reading a request body (on) or done with it.
func (g *connGuard) reading(c net.Conn, on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if info, ok := g.conns[c]; ok {
		info.bodySince = time.Time{}
		if on {
			info.bodySince = time.Now()
		}
		g.conns[c] = info
	}
}

type connKey struct{}

// connContext is the http.Server's ConnContext: handlers find their
// connection.
func connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// bodies reads each request's body (up to limit bytes; the rest is left
// for the handler, whose body limit refuses it) before the handler runs,
// marking the connection as reading meanwhile: a body that trickles in is
// the client's stall, which the guard can tell from a handler at work.
func (g *connGuard) bodies(limit int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Context().Value(connKey{}).(net.Conn)
		if r.Body == nil || r.Body == http.NoBody || c == nil {
			next.ServeHTTP(w, r)
			return
		}
		read := func(body io.ReadCloser) io.Reader {
			g.reading(c, true)
			b, err := io.ReadAll(io.LimitReader(body, limit+1))
			g.reading(c, false)
			var rest io.Reader = body
			if err != nil {
				rest = errReader{err}
			}
			return io.MultiReader(bytes.NewReader(b), rest)
		}
		if strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
			// net/http sends 100 Continue on the body's first read: not
			// before the handler has checked what the head alone decides
			// (a token, the route, the length, the media type). On a copy of
			// the request: net/http, seeing its own body unread, closes the
			// connection after the answer instead of waiting for the body.
			body := r.Body
			r = r.WithContext(r.Context())
			r.Body = &readOnFirstUse{ReadCloser: body, read: read}
		} else {
			r.Body = readCloser{read(r.Body), r.Body}
		}
		next.ServeHTTP(w, r)
	})
}

// readOnFirstUse reads its body with read when it is first read.
type readOnFirstUse struct {
	io.ReadCloser
	read func(io.ReadCloser) io.Reader
	r    io.Reader
}

func (b *readOnFirstUse) Read(p []byte) (int, error) {
	if b.r == nil {
		b.r = b.read(b.ReadCloser)
	}
	return b.r.Read(p)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

type readCloser struct {
	io.Reader
	io.Closer
}

// meteredListener wraps each accepted connection in a meteredConn.
type meteredListener struct{ net.Listener }

func (l meteredListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &meteredConn{Conn: c}, nil
}

// meteredConn records since when a Write has been blocked (the client does
// not read its answer and the socket's buffers are full).
type meteredConn struct {
	net.Conn
	writeSince atomic.Int64 // unix nanoseconds; 0: no write in progress
}

func (c *meteredConn) Write(p []byte) (int, error) {
	c.writeSince.Store(time.Now().UnixNano())
	defer c.writeSince.Store(0)
	return c.Conn.Write(p)
}

// run reaps, under pressure, every tick until stop is closed.
func (g *connGuard) run(tick time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			g.mu.Lock()
			if len(g.conns) >= g.high {
				g.reapLocked(now)
			}
			g.mu.Unlock()
		}
	}
}
